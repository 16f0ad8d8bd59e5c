"""The text of the chain-arithmetic task the embedded default serves: its problems and its solution lines.

    Compute left to right: 28*4-18+80.        a problem: a start value, then (operation, operand) terms
    28*4=112                                  a solution: one `left op operand=result` line per term,
    112-18=94                                 then the boxed answer
    94+80=174
    \\boxed{174}

Training (`tts_engine.tasks.arith.generator` makes the problems) and the recompute verifier read them with these functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROBLEM = re.compile(r"Compute left to right:\s*(\d[0-9+\-*\s]*?)\s*\.?\s*$")
STEP_LINE = re.compile(r"^\s*(\d+)\s*([+\-*])\s*(\d+)\s*=\s*(\d+)\s*$")
OPERATIONS = "+-*"
WIDTH = 3
"""Digits every number is padded to when written units digit first (levels 1-5 stay below 1000); longer numbers
(levels 6 and above, to 9999) keep theirs."""


def problem_steps(problem: str) -> tuple[int, list[tuple[str, int]]]:
    """The start value and the (operation, operand) list of a task problem; ValueError for any other text."""
    found = PROBLEM.search(problem.strip())
    if found is None:
        raise ValueError(f"not an arithmetic task problem: {problem!r}")
    tokens = re.findall(r"\d+|[+\-*]", found.group(1))
    return int(tokens[0]), [(tokens[k], int(tokens[k + 1])) for k in range(1, len(tokens) - 1, 2)]


def units_first(number: int) -> str:
    """`number` padded to WIDTH digits, units digit first: 112 -> "211", 4 -> "400" (the recompute check's form)."""
    return str(number).rjust(WIDTH, "0")[::-1]


def restate(problem: str) -> str:
    """The task problem with every number units digit first: "Compute left to right: 28*4-18+80." ->
    "820*400-810+080"; ValueError for a problem that is not the task's."""
    start, steps = problem_steps(problem)
    return units_first(start) + "".join(op + units_first(operand) for op, operand in steps)


def is_task_problem(problem: str) -> bool:
    return PROBLEM.search(problem.strip()) is not None


def apply(value: int, op: str, operand: int) -> int:
    return value + operand if op == "+" else value - operand if op == "-" else value * operand


def exact_chain(problem: str) -> list[str]:
    """The task's solution lines of `problem`: one `left op operand=result` line per operation, left to right."""
    value, terms = problem_steps(problem)
    lines = []
    for op, operand in terms:
        result = apply(value, op, operand)
        lines.append(f"{value}{op}{operand}={result}")
        value = result
    return lines


@dataclass(frozen=True)
class StepLine:
    """One solution line `left op operand=result` as written."""

    left: int
    op: str
    operand: int
    result: int


def read_step_line(line: str) -> StepLine | None:
    """The step a solution line writes; None when the line is not of the form `left op operand=result`."""
    found = STEP_LINE.match(line)
    if found is None:
        return None
    return StepLine(int(found.group(1)), found.group(2), int(found.group(3)), int(found.group(4)))


ANSWER_WORD = "answer"


def units_first_line(step: StepLine) -> str:
    """A step written units digit first (the recompute check's form): 112-18=94 -> "211-810=490"."""
    return f"{units_first(step.left)}{step.op}{units_first(step.operand)}={units_first(step.result)}"


def read_units_first(text: str) -> int:
    """A number written units digit first, as a number: "490" -> 94."""
    return int(text.strip()[::-1])


def answer_line(answer: str) -> str:
    """The check's answer line for a boxed answer: `answer 471` for 174 (text that is not a number as written)."""
    return f"{ANSWER_WORD} {units_first(int(answer)) if answer.isdigit() else answer}"
