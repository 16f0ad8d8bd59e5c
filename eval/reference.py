"""Plain Python loops over problems and subsets, voting with the engine's own `vote_classes`.

The slow, obvious version of the per-problem accuracy in `voting.py`: tests compare the batched estimates
with it (over every subset, on small cases), and scripts/bench_curves.py times the two side by side.
"""

from __future__ import annotations

import numpy as np

from tts_engine.pipeline.aggregate import CURVE_AGGREGATIONS, aggregation_keys, vote_classes


def loop_vote_accuracy(
    class_ids: np.ndarray, class_correct: np.ndarray, scores: dict[str, np.ndarray], subsets: np.ndarray
) -> dict[str, np.ndarray]:
    """Same contract as voting.vote_accuracy, one subset at a time."""
    names = aggregation_keys(list(scores), CURVE_AGGREGATIONS)
    out = {name: np.zeros(class_ids.shape[0]) for name in names}
    for p in range(class_ids.shape[0]):
        for name, value in _problem_accuracy(class_ids[p], class_correct[p], scores, p, subsets[p]).items():
            out[name][p] = value
    return out


def _problem_accuracy(classes, correct, scores, p, subsets) -> dict[str, float]:
    hits: dict[str, int] = {}
    for subset in subsets:
        chosen = sorted(int(i) for i in subset)
        ids = [int(classes[i]) for i in chosen]
        for name in aggregation_keys(list(scores), CURVE_AGGREGATIONS):
            aggregation, _, kind = name.partition(":")
            kind = kind or None
            values = None if kind is None else [_score(scores[kind][p, i]) for i in chosen]
            winner = vote_classes(aggregation, ids, values).answer_class
            hits[name] = hits.get(name, 0) + int(winner >= 0 and bool(correct[winner]))
    return {name: count / len(subsets) for name, count in hits.items()}


def _score(value: float) -> float:
    return 0.0 if np.isnan(value) else float(value)
