"""Aggregation of the N scored samples of a problem: majority, weighted and best-of-N voting.

Answers are grouped into equivalence classes first ("1/2", "0.5" and "\\frac{1}{2}" are one class); samples
without an answer vote for nothing. Ties go to the larger count, then to the class seen first (the one whose
earliest sample comes first). Confidence = score of the winning class / total score of all classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

NO_ANSWER = -1


@dataclass
class Vote:
    """The outcome of one aggregation over one problem's samples."""

    answer: str | None
    """The winning answer (as first written by a sample of the winning class); None if no sample answered."""
    answer_class: int
    """Id of the winning class (-1 if no sample answered)."""
    confidence: float
    """Score of the winning class / total score of all classes (0 when there is no score at all)."""
    class_totals: list[float] = field(default_factory=list)
    """Score of every class, indexed by class id (for majority: its sample count)."""
    class_counts: list[int] = field(default_factory=list)
    """Samples in every class, indexed by class id."""


def _tally(class_ids: Sequence[int], weights: Sequence[float]):
    """Per-class totals, counts and first sample index over the samples with an answer."""
    num_classes = max(class_ids, default=NO_ANSWER) + 1
    totals, counts, first = [0.0] * num_classes, [0] * num_classes, [len(class_ids)] * num_classes
    for index, (c, w) in enumerate(zip(class_ids, weights)):
        if c == NO_ANSWER:
            continue
        totals[c] += float(w)
        counts[c] += 1
        first[c] = min(first[c], index)
    return totals, counts, first


def _pick_class(totals, counts, first) -> int:
    """Largest total, then larger count, then seen first."""
    present = [c for c in range(len(counts)) if counts[c] > 0]
    if not present:
        return NO_ANSWER
    return max(present, key=lambda c: (totals[c], counts[c], -first[c]))


def _majority(class_ids: Sequence[int], scores: Sequence[float] | None):
    ones = [1.0] * len(class_ids)
    totals, counts, first = _tally(class_ids, ones)
    return _pick_class(totals, counts, first), totals, counts


def _weighted(class_ids: Sequence[int], scores: Sequence[float] | None):
    totals, counts, first = _tally(class_ids, _require(scores, class_ids))
    return _pick_class(totals, counts, first), totals, counts


def _best_of_n(class_ids: Sequence[int], scores: Sequence[float] | None):
    scores = _require(scores, class_ids)
    totals, counts, _ = _tally(class_ids, scores)
    answered = [i for i, c in enumerate(class_ids) if c != NO_ANSWER]
    if not answered:
        return NO_ANSWER, totals, counts
    best = max(answered, key=lambda i: (scores[i], -i))  # highest score; ties -> earliest sample
    return class_ids[best], totals, counts


def _require(scores, class_ids) -> Sequence[float]:
    if scores is None:
        raise ValueError("this strategy needs scores (one per sample), got None")
    if len(scores) != len(class_ids):
        raise ValueError(f"scores has {len(scores)} entries but there are {len(class_ids)} samples")
    return scores


AGGREGATIONS: dict[str, Callable] = {"majority": _majority, "weighted": _weighted, "best_of_n": _best_of_n}
"""The aggregation rules by name ("strategy" names a run mode: fixed, adaptive-n, beam, ...)."""
STRATEGIES = AGGREGATIONS  # deprecated alias, kept for one release


def aggregation_keys(score_kinds: Sequence[str]) -> list[str]:
    """Every vote a record carries: `majority`, then `weighted:<kind>` and `best_of_n:<kind>` for each score kind
    (the keys of a results line's "strategies"; the one place they are built)."""
    return ["majority"] + [f"{rule}:{kind}" for kind in score_kinds for rule in AGGREGATIONS if rule != "majority"]
"""Every strategy: (class ids, scores or None) -> (winning class, per-class totals, per-class counts)."""


def vote_classes(
    strategy: str,
    class_ids: Sequence[int],
    scores: Sequence[float] | None = None,
    answers: Sequence[str | None] | None = None,
) -> Vote:
    """Aggregate samples already grouped into classes (ids numbered from 0; -1 = no answer)."""
    if strategy not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {sorted(AGGREGATIONS)}, got {strategy!r}")
    winner, totals, counts = AGGREGATIONS[strategy](class_ids, scores)
    total = sum(totals)
    answer = None
    if winner != NO_ANSWER and answers is not None:
        answer = answers[list(class_ids).index(winner)]
    confidence = totals[winner] / total if winner != NO_ANSWER and total > 0 else 0.0
    return Vote(answer=answer, answer_class=winner, confidence=confidence, class_totals=totals, class_counts=counts)


def _classes_of(answers: Sequence[str | None], classes: Sequence[int] | None) -> list[int]:
    if classes is not None:
        if len(classes) != len(answers):
            raise ValueError(f"classes has {len(classes)} entries but answers has {len(answers)}")
        return list(classes)
    from .answers import group_answers

    return list(group_answers(list(answers)).class_ids)


def majority_vote(answers: Sequence[str | None], *, classes: Sequence[int] | None = None) -> Vote:
    """The answer class with the most samples.

    >>> vote = majority_vote(["1/2", "0.5", "3", None])
    >>> vote.answer, vote.answer_class, vote.confidence
    ('1/2', 0, 0.6666666666666666)
    """
    return vote_classes("majority", _classes_of(answers, classes), None, answers)


def weighted_vote(
    answers: Sequence[str | None], scores: Sequence[float], *, classes: Sequence[int] | None = None
) -> Vote:
    """The answer class with the largest sum of verifier scores.

    >>> vote = weighted_vote(["3", "3", "4"], [0.1, 0.2, 0.9])
    >>> vote.answer, round(vote.confidence, 3)
    ('4', 0.75)
    """
    return vote_classes("weighted", _classes_of(answers, classes), scores, answers)


def best_of_n(answers: Sequence[str | None], scores: Sequence[float], *, classes: Sequence[int] | None = None) -> Vote:
    """The answer of the single highest-scored sample.

    >>> best_of_n(["3", "3", "4", None], [0.5, 0.6, 0.55, 0.99]).answer
    '3'
    """
    return vote_classes("best_of_n", _classes_of(answers, classes), scores, answers)


def vote_batch(
    strategy: str,
    answers: Sequence[Sequence[str | None]],
    scores: Sequence[Sequence[float]] | None = None,
    *,
    classes: Sequence[Sequence[int]] | None = None,
) -> list[Vote]:
    """One vote per problem over a batch of P problems x N samples (lists of lists; N may vary).

    >>> [v.answer for v in vote_batch("majority", [["1", "2", "2"], ["x", None, "x"]])]
    ['2', 'x']
    """
    if classes is None:
        from .answers import group_answers_batch

        classes = [list(c.class_ids) for c in group_answers_batch([list(a) for a in answers])]
    if scores is None:
        scores = [None] * len(answers)  # type: ignore[list-item]
    return [vote_classes(strategy, list(c), s, a) for a, s, c in zip(answers, scores, classes)]
