"""Answers: extraction from solutions, equivalence checking, answer classes, judges and rewards.

Importing this package does not import sympy or math-verify: they are loaded in the check worker
processes (pool.py), where every check runs with a deadline.
"""

from .classes import AnswerClasses, group_answers, group_answers_batch
from .extract import extract_answer
from .grading import GRADERS, Grade, GradingReport, Judge, grade_answers, grade_answers_report, is_equivalent
from .judge import TINYV_PROMPT, LLMJudge, parse_verdict
from .normalize import MAX_ANSWER_CHARS, canonical_key, normalize_answer
from .pool import DEFAULT_TIMEOUT, CheckPool, default_pool, set_default_pool
from .rewards import RewardFn, make_reward_fn

__all__ = [
    "AnswerClasses",
    "CheckPool",
    "DEFAULT_TIMEOUT",
    "GRADERS",
    "Grade",
    "GradingReport",
    "Judge",
    "LLMJudge",
    "MAX_ANSWER_CHARS",
    "RewardFn",
    "TINYV_PROMPT",
    "canonical_key",
    "default_pool",
    "extract_answer",
    "grade_answers",
    "grade_answers_report",
    "group_answers",
    "group_answers_batch",
    "is_equivalent",
    "make_reward_fn",
    "normalize_answer",
    "parse_verdict",
    "set_default_pool",
]
