"""Grading an answer against a reference: rule-based (math-verify + normalisation), an LLM judge, or
both (TinyV's hybrid). Every grading path of the project goes through `grade_answers`.

Verdicts are True, False, or None (undecided: the check timed out, the answer or the reference could
not be read, or the judge gave no verdict).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, Sequence, runtime_checkable

from .forms import UNCHECKABLE, answer_form, comparison_pair, quick_verdict
from .normalize import MAX_ANSWER_CHARS
from .pool import DEFAULT_TIMEOUT, OK, CheckPool, default_pool

GRADERS = ("rule", "hybrid", "judge")
"""rule: normalisation + math-verify only. hybrid: rule first; where it does not say "equivalent",
the judge decides (correct if either says so). judge: the judge only."""


@runtime_checkable
class Judge(Protocol):
    """Anything that decides equivalence for (question, reference, answer) triples, in input order."""

    def judge(self, items: list[tuple[str, str, str]]) -> list[bool | None]: ...


def validate_grader(grader: str, judge: object | None) -> None:
    """Fail early, saying how to fix it, when grader and judge do not fit together."""
    if grader not in GRADERS:
        raise ValueError(f"grader must be one of {', '.join(map(repr, GRADERS))}, got {grader!r}")
    if grader != "rule" and judge is None:
        raise ValueError(
            f"grader={grader!r} needs a judge: pass judge=LLMJudge(backend) (or any object with "
            "judge(items) -> list[bool | None]), or use grader='rule'"
        )
    if judge is not None and not callable(getattr(judge, "judge", None)):
        raise TypeError(f"judge must have a judge(items) method, got {type(judge).__name__}")


class _VerdictCache:
    """Rule verdicts by (reference, answer); timeouts are not cached (they may pass on a retry)."""

    def __init__(self, size: int = 100_000):
        self._size = size
        self._items: OrderedDict[tuple[str, str], bool | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[bool, bool | None]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
        return False, None

    def put(self, key: tuple[str, str], verdict: bool | None) -> None:
        if len(key[0]) + len(key[1]) > 2 * MAX_ANSWER_CHARS:
            return  # long answers are settled without math anyway; keep the cache small
        with self._lock:
            self._items[key] = verdict
            if len(self._items) > self._size:
                self._items.popitem(last=False)


_cache = _VerdictCache()


def rule_verdict(reference: str | None, answer: str | None, *, timeout: float = DEFAULT_TIMEOUT,
                 pool: CheckPool | None = None) -> bool | None:
    """The rule-based verdict for one pair (cached). Misses and unreadable references give None."""
    reference = reference.strip() if isinstance(reference, str) else ""
    answer = answer.strip() if isinstance(answer, str) else ""
    if not reference:
        return None
    if not answer:
        return False
    found, verdict = _cache.get((reference, answer))
    if found:
        return verdict
    ref_form, answer_form_ = answer_form(reference), answer_form(answer)
    verdict = quick_verdict(ref_form, answer_form_)
    if verdict is None and UNCHECKABLE not in (ref_form.kind, answer_form_.kind):
        gold, pred = comparison_pair(ref_form, answer_form_)
        status, verdict = (pool or default_pool()).check(gold, pred, False, timeout)
        if status != OK:
            return None  # timeout or worker error: undecided, and not cached
    _cache.put((reference, answer), verdict)
    return verdict


def grade_answers(
    references: Sequence[str | None],
    answers: Sequence[str | None],
    *,
    questions: Sequence[str | None] | None = None,
    grader: str = "rule",
    judge: Judge | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    pool: CheckPool | None = None,
) -> list[bool | None]:
    """Grade answers[i] against references[i] (outputs in input order).

    Rule checks run on the pool's worker processes; the judge gets one batched call with every
    pair it must decide. An empty answer is wrong (False) in every mode; a missing reference is None.
    """
    validate_grader(grader, judge)
    if len(references) != len(answers):
        raise ValueError(f"references and answers must have the same length, got {len(references)} and {len(answers)}")
    if questions is not None and len(questions) != len(answers):
        raise ValueError(f"questions must have one entry per answer, got {len(questions)} for {len(answers)} answers")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    rule = [None] * len(answers) if grader == "judge" else _rule_verdicts(references, answers, timeout, pool)
    if grader == "rule":
        return rule
    to_judge = [i for i, verdict in enumerate(rule) if verdict is not True and _has_text(answers[i])
                and _has_text(references[i])]
    judged = _ask_judge(judge, to_judge, references, answers, questions)
    verdicts: list[bool | None] = []
    for i, verdict in enumerate(rule):
        if not _has_text(answers[i]) and _has_text(references[i]):
            verdicts.append(False)
        elif grader == "judge":
            verdicts.append(judged.get(i))
        else:
            verdicts.append(_hybrid(verdict, judged.get(i)))
    return verdicts


def _hybrid(rule: bool | None, judge: bool | None) -> bool | None:
    """Correct if either says so; the judge's "no" settles it; with no judge verdict, the rule's stands."""
    if rule is True or judge is True:
        return True
    if judge is False:
        return False
    return rule


def _rule_verdicts(references, answers, timeout: float, pool: CheckPool | None) -> list[bool | None]:
    pool = pool or default_pool()
    pairs = list(zip(references, answers))
    if len(pairs) <= 1 or pool.processes == 1:
        return [rule_verdict(r, a, timeout=timeout, pool=pool) for r, a in pairs]
    with ThreadPoolExecutor(max_workers=pool.processes) as threads:
        return list(threads.map(lambda pair: rule_verdict(pair[0], pair[1], timeout=timeout, pool=pool), pairs))


def _ask_judge(judge: Judge, indices: list[int], references, answers, questions) -> dict[int, bool | None]:
    if not indices:
        return {}
    items = [((questions[i] or "") if questions is not None else "", references[i].strip(), answers[i].strip())
             for i in indices]
    verdicts = judge.judge(items)
    if len(verdicts) != len(items):
        raise ValueError(f"judge returned {len(verdicts)} verdicts for {len(items)} items")
    return dict(zip(indices, verdicts))


def _has_text(value: str | None) -> bool:
    return isinstance(value, str) and bool(value.strip())


def is_equivalent(
    reference: str | None,
    answer: str | None,
    *,
    question: str | None = None,
    grader: str = "rule",
    judge: Judge | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    pool: CheckPool | None = None,
) -> bool | None:
    """Is `answer` equivalent to `reference`? True, False, or None when undecided (timeout, unreadable)."""
    return grade_answers([reference], [answer], questions=[question], grader=grader, judge=judge,
                         timeout=timeout, pool=pool)[0]
