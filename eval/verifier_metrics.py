"""How well each score kind tells right samples from wrong ones: accuracy per class, AUROC, calibration.

Labels are the samples' own `correct` flags (samples without one, or without that score, are left out).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tts_engine.metrics import balanced_accuracy

from .table import ResultsTable


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of `values`, tied values sharing the mean of their ranks."""
    unique, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # rank of the last member of each group of equal values
    return (last - (counts - 1) / 2.0)[inverse]


def auroc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """P(score of a random right sample > that of a random wrong one), ties counting 1/2; None if a class is empty."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    num_right, num_wrong = int(labels.sum()), int((~labels).sum())
    if num_right == 0 or num_wrong == 0:
        return None
    rank_sum = average_ranks(scores)[labels].sum()
    return float((rank_sum - num_right * (num_right + 1) / 2.0) / (num_right * num_wrong))


def reliability(scores: np.ndarray, labels: np.ndarray, num_bins: int = 10) -> dict[str, Any]:
    """Equal-width bins over [0, 1]: count, mean score and fraction right per bin, and the ECE."""
    if num_bins < 1:
        raise ValueError(f"num_bins must be >= 1, got {num_bins}")
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    bins = np.clip((scores * num_bins).astype(np.int64), 0, num_bins - 1)  # (S,)
    count = np.bincount(bins, minlength=num_bins)
    score_sum = np.bincount(bins, weights=scores, minlength=num_bins)
    right_sum = np.bincount(bins, weights=labels, minlength=num_bins)
    filled = count > 0
    mean_score = np.where(filled, score_sum / np.maximum(count, 1), np.nan)
    fraction_right = np.where(filled, right_sum / np.maximum(count, 1), np.nan)
    gaps = np.abs(np.nan_to_num(fraction_right) - np.nan_to_num(mean_score))
    ece = float((count * gaps).sum() / count.sum()) if count.sum() else None
    edges = np.linspace(0.0, 1.0, num_bins + 1)
    return {
        "bins": [
            {
                "low": float(edges[b]),
                "high": float(edges[b + 1]),
                "count": int(count[b]),
                "mean_score": _num(mean_score[b]),
                "fraction_right": _num(fraction_right[b]),
            }
            for b in range(num_bins)
        ],
        "ece": ece,
    }


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


def _num(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
