"""The re-solve check of the arithmetic task (`tts train joint`'s resolve form), and solutions with planted errors.

The re-solve check solves the problem again line by line in the solution's own form (the arithmetic a small model
does best), then compares the answers (`answer S vs R`, one mark) and gives the verdict. Every number it writes is
computed here from the problem; training uses these texts as targets. Planted errors (`plant_error`) give the
check wrong solutions of every kind it must reject, beside the model's own.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from tts_engine.tasks.arith.chain import apply, problem_steps

BOXED_LINE = re.compile(r"^\\boxed\{(\d+)\}$")
VERDICT_PREFIX = "verdict:"


@dataclass(frozen=True)
class Check:
    """The verification text of one solution and what it decided."""

    text: str
    """The check, one line per step, the answer line and the verdict (no end token)."""
    marks: tuple[bool, ...]
    """Per mark written (the re-solve check writes one, at the answer): True when it checked out."""
    verdict: bool
    """True when every step and the answer checked out."""
    disagrees: tuple[bool, ...]
    """Per written line: True where the line's computed part differs from what the solution wrote there (copying
    the solution would be wrong)."""


def _finish(lines: list[str], marks: list[bool], disagrees: tuple[bool, ...] | None = None) -> Check:
    """The check with its verdict line; by default a line disagrees with the solution where its mark is "-"."""
    verdict = all(marks)
    text = "\n".join(lines + [VERDICT_PREFIX + ("Yes" if verdict else "No")])
    return Check(text, tuple(marks), verdict, tuple(not ok for ok in marks) if disagrees is None else disagrees)


def resolve(problem: str, solution: str) -> Check:
    """The re-solve check of `solution` (the request before it restates the problem): the problem solved again
    line by line in the solution's own form (the arithmetic the model does best), then `answer S vs R` (the
    solution's boxed answer against the re-solve's) and the verdict. One mark, at the answer; the lines from the first one that differs from the solution's are
    where copying the solution would be wrong. The answer line does not say "boxed": a check that shares the
    solution's answer syntax teaches the generator to garble it.

        28*4=112
        112-18=94
        94+80=174
        answer 173 vs 174 -
        verdict:No
    """
    start, steps = problem_steps(problem)
    lines, value = [], start
    for op, operand in steps:
        result = apply(value, op, operand)
        lines.append(f"{value}{op}{operand}={result}")
        value = result
    written = [line.strip() for line in solution.strip().split("\n") if line.strip()]
    first_diff = next((k for k, line in enumerate(lines) if k >= len(written) or written[k] != line), len(lines))
    boxed = BOXED_LINE.match(written[-1]) if written else None
    ok = boxed is not None and int(boxed.group(1)) == value
    lines.append(f"answer {boxed.group(1) if boxed else '?'} vs {value} {'+' if ok else '-'}")
    disagrees = tuple(k >= first_diff for k in range(len(steps))) + (not ok,)
    return _finish(lines, [ok], disagrees)


# --- planted errors ----------------------------------------------------------------------------------------
ERROR_KINDS = ("result", "result", "result", "result", "carry", "operand", "answer")
"""Kinds of planted error, drawn uniformly (so a wrong result is the most common, as in the model's samples)."""


def wrong_value(rng: random.Random, value: int) -> int:
    """A plausible wrong number near `value`: off by a little, by a power of ten, or in one digit."""
    for _ in range(20):
        how = rng.random()
        if how < 0.4:
            candidate = value + rng.choice([-1, 1]) * rng.randint(1, 9)
        elif how < 0.6:
            candidate = value + rng.choice([-1, 1]) * rng.choice([10, 20, 100])
        else:
            digits = list(str(value))
            k = rng.randrange(len(digits))
            digits[k] = str(rng.choice([d for d in range(10) if str(d) != digits[k]]))
            candidate = int("".join(digits))
        if candidate >= 0 and candidate != value:
            return candidate
    return value + 1


def plant_error(problem: str, rng: random.Random) -> str:
    """A solution of `problem` in the task's form with one planted error, later lines carried on correctly."""
    start, steps = problem_steps(problem)
    kind = rng.choice(ERROR_KINDS)
    at = rng.randrange(len(steps))
    lines, value = [], start
    for k, (op, operand) in enumerate(steps):
        left, used = value, operand
        if k == at and kind == "carry":
            left = wrong_value(rng, value)
        if k == at and kind == "operand":
            used = wrong_value(rng, operand) or operand + 1
        result = apply(left, op, used)
        if k == at and kind == "result":
            result = wrong_value(rng, result)
        if result < 0:  # a carried error cannot make the chain go below zero: plant a result error instead
            result = wrong_value(rng, apply(value, op, operand))
        lines.append(f"{left}{op}{used}={result}")
        value = result
    answer = wrong_value(rng, value) if kind == "answer" else value
    return "\n".join(lines + [f"\\boxed{{{answer}}}"])
