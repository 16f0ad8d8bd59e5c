"""Verifier metrics that both training (its logs) and eval (its reports) compute: one definition each."""

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


def _array(values: Any, dtype) -> np.ndarray:
    """A float array of a sequence, an array or a (possibly device, possibly grad-tracking) torch tensor."""
    if hasattr(values, "detach"):
        values = values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=dtype)
