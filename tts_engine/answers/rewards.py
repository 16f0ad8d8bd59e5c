"""Reward functions for RL training: 1.0 when the answer is equivalent to the reference, else 0.0.

`solution_reward` is the one rule-based reward of every trainer in training/ (and of the evaluation of
training runs); `RewardFn` adds the hybrid / judge modes. Both take (reference, answer or solution).
"""

from __future__ import annotations

import re
from typing import Sequence

from .extract import BOX_COMMANDS, extract_answer
from .grading import Judge, grade_answers, validate_grader
from .pool import DEFAULT_TIMEOUT, CheckPool


class RewardFn:
    """reward(reference, answer, question=None) -> 1.0 or 0.0; `batch` grades many at once (one judge call).

    `answer` may be a whole solution: when it contains \\boxed{...} the last box is the answer.
    Undecided verdicts (timeout, unreadable) give 0.0.
    """

    def __init__(
        self,
        mode: str = "rule",
        judge: Judge | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        pool: CheckPool | None = None,
    ):
        validate_grader(mode, judge)
        self.mode, self.judge, self.timeout, self.pool = mode, judge, timeout, pool

    def __call__(self, reference: str, answer: str | None, question: str | None = None) -> float:
        return self.batch([reference], [answer], [question])[0]

    def batch(
        self, references: Sequence[str], answers: Sequence[str | None], questions: Sequence[str | None] | None = None
    ) -> list[float]:
        verdicts = grade_answers(
            references,
            [_final_answer(a) for a in answers],
            questions=questions,
            grader=self.mode,
            judge=self.judge,
            timeout=self.timeout,
            pool=self.pool,
        )
        return [1.0 if verdict else 0.0 for verdict in verdicts]


def _final_answer(answer: str | None) -> str | None:
    if isinstance(answer, str) and any(command in answer for command in BOX_COMMANDS):
        return extract_answer(answer)
    return answer


def make_reward_fn(
    mode: str = "rule", judge: Judge | None = None, *, timeout: float = DEFAULT_TIMEOUT, pool: CheckPool | None = None
) -> RewardFn:
    """A reward function: mode "rule" (math-verify + normalisation), "hybrid" (TinyV: rule, then the
    judge where the rule says wrong) or "judge" (judge only; hybrid and judge need `judge`)."""
    return RewardFn(mode, judge, timeout=timeout, pool=pool)


_INTEGER = re.compile(r"-?[0-9]+")


def answer_key(answer: str | None) -> str | None:
    """Cheap class key of an extracted answer: integers compare by value ("012" -> "12"), other text as written."""
    if answer is None:
        return None
    text = answer.strip().replace(",", "")
    if _INTEGER.fullmatch(text):
        return str(int(text))
    return text or None


def answer_reward(reference: str, answer: str | None) -> float:
    """1.0 when `answer` is equivalent to `reference`, else 0.0; never raises (a bad sample scores 0).

    Equal keys and two different integers are decided in-process (the common case in training); anything
    else goes to the equivalence checker."""
    key, ref_key = answer_key(answer), answer_key(reference)
    if key is None:
        return 0.0
    if key == ref_key:
        return 1.0
    if ref_key is not None and _INTEGER.fullmatch(key) and _INTEGER.fullmatch(ref_key):
        return 0.0
    try:
        from .grading import is_equivalent

        return float(bool(is_equivalent(reference, answer)))
    except Exception:  # a bad sample never kills a batch
        return 0.0


def solution_reward(reference: str, solution: str) -> float:
    """The rule-based reward of a whole solution: its final answer (extract_answer) against `reference`."""
    return answer_reward(reference, extract_answer(solution))
