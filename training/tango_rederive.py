"""The re-derivation form of the Tango verifier, with warm-up targets from the model's own recomputations.

The verifier checks each step in a form the solution does not contain (`training.rederive`). Its warm-up never
sees the task's step labels: each re-derived value is what a model of the pair (the generator, same start as the
verifier) computes when it writes that sum or product as the next line of a solution (greedy, in the form it
solves problems in), and each mark compares that value with the solution's. Outcome labels enter only where the
caller puts them (the verdict of the SFT baseline's targets, the RL reward).
"""

from __future__ import annotations

import re

from tts_engine.params import SamplingParams
from tts_engine.prompts import PromptConfig, build_prompt

from .joint import CHECK_SUFFIX
from .rederive import Check, check_read, read_solution

VERIFIER_FORMS = ("marks", "rederive", "recompute")
"""`marks`: one bare mark per step (`1:+`); `rederive`: a written re-derivation per step, then its mark;
`recompute`: each line recomputed units digit first (training/tango_recompute.py)."""
REDERIVE_SUFFIX = CHECK_SUFFIX + "{problem}\n"
"""What follows prompt + solution in the re-derivation verifier's prompt (its `check_suffix`): the problem is
restated next to the check, whose every line reads an operand from it (a small model copies badly from far back)."""
VALUE = re.compile(r"\s*(\d+)")
MAX_VALUE_TOKENS = 6
"""Longest recomputed value in tokens (the task's values have at most four digits), then the line break."""


def leading_value(text: str) -> int | None:
    """The number a generated line starts with; None when it starts with none."""
    found = VALUE.match(text)
    return int(found.group(1)) if found else None


def recomputed_checks(backend, prompt_config: PromptConfig, problems: list[str], solutions: list[str]) -> list[Check]:
    """The check of each solution with every re-derived value computed by `backend`'s model (greedy, batched),
    prompted as it solves problems (`prompt_config`)."""
    reads = [read_solution(problem, solution) for problem, solution in zip(problems, solutions)]
    queries = [
        (i, build_prompt(prompt_config, asked) + text)
        for i, (problem, read) in enumerate(zip(problems, reads))
        for asked, text in read.recompute_queries(problem)
    ]
    params = SamplingParams(n=1, temperature=0.0, max_new_tokens=MAX_VALUE_TOKENS, stop=["\n"])
    generated = backend.generate([q for _, q in queries], params) if queries else []
    derived: list[list[int | None]] = [[] for _ in reads]
    for (i, _), row in zip(queries, generated):
        derived[i].append(leading_value(row[0].text))
    return [check_read(read, values) for read, values in zip(reads, derived)]
