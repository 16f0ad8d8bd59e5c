"""Answer classes: group the N answers of one problem into classes of equivalent answers.

Cheap first: answers are bucketed by exact string, then by canonical key (normalize.py); only one
representative per bucket is compared, with math-verify in a check worker, against the
representative of each class so far (each representative is parsed once per worker and reused).
A representative that does not parse or whose check passes its deadline becomes a class of its own
(its exact and canonical duplicates still join it); that is recorded in `statuses`, never raised.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Sequence

from .forms import EMPTY, MATH, UNCHECKABLE, AnswerForm, answer_form, comparison_pair, quick_verdict
from .pool import DEFAULT_TIMEOUT, OK, TIMEOUT, CheckPool, Worker, default_pool

logger = logging.getLogger(__name__)

STATUS_OK, NO_ANSWER, STATUS_TIMEOUT, UNPARSABLE = "ok", "no_answer", "timeout", "unparsable"


@dataclass
class AnswerClasses:
    """The answer classes of one problem's N answers."""

    class_ids: list[int]
    """(N,) class of each answer; -1 for no answer (None or empty). Ids in order of first appearance."""
    representatives: list[str]
    """(C,) the first answer (stripped) of each class."""
    statuses: list[str]
    """(N,) "ok", "no_answer", "timeout" (a check passed its deadline: own class) or "unparsable"
    (math-verify was asked to read it and could not, or it is uncheckable: longer than
    MAX_ANSWER_CHARS, too deep or too large; own class). Answers are parsed only when a comparison
    needs math, so an unreadable answer that no comparison needed stays "ok"."""
    math_checks: int = 0
    """Comparisons that went to a check worker (the rest were settled by string or canonical form)."""
    timeouts: int = 0
    """Checks that passed their deadline."""

    @property
    def num_classes(self) -> int:
        return len(self.representatives)

    def sizes(self) -> list[int]:
        """(C,) number of answers in each class."""
        counts = [0] * self.num_classes
        for class_id in self.class_ids:
            if class_id >= 0:
                counts[class_id] += 1
        return counts

    def members(self, class_id: int) -> list[int]:
        """Indices of the answers in class `class_id`."""
        return [i for i, c in enumerate(self.class_ids) if c == class_id]


@dataclass
class _Class:
    form: AnswerForm
    status: str
    """Status of the representative and its exact/canonical duplicates."""
    comparable: bool
    """False when its representative did not parse or proved slow: no more math with it."""
    proven: bool = False
    """True once a check with this representative finished: a later timeout is the other side's."""


@dataclass
class _Grouping:
    """The state of one group_answers call."""

    pool: CheckPool
    timeout: float
    stack: ExitStack
    classes: list[_Class] = field(default_factory=list)
    worker: Worker | None = None
    math_checks: int = 0
    timeouts: int = 0

    def call(self, request: tuple) -> tuple[str, object]:
        if self.worker is None:  # hold one worker for the whole problem, only once math is needed
            self.worker = self.stack.enter_context(self.pool.acquire())
        return self.worker.call(request, self.timeout)


