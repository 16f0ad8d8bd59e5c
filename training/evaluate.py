"""Evaluate a reasoner-verifier checkpoint: a thin wrapper over the path users run.

`Engine.solve` samples N solutions per problem (temperature 1, 96 tokens) and scores each with the unified
verifier (`verifier_yes_no`, `verifier_vocab`) and the free `likelihood`; the curve code (`tts curve`) then gives
the accuracy of majority / weighted / best-of-N voting with k samples (the expectation over k-subsets of the N)
and the verifier metrics (balanced accuracy at threshold 0.5, score >= 0.5 accepted; AUROC pooled and within
problem). The same numbers come from `tts solve --model DIR --n N --max-new-tokens 96 --out R.jsonl` followed by
`tts curve R.jsonl --out DIR`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from tts_engine.problems import Problem

MAX_NEW_TOKENS = 96
"""Token budget of a sample: every task solution fits (the longest level-5 solution is ~60 tokens)."""
SIZES = (4, 16, 64)
SCORES = {"yes_no": "verifier_yes_no", "vocab": "verifier_vocab", "likelihood": "likelihood"}
"""Report name -> score kind of the results format."""


def evaluate(
    model_dir: str | Path,
    problems: Sequence[Problem],
    n: int = 64,
    threads: int = 1,
    progress: bool = True,
    out: str | Path | None = None,
    num_subsets: int = 1000,
) -> dict[str, Any]:
    """All figures for one checkpoint: pass@1 (also per level), voting accuracy at N = 4, 16, 64, verifier metrics."""
    import torch

    from tts_engine.eval.curves import compute_curves
    from tts_engine.eval.table import table_from_records
    from tts_engine.eval.verifier_metrics import verifier_metrics
    from tts_engine.options import EngineOptions

    torch.set_num_threads(threads)
    engine = EngineOptions(model=str(model_dir), backend_options={"max_batch_rows": 512}).make_engine()
    records = engine.solve(
        list(problems), n=n, temperature=1.0, max_new_tokens=MAX_NEW_TOKENS, seed=0, out=out, progress=progress
    )
    table = table_from_records(records)
    curves = compute_curves(table, num_subsets=num_subsets, seed=0, label=Path(model_dir).name)
    return report_of(str(model_dir), table, curves, verifier_metrics(table))


def report_of(model: str, table, curves: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """The report's tables from a results table, its curves and its verifier metrics."""
    ks = curves["k"]
    at = {k: i for i, k in enumerate(ks) if k in SIZES}
    names = {"majority": "majority", "pass@k": "pass@N (oracle)"}
    for short, kind in SCORES.items():
        names[f"weighted:{kind}"] = f"weighted ({short})"
        names[f"best_of_n:{kind}"] = f"best-of-N ({short})"
    strategies = {
        label: {k: curves["strategies"][key]["accuracy"][i] for k, i in at.items()}
        for key, label in names.items()
        if key in curves["strategies"]
    }
    levels: dict[str, list[float]] = {}
    for fields, row in zip(table.fields, table.sample_correct):
        levels.setdefault(f"L{fields.get('level', '?')}", []).extend(row.tolist())
    return {
        "model": model,
        "problems": table.num_problems,
        "n": table.num_samples,
        "pass@1": curves["strategies"]["pass@k"]["accuracy"][0],
        "pass@1_by_level": {k: sum(v) / len(v) for k, v in sorted(levels.items())},
        "mean_tokens": float(table.num_tokens.mean()),
        "strategies": strategies,
        "verifier": {short: _verifier_row(metrics[kind]) for short, kind in SCORES.items() if kind in metrics},
    }


def _verifier_row(m: dict[str, Any]) -> dict[str, Any]:
    return {
        "balanced_acc": m["balanced_accuracy"],
        "auroc": m["auroc"],
        "auroc_within": m["auroc_within_problem"],
        "problems_with_both": m["problems_with_both"],
    }


def to_markdown(report: dict[str, Any]) -> str:
    """The two tables of one report."""
    # sizes are ints in a fresh report and strings after a JSON round trip
    strategies = {name: {int(n): v for n, v in row.items()} for name, row in report["strategies"].items()}
    sizes = sorted({n for row in strategies.values() for n in row})
    by_level = ", ".join(f"{k} {v:.2f}" for k, v in report["pass@1_by_level"].items())
    lines = [
        f"pass@1 = {report['pass@1']:.3f} ({by_level}); {report['problems']} problems x {report['n']} samples, T=1",
        "",
        "| strategy | " + " | ".join(f"N={n}" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for name, row in strategies.items():
        lines.append(f"| {name} | " + " | ".join(f"{row[n]:.3f}" for n in sizes) + " |")
    lines += ["", "| score | balanced acc (pooled) | AUROC (pooled) | AUROC (within) |", "|---|---|---|---|"]
    for score, m in report["verifier"].items():
        lines.append(f"| {score} | {_fmt(m['balanced_acc'])} | {_fmt(m['auroc'])} | {_fmt(m['auroc_within'])} |")
    return "\n".join(lines) + "\n"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def save_report(report: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, indent=2) + "\n")
