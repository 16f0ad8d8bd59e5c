"""The end-of-run summary: accuracy of every strategy, tokens and time, as a printable table."""

from __future__ import annotations

from typing import Any, Sequence


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per strategy over the problems with a reference, plus mean tokens and total time."""
    graded = [r for r in records if r.get("reference") is not None]
    keys = list(records[0]["strategies"]) if records else []
    accuracy = (
        {k: sum(bool(r["strategies"][k]["correct"]) for r in graded) / len(graded) for k in keys} if graded else {}
    )
    samples = [s for r in records for s in r["samples"]]
    pass_at_1 = (
        sum(bool(s["correct"]) for r in graded for s in r["samples"]) / max(1, sum(len(r["samples"]) for r in graded))
        if graded
        else None
    )
    return {
        "problems": len(records),
        "graded": len(graded),
        "pass@1": pass_at_1,
        "accuracy": accuracy,
        "generated_tokens_per_problem": sum(r["compute"]["generated_tokens"] for r in records) / max(1, len(records)),
        "verifier_tokens_per_problem": sum(r["compute"]["verifier_tokens"] for r in records) / max(1, len(records)),
        "samples": len(samples),
        "time_s": sum(r.get("time_s", 0.0) for r in records),
        "verify_time_s": sum(r.get("verify_time_s", 0.0) for r in records),
        "judged_pairs": sum(r.get("judged_pairs", 0) for r in records),
        "grader": records[0].get("run", {}).get("grader", "rule") if records else "rule",
        "score_kinds": list(samples[0]["scores"]) if samples else [],
    }


def format_summary(summary: dict[str, Any]) -> str:
    """A plain-text table a terminal shows well."""
    lines = [f"problems: {summary['problems']} ({summary['graded']} with a reference), samples: {summary['samples']}"]
    if summary["accuracy"]:
        lines.append(f"{'aggregation':<34}{'accuracy':>10}")
        if summary["pass@1"] is not None:
            lines.append(f"{'pass@1 (mean over samples)':<34}{summary['pass@1']:>10.3f}")
        for key, acc in summary["accuracy"].items():
            lines.append(f"{key:<34}{acc:>10.3f}")
    else:
        lines.append("no reference answers: accuracy not computed")
    lines.append(
        f"generated tokens / problem: {summary['generated_tokens_per_problem']:.1f}, "
        f"verifier tokens / problem: {summary['verifier_tokens_per_problem']:.1f}, "
        f"time: {summary['time_s']:.1f} s" + _verify_share(summary)
    )
    lines += _kind_legend(summary.get("score_kinds", []))
    if summary["grader"] != "rule":
        lines.append(f"answer pairs sent to the judge: {summary['judged_pairs']}")
    return "\n".join(lines)


def _verify_share(summary: dict[str, Any]) -> str:
    """The verifier's share of the wall time, when the run timed its verifier."""
    if not summary["verify_time_s"] or not summary["time_s"]:
        return ""
    return f" ({100 * summary['verify_time_s'] / summary['time_s']:.0f}% of it verifying)"


def _kind_legend(kinds: Sequence[str]) -> list[str]:
    """What each score kind of the table means (the catalogue, `tts_engine.verifiers.score_kinds`)."""
    from .verifiers.registry import score_kinds

    catalogue = score_kinds()
    return [f"  {kind}: {catalogue[kind].meaning}" for kind in kinds if kind in catalogue]
