"""Grading an answer against a reference: rule-based (math-verify + normalisation), an LLM judge, or
both (TinyV's hybrid). Every grading path of the project goes through `grade_answers`.

Verdicts are True, False, or None (undecided: the check timed out, the answer or the reference could
not be read, or the judge gave no verdict).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple, Protocol, Sequence, runtime_checkable

from .forms import CHOICE, TEXT, UNCHECKABLE, angle_forms, answer_form, asks_for_angle, comparison_pair, quick_verdict
from .normalize import MAX_ANSWER_CHARS
from .pool import DEFAULT_TIMEOUT, OK, TIMEOUT, CheckPool, default_pool

GRADERS = ("rule", "hybrid", "judge")
"""rule: normalisation + math-verify only. hybrid: rule first; where it is undecided, or says "not
equal" about a text answer, the judge decides (correct if either says so). judge: the judge only."""


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
    """Rule grades by (reference, answer); timeouts are not cached (they may pass on a retry)."""

    def __init__(self, size: int = 100_000):
        self._size = size
        self._items: OrderedDict[tuple[str, str], object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[bool, object]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
        return False, None

    def put(self, key: tuple[str, str], verdict: object) -> None:
        if len(key[0]) + len(key[1]) > 2 * MAX_ANSWER_CHARS:
            return  # long answers are settled without math anyway; keep the cache small
        with self._lock:
            self._items[key] = verdict
            if len(self._items) > self._size:
                self._items.popitem(last=False)


_cache = _VerdictCache()

# Why a rule verdict is None (Grade.reason); a decided verdict has reason None.
NO_REFERENCE = "no reference"
"""The reference is missing or empty."""
UNREADABLE = "unreadable"
"""math-verify could not read one side as mathematics."""
TEXT_ANSWER = "text"
"""A side is words (a sentence, a name against a number): the judge's to decide."""
TOO_LARGE = "uncheckable"
"""A side is too long, too deep or too large to check by math (guards.py); compared as written only."""
TIMED_OUT = "timeout"
"""The check passed its deadline, also on its retry."""
WORKER_ERROR = "worker error"
"""The check worker failed (memory cap, crash)."""

RETRY_CHARS = 200
"""A pair whose normalised sides are both at most this long gets one retry with a doubled deadline
after a timeout: such a check takes milliseconds on an idle machine, so a timeout means a busy one."""


class Grade(NamedTuple):
    """One rule verdict and, when it is None, why."""

    verdict: bool | None
    reason: str | None = None


@dataclass
class GradingReport:
    """The verdicts of one grade_answers call, why each undecided rule verdict is undecided, and how
    many pairs the judge was asked about."""

    verdicts: list[bool | None]
    """Final verdicts, in input order."""
    reasons: list[str | None]
    """(n,) why the rule verdict was None (NO_REFERENCE, UNREADABLE, TEXT_ANSWER, TOO_LARGE,
    TIMED_OUT, WORKER_ERROR), or None when the rule decided (or did not run: grader="judge")."""
    judged: int = 0
    """Pairs sent to the judge (hybrid: the undecided and the text-like "not equal" ones)."""
    judged_indices: tuple[int, ...] = ()
    """Which pairs (input positions) were sent to the judge."""


def rule_verdict(
    reference: str | None,
    answer: str | None,
    *,
    question: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    pool: CheckPool | None = None,
) -> bool | None:
    """The rule-based verdict for one pair (cached). Misses and unreadable references give None."""
    return rule_grade(reference, answer, question=question, timeout=timeout, pool=pool).verdict


def rule_grade(
    reference: str | None,
    answer: str | None,
    *,
    question: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    pool: CheckPool | None = None,
) -> Grade:
    """rule_verdict with the reason for an undecided verdict. False only when both sides were read
    and differ; None when a side could not be read as mathematics or the check timed out."""
    reference = reference.strip() if isinstance(reference, str) else ""
    answer = answer.strip() if isinstance(answer, str) else ""
    if not reference:
        return Grade(None, NO_REFERENCE)
    if not answer:
        return Grade(False)
    angle_question = asks_for_angle(question)
    key = (reference, answer + ("\x00angle" if angle_question else ""))
    found, cached = _cache.get(key)
    if found:
        return cached
    grade = _uncached_grade(reference, answer, angle_question, timeout, pool or default_pool())
    if grade.reason not in (TIMED_OUT, WORKER_ERROR):  # these may pass on a later try
        _cache.put(key, grade)
    return grade


def _uncached_grade(reference: str, answer: str, angle_question: bool, timeout: float, pool: CheckPool) -> Grade:
    ref_form, ans_form = angle_forms(answer_form(reference), answer_form(answer), angle_question)
    verdict = quick_verdict(ref_form, ans_form)
    kinds = {ref_form.kind, ans_form.kind}
    prose = ref_form.prose or ans_form.prose
    if verdict is not None:
        return Grade(verdict)
    if UNCHECKABLE in kinds:
        return Grade(None, TOO_LARGE)
    if kinds & {TEXT, CHOICE}:
        return Grade(None, TEXT_ANSWER)
    gold, pred = comparison_pair(ref_form, ans_form)
    status, verdict = pool.check(gold, pred, False, timeout)
    if status == TIMEOUT and len(gold) <= RETRY_CHARS and len(pred) <= RETRY_CHARS:
        status, verdict = pool.check(gold, pred, False, 2 * timeout)
    if status == TIMEOUT:
        return Grade(None, TIMED_OUT)
    if status != OK:
        return Grade(None, WORKER_ERROR)
    if verdict is None:
        return Grade(None, TEXT_ANSWER if prose else UNREADABLE)
    if verdict is False and prose:
        return Grade(None, TEXT_ANSWER)
    return Grade(verdict)


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
    return grade_answers_report(
        references, answers, questions=questions, grader=grader, judge=judge, timeout=timeout, pool=pool
    ).verdicts


def grade_answers_report(
    references: Sequence[str | None],
    answers: Sequence[str | None],
    *,
    questions: Sequence[str | None] | None = None,
    grader: str = "rule",
    judge: Judge | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    pool: CheckPool | None = None,
) -> GradingReport:
    """grade_answers with the reason of every undecided rule verdict and the number of judged pairs.

    hybrid sends the judge exactly the pairs whose rule verdict is None, or False with a side that is
    text (words, a sentence); the rest keep the rule's verdict.
    """
    validate_grader(grader, judge)
    if len(references) != len(answers):
        raise ValueError(f"references and answers must have the same length, got {len(references)} and {len(answers)}")
    if questions is not None and len(questions) != len(answers):
        raise ValueError(f"questions must have one entry per answer, got {len(questions)} for {len(answers)} answers")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    questions = list(questions) if questions is not None else [None] * len(answers)
    if grader == "judge":
        rule = [Grade(None)] * len(answers)
    else:
        rule = _rule_grades(references, answers, questions, timeout, pool)
    reasons = [grade.reason for grade in rule]
    if grader == "rule":
        return GradingReport([grade.verdict for grade in rule], reasons)
    to_judge = [
        i
        for i, grade in enumerate(rule)
        if _has_text(answers[i])
        and _has_text(references[i])
        and (grader == "judge" or _needs_judge(grade, references[i], answers[i]))
    ]
    judged = _ask_judge(judge, to_judge, references, answers, questions)
    verdicts: list[bool | None] = []
    for i, grade in enumerate(rule):
        if not _has_text(answers[i]) and _has_text(references[i]):
            verdicts.append(False)
        elif grader == "judge":
            verdicts.append(judged.get(i))
        else:
            verdicts.append(_hybrid(grade.verdict, judged.get(i)))
    return GradingReport(verdicts, reasons, len(to_judge), tuple(to_judge))


def _needs_judge(grade: Grade, reference: str, answer: str) -> bool:
    """Undecided, or "not equal" with a side that is words: where a judge can see what rules cannot."""
    if grade.verdict is None:
        return True
    if grade.verdict is True:
        return False
    return any(
        form.kind == TEXT or form.prose for form in (answer_form(reference.strip()), answer_form(answer.strip()))
    )


def _hybrid(rule: bool | None, judge: bool | None) -> bool | None:
    """Correct if either says so; the judge's "no" settles it; with no judge verdict, the rule's stands."""
    if rule is True or judge is True:
        return True
    if judge is False:
        return False
    return rule


def _rule_grades(references, answers, questions, timeout: float, pool: CheckPool | None) -> list[Grade]:
    pool = pool or default_pool()
    items = list(zip(references, answers, questions))

    def grade(item) -> Grade:
        return rule_grade(item[0], item[1], question=item[2], timeout=timeout, pool=pool)

    if len(items) <= 1 or pool.processes == 1:
        return [grade(item) for item in items]
    with ThreadPoolExecutor(max_workers=pool.processes) as threads:
        return list(threads.map(grade, items))


def _ask_judge(judge: Judge, indices: list[int], references, answers, questions) -> dict[int, bool | None]:
    if not indices:
        return {}
    items = [(questions[i] or "", references[i].strip(), answers[i].strip()) for i in indices]
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
    return grade_answers(
        [reference], [answer], questions=[question], grader=grader, judge=judge, timeout=timeout, pool=pool
    )[0]
