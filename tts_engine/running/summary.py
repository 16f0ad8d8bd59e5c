"""The end-of-run summary: accuracy of every strategy, tokens and time, as a printable table."""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from ..pipeline.aggregate import headline_vote
from ..pipeline.metrics import answer_metrics
from .results import record_status


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per strategy over the problems with a reference, plus mean tokens and total time. Problems that
    failed (prompt too long, rows that failed) count as not solved and are reported apart."""
    graded = [r for r in records if r.get("reference") is not None]
    solved = [r for r in graded if record_status(r) == "ok"]
    keys = list(dict.fromkeys(k for r in records if record_status(r) == "ok" for k in r["aggregations"]))
    accuracy = (
        {k: sum(bool(r["aggregations"].get(k, {}).get("correct")) for r in solved) / len(graded) for k in keys}
        if graded
        else {}
    )
    samples = [s for r in records for s in r["samples"]]
    headline = next((r["run"].get("headline_kind") for r in records if "run" in r), None)
    # pass@1: the mean over problems of each problem's share of right samples (a pooled mean over samples would
    # weigh the problems an adaptive strategy spent most samples on, the hardest, most)
    shares = [sum(bool(s["correct"]) for s in r["samples"]) / len(r["samples"]) for r in solved if r["samples"]]
    pass_at_1 = sum(shares) / len(graded) if graded else None
    return {
        "problems": len(records),
        "graded": len(graded),
        "pass@1": pass_at_1,
        "accuracy": accuracy,
        "failures": _failures(records),
        "generated_tokens_per_problem": sum(r["compute"]["generated_tokens"] for r in records) / max(1, len(records)),
        "verifier_tokens_per_problem": sum(r["compute"]["verifier_tokens"] for r in records) / max(1, len(records)),
        "samples": len(samples),
        "time_s": sum(r.get("time_s", 0.0) for r in records),
        "verify_time_s": sum(r.get("verify_time_s", 0.0) for r in records),
        "judged_pairs": sum(r.get("judged_pairs", 0) for r in records),
        "grader": records[0].get("run", {}).get("grader", "rule") if records else "rule",
        "score_kinds": list(samples[0]["scores"]) if samples else [],
        "headline_kind": headline,
        "trust": trust(records, headline),
    }


def trust(records: Sequence[dict[str, Any]], headline: str | None) -> dict[str, Any] | None:
    """Can the answers of the headline vote (weighted by `headline`, majority without) be trusted: where p_correct
    comes from, its ECE, AUROC and AURC over the graded problems, and with abstention the coverage and the accuracy
    of the answered. None for records written before p_correct existed."""
    key = headline_vote(headline)
    votes = [
        (r["aggregations"][key], r.get("reference") is not None)
        for r in records
        if record_status(r) == "ok" and "p_correct" in r.get("aggregations", {}).get(key, {})
    ]
    if not votes:
        return None
    graded = [v for v, has_reference in votes if has_reference]
    out: dict[str, Any] = {
        "vote": key,
        "calibration": next((r["run"].get("calibration") for r in records if "run" in r), None),
        **answer_metrics([v["p_correct"] for v in graded], [bool(v["correct"]) for v in graded]),
    }
    if any("abstained" in v for v, _ in votes):
        answered = [v for v, _ in votes if not v.get("abstained")]
        answered_graded = [v for v in graded if not v.get("abstained")]
        out["abstain_below"] = next((r["run"].get("abstain_below") for r in records if "run" in r), None)
        out["coverage"] = len(answered) / len(records)
        out["answered_accuracy"] = (
            sum(bool(v["correct"]) for v in answered_graded) / len(answered_graded) if answered_graded else None
        )
    return out


def format_trust(trust: dict[str, Any] | None) -> list[str]:
    """The trust lines of the summary (see `trust`)."""
    if not trust:
        return []
    out = [f"p_correct of {trust['vote']}: {trust['calibration']}"]
    if trust["auroc"] is not None or trust["ece"] is not None:
        out.append(
            f"  how well it tells right answers from wrong: ECE {_fmt(trust['ece'])}, AUROC {_fmt(trust['auroc'])}, "
            f"AURC {_fmt(trust['aurc'])}; wrong answers at p_correct >= .9: {_fmt(trust['wrong_at_90'])}"
        )
    if "coverage" in trust:
        out.append(
            f"  abstained below {trust['abstain_below']}: coverage {trust['coverage']:.3f} (share of problems "
            f"answered), accuracy of the answered {_fmt(trust['answered_accuracy'])}"
        )
    return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _failures(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How many problems ended in each failed status, and the longest prompt of those that did not fit."""
    counts = Counter(record_status(r) for r in records if record_status(r) != "ok")
    too_long = [r["failure"] for r in records if record_status(r) == "prompt_too_long" and r.get("failure")]
    out: dict[str, Any] = {"counts": dict(sorted(counts.items()))}
    if too_long:
        out["longest_prompt"] = max(f.get("num_tokens", 0) for f in too_long)
        out["max_model_len"] = too_long[0].get("max_model_len")
    return out


