"""Compute-vs-accuracy measurement: curves of every aggregation, efficiency ratio, verifier metrics, plots.

    from tts_engine.eval import load_results, compute_curves
    curves = compute_curves(load_results("runs/math500.jsonl"), num_subsets=1000)

Plots (matplotlib) and the `tts curve` / `tts bench` commands live in `plots` and `cli` and load only when
imported. docs/curves.md describes every number.
"""

from .curves import compute_curves, per_problem_accuracy
from .efficiency import efficiency_ratio, first_reach
from .pass_at_k import pass_at_k
from .table import ResultsTable, load_results, table_from_records
from .verifier_metrics import auroc, reliability, score_metrics, verifier_metrics

__all__ = [
    "ResultsTable",
    "auroc",
    "compute_curves",
    "efficiency_ratio",
    "first_reach",
    "load_results",
    "pass_at_k",
    "per_problem_accuracy",
    "reliability",
    "score_metrics",
    "table_from_records",
    "verifier_metrics",
]