def group_answers(
    answers: Sequence[str | None], *, timeout: float = DEFAULT_TIMEOUT, pool: CheckPool | None = None
) -> AnswerClasses:
    """Group one problem's answers into equivalence classes.

    timeout: seconds one check may take (parse or compare) before it is abandoned.
    pool: the check workers (default: the process-wide pool).
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    class_ids = [-1] * len(answers)
    own_status: list[str | None] = [NO_ANSWER] * len(answers)  # None: the status of the answer's class
    placed: dict[str, tuple[int, str | None]] = {}  # exact string or canonical key -> (class id, status)
    with ExitStack() as stack:
        state = _Grouping(pool or default_pool(), timeout, stack)
        for i, raw in enumerate(answers):
            text = raw.strip() if isinstance(raw, str) else ""
            if not text:
                continue
            if text not in placed:
                form = answer_form(text)
                if form.kind == EMPTY:
                    continue
                placed[text] = placed.get(form.key) or _place(state, form)
                placed.setdefault(form.key, placed[text])
            class_ids[i], own_status[i] = placed[text]
    statuses = [status or state.classes[c].status for status, c in zip(own_status, class_ids)]
    representatives = _first_members(answers, class_ids, len(state.classes))
    return AnswerClasses(class_ids, representatives, statuses, state.math_checks, state.timeouts)


def _place(state: _Grouping, form: AnswerForm) -> tuple[int, str | None]:
    """(class id, "ok") for an existing class it equals, else (new class id, None)."""
    undecided = []
    for class_id, existing in enumerate(state.classes):
        verdict = quick_verdict(existing.form, form)
        if verdict:
            return class_id, STATUS_OK
        if verdict is None and existing.comparable:
            undecided.append(class_id)
    status = STATUS_OK if form.kind != UNCHECKABLE else UNPARSABLE
    if form.kind == MATH:
        status, class_id = _math_place(state, form, undecided)
        if class_id is not None:
            return class_id, STATUS_OK
    comparable = status == STATUS_OK and form.kind == MATH
    state.classes.append(_Class(form, status, comparable))
    return len(state.classes) - 1, None


def _parse_status(state: _Grouping, form: AnswerForm) -> str:
    outcome, parsed = state.call(("parse", form.key))
    if outcome == TIMEOUT:
        state.timeouts += 1
        return STATUS_TIMEOUT
    return STATUS_OK if outcome == OK and parsed else UNPARSABLE


def _math_place(state: _Grouping, form: AnswerForm, candidates: list[int]) -> tuple[str, int | None]:
    """Compare with each candidate class by math; (status, matching class id or None).

    Nothing is parsed ahead: the worker parses (and caches) both sides of a check. A check that
    finds an unparsable side is followed by a parse of the new answer to tell which side it was.
    After a timeout, each side that has not finished a check yet is probed against "0": a side
    that cannot finish even that is slow. A slow class takes no more math; a slow new answer (or,
    when neither probe is slow, the new answer) becomes a class of its own with status "timeout".
    """
    for class_id in candidates:
        existing = state.classes[class_id]
        if not existing.comparable:
            continue
        outcome, verdict = _check(state, existing.form, form)
        if outcome == OK and verdict is None:
            status = _parse_status(state, form)
            if status != STATUS_OK:
                return status, None
            existing.comparable, existing.status = False, UNPARSABLE
        elif outcome == OK:
            existing.proven = True
            if verdict:
                return STATUS_OK, class_id
        elif outcome == TIMEOUT:
            class_is_slow = not existing.proven and _is_slow(state, existing.form)
            if class_is_slow:
                existing.comparable, existing.status = False, STATUS_TIMEOUT
            if not class_is_slow or _is_slow(state, form):
                return STATUS_TIMEOUT, None
    return STATUS_OK, None


def _check(state: _Grouping, left_form: AnswerForm, right_form: AnswerForm | str) -> tuple[str, object]:
    if isinstance(right_form, str):
        left, right = left_form.key, right_form
    else:
        left, right = comparison_pair(left_form, right_form)
    outcome, verdict = state.call(("check", left, right, True))
    state.math_checks += 1
    if outcome == TIMEOUT:
        state.timeouts += 1
        logger.warning("answer check timed out: %r vs %r", left[:80], right[:80])
    return outcome, verdict


def _is_slow(state: _Grouping, form: AnswerForm) -> bool:
    """Can this answer not even be compared with 0 within the deadline?"""
    outcome, _ = _check(state, form, "0")
    return outcome == TIMEOUT


def _first_members(answers: Sequence[str | None], class_ids: list[int], num_classes: int) -> list[str]:
    representatives: list[str | None] = [None] * num_classes
    for raw, class_id in zip(answers, class_ids):
        if class_id >= 0 and representatives[class_id] is None:
            representatives[class_id] = raw.strip()
    return representatives


def group_answers_batch(
    answer_lists: Sequence[Sequence[str | None]],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    pool: CheckPool | None = None,
) -> list[AnswerClasses]:
    """group_answers for many problems, spread over the pool's worker processes (outputs in input order)."""
    pool = pool or default_pool()
    if len(answer_lists) <= 1 or pool.processes == 1:
        return [group_answers(answers, timeout=timeout, pool=pool) for answers in answer_lists]
    with ThreadPoolExecutor(max_workers=pool.processes) as threads:
        return list(threads.map(lambda answers: group_answers(answers, timeout=timeout, pool=pool), answer_lists))