def format_failures(failures: dict[str, Any]) -> str | None:
    """One line on the problems that were not solved, or None when every problem was."""
    counts = failures.get("counts") or {}
    if not counts:
        return None
    parts = []
    for status, count in counts.items():
        if status == "prompt_too_long":
            parts.append(
                f"{count} prompts did not fit the model's context (longest {failures['longest_prompt']} tokens, "
                f"context {failures['max_model_len']})"
            )
        else:
            parts.append(f"{count} {status}")
    return f"not solved, counted as wrong: {'; '.join(parts)} (their results lines say why; rerun with --retry-failed)"


def format_summary(summary: dict[str, Any], *, every_row: bool = False, lines: Sequence[str] = ()) -> str:
    """A plain-text table a terminal shows well: the headline rows (pass@1, majority, the verifier's weighted and
    best-of-N, the likelihood baseline, the best confidence kind) and a verdict of what the verifier bought, or
    `every_row` (every aggregation over every score kind); then the strategy's own `lines`, tokens and time."""
    out = [f"problems: {summary['problems']} ({summary['graded']} with a reference), samples: {summary['samples']}"]
    failed = format_failures(summary.get("failures") or {})
    if failed:
        out.append(failed)
    accuracy = summary["accuracy"]
    shown = accuracy if every_row else headline_rows(accuracy, summary.get("headline_kind"))
    if accuracy:
        out.append(f"{'aggregation':<40}{'accuracy':>10}")
        if summary["pass@1"] is not None:
            out.append(f"{'pass@1 (mean over problems)':<40}{summary['pass@1']:>10.3f}")
        out += [f"{key:<40}{acc:>10.3f}" for key, acc in shown.items()]
        verdict = _verdict(accuracy, summary.get("headline_kind"))
        if verdict:
            out.append(verdict)
        if not every_row and len(shown) < len(accuracy):
            out.append(f"({len(accuracy) - len(shown)} more rows with --all)")
    else:
        out.append("no reference answers: accuracy not computed")
    out += format_trust(summary.get("trust"))
    out += list(lines)
    out.append(
        f"generated tokens / problem: {summary['generated_tokens_per_problem']:.1f}, "
        f"verifier tokens / problem: {summary['verifier_tokens_per_problem']:.1f}, "
        f"time: {summary['time_s']:.1f} s" + _verify_share(summary)
    )
    kinds = summary.get("score_kinds", [])
    out += _kind_legend(kinds if every_row else [k for k in kinds if any(key.endswith(f":{k}") for key in shown)])
    if summary["grader"] != "rule":
        out.append(f"answer pairs sent to the judge: {summary['judged_pairs']}")
    return "\n".join(out)


def headline_rows(accuracy: dict[str, float], headline: str | None) -> dict[str, float]:
    """The rows people read: majority, the headline kind's weighted and best-of-N votes, the likelihood baseline
    and the best of the confidence kinds' weighted votes (each where the run has it)."""
    keys = ["majority"]
    if headline:
        keys += [f"weighted:{headline}", f"best_of_n:{headline}"]
    keys.append("weighted:likelihood")
    confidence = [k for k in accuracy if k.startswith("weighted:conf_")]
    if confidence:
        keys.append(max(confidence, key=lambda k: accuracy[k]))
    return {k: accuracy[k] for k in keys if k in accuracy}


def _verdict(accuracy: dict[str, float], headline: str | None) -> str | None:
    """One line: what weighting the votes by the verifier bought over majority, and over the free baseline."""
    key = f"weighted:{headline}" if headline else None
    if key not in accuracy or "majority" not in accuracy:
        return None
    gain = accuracy[key] - accuracy["majority"]
    baseline = accuracy.get("weighted:likelihood")
    versus = f", {accuracy[key] - baseline:+.3f} over the likelihood baseline" if baseline is not None else ""
    return f"verdict: weighting votes by {headline} gives {gain:+.3f} accuracy over majority{versus}"


def _verify_share(summary: dict[str, Any]) -> str:
    """The verifier's share of the wall time, when the run timed its verifier."""
    if not summary["verify_time_s"] or not summary["time_s"]:
        return ""
    return f" ({100 * summary['verify_time_s'] / summary['time_s']:.0f}% of it verifying)"


def _kind_legend(kinds: Sequence[str]) -> list[str]:
    """What each score kind of the table means (the catalogue, `tts_engine.verifiers.score_kinds`)."""
    from ..verifiers.registry import score_kinds

    catalogue = score_kinds()
    return [f"  {kind}: {catalogue[kind].meaning}" for kind in kinds if kind in catalogue]
