"""How well each score kind tells right samples from wrong ones: accuracy per class, AUROC, calibration.

Labels are the samples' own `correct` flags (samples without one, or without that score, are left out).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tts_engine.pipeline.metrics import auroc, average_ranks, balanced_accuracy, reliability

from .table import ResultsTable

__all__ = ["auroc", "average_ranks", "balanced_accuracy", "reliability", "score_metrics", "verifier_metrics"]


def score_metrics(
    scores: np.ndarray, labels: np.ndarray, *, threshold: float = 0.5, num_bins: int = 10
) -> dict[str, Any]:
    """Metrics of one score kind over (P, N) scores and (P, N) labels (1/0, NaN unknown)."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    known = ~np.isnan(scores) & ~np.isnan(labels)  # (P, N)
    flat_scores, flat_labels = scores[known], labels[known].astype(bool)
    accepts = flat_scores >= threshold
    right_accepted = float(accepts[flat_labels].mean()) if flat_labels.any() else None
    wrong_rejected = float((~accepts[~flat_labels]).mean()) if (~flat_labels).any() else None
    per_problem = [auroc(scores[p][known[p]], labels[p][known[p]].astype(bool)) for p in range(scores.shape[0])]
    within = [value for value in per_problem if value is not None]
    return {
        "num_samples": int(known.sum()),
        "num_right": int(flat_labels.sum()),
        "threshold": threshold,
        "accuracy_on_right": right_accepted,
        "accuracy_on_wrong": wrong_rejected,
        "balanced_accuracy": balanced_accuracy(flat_scores, flat_labels, threshold),
        "auroc": auroc(flat_scores, flat_labels),
        "auroc_within_problem": float(np.mean(within)) if within else None,
        "problems_with_both": len(within),
        "calibration": reliability(flat_scores, flat_labels, num_bins),
    }


def verifier_metrics(table: ResultsTable, *, threshold: float = 0.5, num_bins: int = 10) -> dict[str, Any]:
    """Score kind -> score_metrics, for every score kind in the table."""
    return {
        kind: score_metrics(values, table.sample_correct, threshold=threshold, num_bins=num_bins)
        for kind, values in table.scores.items()
    }


def verifier_group_metrics(
    table: ResultsTable, *, threshold: float = 0.5, num_bins: int = 10
) -> dict[str, dict[str, dict[str, Any]]]:
    """Breakdown field -> value -> score kind -> score_metrics over that group's problems (level, subject, ...)."""
    return {
        field_name: {
            value: verifier_metrics(table.select(mask), threshold=threshold, num_bins=num_bins)
            for value, mask in groups.items()
        }
        for field_name, groups in table.group_masks().items()
    }
