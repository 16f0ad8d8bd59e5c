"""Reward functions for RL training: 1.0 when the answer is equivalent to the reference, else 0.0."""

from __future__ import annotations

from typing import Sequence

from .extract import BOX_COMMANDS, extract_answer
from .grading import Judge, grade_answers, validate_grader
from .pool import DEFAULT_TIMEOUT, CheckPool


class RewardFn:
    """reward(reference, answer, question=None) -> 1.0 or 0.0; `batch` grades many at once (one judge call).

    `answer` may be a whole solution: when it contains \\boxed{...} the last box is the answer.
    Undecided verdicts (timeout, unreadable) give 0.0.
    """

    def __init__(self, mode: str = "rule", judge: Judge | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 pool: CheckPool | None = None):
        validate_grader(mode, judge)
        self.mode, self.judge, self.timeout, self.pool = mode, judge, timeout, pool

    def __call__(self, reference: str, answer: str | None, question: str | None = None) -> float:
        return self.batch([reference], [answer], [question])[0]

    def batch(self, references: Sequence[str], answers: Sequence[str | None],
              questions: Sequence[str | None] | None = None) -> list[float]:
        verdicts = grade_answers(references, [_final_answer(a) for a in answers], questions=questions,
                                 grader=self.mode, judge=self.judge, timeout=self.timeout, pool=self.pool)
        return [1.0 if verdict else 0.0 for verdict in verdicts]


def _final_answer(answer: str | None) -> str | None:
    if isinstance(answer, str) and any(command in answer for command in BOX_COMMANDS):
        return extract_answer(answer)
    return answer


def make_reward_fn(mode: str = "rule", judge: Judge | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                   pool: CheckPool | None = None) -> RewardFn:
    """A reward function: mode "rule" (math-verify + normalisation), "hybrid" (TinyV: rule, then the
    judge where the rule says wrong) or "judge" (judge only; hybrid and judge need `judge`)."""
    return RewardFn(mode, judge, timeout=timeout, pool=pool)
