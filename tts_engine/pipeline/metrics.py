"""Metrics of scores against right/wrong labels that training (its logs), eval (its reports) and the solve summary
compute: one definition each. Balanced accuracy, AUROC, reliability (ECE) and the selective view (risk-coverage,
AURC)."""

from __future__ import annotations

from typing import Any

import numpy as np


def balanced_accuracy(scores: Any, labels: Any, threshold: float = 0.5) -> float | None:
    """Mean of the accept rate on right samples and the reject rate on wrong ones; a sample is accepted when
    its score >= threshold (the one rule of every balanced accuracy in the project: a score of exactly 0.5
    accepts). Scores and labels (True / 1 for right) as sequences, arrays or tensors; None when a class is
    missing."""
    scores, labels = _array(scores, np.float64), _array(labels, np.float64).astype(bool)
    if labels.all() or not labels.any():
        return None
    accepts = scores >= threshold
    return float((accepts[labels].mean() + (~accepts[~labels]).mean()) / 2)


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


def risk_coverage(scores: Any, labels: Any) -> dict[str, list[float]]:
    """The selective view of answers ranked by `scores` (most trusted first): for each coverage c = k/A (the k
    most trusted of A answers given), the risk (share of them wrong). Ties in score enter together."""
    scores, labels = _array(scores, np.float64), _array(labels, np.float64).astype(bool)
    if scores.size == 0:
        return {"coverage": [], "risk": []}
    order = np.argsort(-scores, kind="stable")
    wrong = np.cumsum(~labels[order])  # (A,)
    last_of_tie = np.append(scores[order][1:] != scores[order][:-1], True)  # a tie's members enter together
    given = np.arange(1, scores.size + 1)[last_of_tie]
    return {"coverage": (given / scores.size).tolist(), "risk": (wrong[last_of_tie] / given).tolist()}


def aurc(scores: Any, labels: Any) -> float | None:
    """Area under the risk-coverage curve: the mean risk over coverages 1/A, 2/A, ..., 1 (lower is better; the
    error rate when the scores say nothing, about error^2 / 2 when they rank perfectly). None with no answers."""
    scores, labels = _array(scores, np.float64), _array(labels, np.float64).astype(bool)
    if scores.size == 0:
        return None
    order = np.argsort(-scores, kind="stable")
    wrong = np.cumsum(~labels[order]).astype(np.float64)  # (A,)
    tie_end = np.searchsorted(-scores[order], -scores[order], side="right")  # ties count as one step
    given = tie_end.astype(np.float64)
    return float(np.mean(wrong[tie_end - 1] / given))


def answer_metrics(p_correct: Any, labels: Any, num_bins: int = 10) -> dict[str, Any]:
    """How well a probability that an answer is right tells right answers from wrong ones: ECE, AUROC, AURC, the
    share of wrong answers at p >= .9, the share of right answers below .5 (what `--abstain-below 0.5` would
    withhold) and the accuracy of the most trusted half."""
    p, right = _array(p_correct, np.float64), _array(labels, np.float64).astype(bool)
    wrong = ~right
    top_half = np.argsort(-p, kind="stable")[: max(1, p.size // 2)] if p.size else np.array([], dtype=np.int64)
    return {
        "answers": int(p.size),
        "accuracy": float(right.mean()) if p.size else None,
        "ece": reliability(p, right, num_bins)["ece"] if p.size else None,
        "auroc": auroc(p, right),
        "aurc": aurc(p, right),
        "wrong_at_90": float((p[wrong] >= 0.9).mean()) if wrong.any() else None,
        "right_below_50": float((p[right] < 0.5).mean()) if right.any() else None,
        "top_half_accuracy": float(right[top_half].mean()) if p.size else None,
    }


def _num(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _array(values: Any, dtype) -> np.ndarray:
    """A float array of a sequence, an array or a (possibly device, possibly grad-tracking) torch tensor."""
    if hasattr(values, "detach"):
        values = values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=dtype)
