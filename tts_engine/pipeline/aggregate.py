"""Aggregation of the N scored samples of a problem: majority, weighted and best-of-N voting, and confidence
filtering (keep the top eta of the samples by a score kind, then vote).

Answers are grouped into equivalence classes first ("1/2", "0.5" and "\\frac{1}{2}" are one class); samples
without an answer vote for nothing. Ties go to the larger count, then to the class seen first (the one whose
earliest sample comes first). Confidence = score of the winning class / total score of all classes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .records import VoteRecord

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


def filter_top(scores: Sequence[float], keep: float) -> list[int]:
    """Indices of the ceil(keep x N) highest-scored samples (ties: the earlier sample), in sample order: the
    samples a confidence filter keeps (DeepConf's top-eta%)."""
    count = max(1, math.ceil(keep * len(scores) - 1e-9)) if scores else 0
    ranked = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    return sorted(ranked[:count])


def _filtered(keep: float, weighted: bool) -> Callable:
    """Keep the top `keep` share of the samples by the score kind, then vote among them (majority, or weighted
    by the same kind); the others vote for nothing. Totals and counts are those of the kept samples."""

    def rule(class_ids: Sequence[int], scores: Sequence[float] | None):
        scores = _require(scores, class_ids)
        kept = set(filter_top(scores, keep))
        ids = [c if i in kept else NO_ANSWER for i, c in enumerate(class_ids)]
        winner, totals, counts = (_weighted if weighted else _majority)(ids, scores)
        pad = max(max(class_ids, default=NO_ANSWER) + 1 - len(totals), 0)  # every class listed, kept or not
        return winner, totals + [0.0] * pad, counts + [0] * pad

    return rule


FILTER_PERCENTS = (10, 90)
"""The filters every record carries, as `filtered<percent>:<kind>`: keep the top 10% / 90% of a problem's samples
by the kind, then majority vote (DeepConf-low / -high). Any percent, weighted or not, is a rule by name
(`filtered<percent>` / `filtered<percent>_weighted`, see `aggregation_rule`)."""
_FILTERED = re.compile(r"filtered(\d+(?:\.\d+)?)(_weighted)?")

AGGREGATIONS: dict[str, Callable] = {
    "majority": _majority,
    "weighted": _weighted,
    "best_of_n": _best_of_n,
    **{f"filtered{p}": _filtered(p / 100, False) for p in FILTER_PERCENTS},
}
"""The aggregation rules every record carries, by name ("strategy" names a run mode: fixed, adaptive-n, beam,
...). Every rule: (class ids, scores or None) -> (winning class, per-class totals, per-class counts)."""


def aggregation_rule(name: str) -> Callable:
    """The rule named `name`: one of AGGREGATIONS, or `filtered<percent>[_weighted]` for any percent in (0, 100]."""
    if name in AGGREGATIONS:
        return AGGREGATIONS[name]
    match = _FILTERED.fullmatch(name)
    if match and 0 < float(match.group(1)) <= 100:
        return _filtered(float(match.group(1)) / 100, bool(match.group(2)))
    raise ValueError(
        f"aggregation must be one of {sorted(AGGREGATIONS)} or filtered<percent>[_weighted] "
        f"(e.g. filtered25_weighted), got {name!r}"
    )


CURVE_AGGREGATIONS = ("majority", "weighted", "best_of_n")
"""The aggregations `tts curve` estimates over random subsets (the subset-vote kernel's)."""


def aggregation_keys(score_kinds: Sequence[str], rules: Sequence[str] = tuple(AGGREGATIONS)) -> list[str]:
    """Every vote over `score_kinds` by `rules` (default all: the keys of a results line's "aggregations"):
    `majority`, then `<rule>:<kind>` for each score kind and rule (weighted, best_of_n, filtered10, filtered90).
    The one place vote keys are built."""
    head = ["majority"] if "majority" in rules else []
    return head + [f"{rule}:{kind}" for kind in score_kinds for rule in rules if rule != "majority"]


def headline_vote(headline_kind: str | None) -> str:
    """The vote a run answers with: weighted by the verifier's headline kind, or majority without a verifier."""
    return f"weighted:{headline_kind}" if headline_kind else "majority"


def vote_classes(
    strategy: str,
    class_ids: Sequence[int],
    scores: Sequence[float] | None = None,
    answers: Sequence[str | None] | None = None,
) -> Vote:
    """Aggregate samples already grouped into classes (ids numbered from 0; -1 = no answer)."""
    winner, totals, counts = aggregation_rule(strategy)(class_ids, scores)
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
    from ..answers import group_answers

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
        from ..answers import group_answers_batch

        classes = [list(c.class_ids) for c in group_answers_batch([list(a) for a in answers])]
    if scores is None:
        scores = [None] * len(answers)  # type: ignore[list-item]
    return [vote_classes(strategy, list(c), s, a) for a, s, c in zip(answers, scores, classes)]


def vote_predictions(
    samples: Sequence[Any], class_grades: Sequence[bool | None], has_reference: bool
) -> dict[str, VoteRecord]:
    """The prediction of every aggregation (majority; weighted, best-of-N and filtered by every score kind the
    samples carry) over a problem's sample records (`SampleRecord`): a record's "aggregations"."""
    class_ids = [s.answer_class for s in samples]
    answers = [s.answer for s in samples]
    kinds = list(samples[0].scores) if samples else []
    predictions = {}
    for key in aggregation_keys(kinds):
        strategy, _, kind = key.partition(":")
        scores = [s.scores[kind] for s in samples] if kind else None
        vote = vote_classes(strategy, class_ids, scores, answers)
        correct = None
        if has_reference:
            correct = bool(class_grades[vote.answer_class]) if vote.answer_class >= 0 else False
        predictions[key] = VoteRecord(vote.answer, vote.answer_class, round(vote.confidence, 6), correct)
    return predictions
