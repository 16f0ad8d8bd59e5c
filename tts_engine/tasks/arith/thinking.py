"""The thinking trace of the arithmetic task's thinker: it solves the problem as the default does, then checks its
solution the way the recompute verifier does, the check now written by the thinker itself: the problem again with
every number units digit first, then every step recomputed in that form. Its answer, after the trace, is the
check's, written back most significant digit first; a trace cut (or ended) before the check's answer line holds its
solution's answer.

    Compute left to right: 28*4-18+80.            the prompt
    28*4=112                                      the solution, as the default writes it: the trace opens with the
    112-18=93                                     completion (no start marker: the default's solutions go wrong
    93+80=173                                     when anything stands between the problem and them)
    Check units first.                            the check, as the recompute verifier reads it (tasks/arith/
    820*400-810+080                               recompute.py): the problem, every number units digit first;
    820*400=211                                   each step recomputed in that form: every digit of a result
    211-810=490                                   depends only on the digits at its place and the carry before
    490+080=471                                   it, which the default computes far more reliably
    answer 471
    </think>
    \\boxed{174}                                  the check's answer: 112-18 is 94, not 93

Why it pays: the default solves a fresh set units digit first, the problem given in that form, far more often than
in its own solutions (docs/thinking.md, "The thinker"); what it cannot do untrained is write that form of the
problem itself, or recompute with its own solution above. The longer the thinker may think, the more of its check
it writes: a trace cut before the check's answer answers with the solution's. Training builds these traces
(`trace`) from solutions the default really samples; the engine reads back the chain a trace's answer comes from
(`final_chain`) to verify it, and the answer a trace holds where it is cut (`current_answer`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...inputs.prompts import PromptConfig
from .chain import (
    ANSWER_WORD,
    STEP_LINE,
    answer_line,
    apply,
    exact_chain,
    problem_steps,
    read_step_line,
    read_units_first,
    restate,
    units_first_line,
)

THINK_END = "</think>\n"
CHECK_REQUEST = "Check units first.\n"
"""The line that opens the check (the recompute verifier's request, without the end token before it)."""
WAIT_WORD = "wait"
"""What budget forcing writes where the trace would end (the thinker then checks again)."""
ANSWER_FORCING = "\n</think>\n\\boxed{"
"""What forces the thinker's answer at a cut (the thinking-budget strategies append it to a cut trace)."""


def thinker_prompt_config(base: PromptConfig) -> PromptConfig:
    """The serving prompts of a checkpoint trained on these traces: its markers, its answer forcing, and "wait" as
    the text budget forcing writes where the trace would end."""
    return replace(
        base,
        think_start="",  # the trace opens where the completion starts
        think_end=THINK_END.strip(),
        answer_forcing=ANSWER_FORCING,
        continue_text=WAIT_WORD + "\n",
    )


def first_wrong(problem: str, lines: list[str], start: int = 0) -> int | None:
    """Index of the first of `lines[start:]` whose result differs from the exact step (the value carried from the
    line before, the problem's operation and operand); None when every line is right. ValueError when a line is
    missing or is not a step (traces are built only from chains of the task's shape)."""
    value, terms = problem_steps(problem)
    if len(lines) != len(terms):
        raise ValueError(f"a chain of {len(lines)} lines for {len(terms)} operations")
    for k, (line, (op, operand)) in enumerate(zip(lines, terms)):
        step = read_step_line(line)
        if step is None:
            raise ValueError(f"not a step line: {line!r}")
        exact = apply(value, op, operand)
        if k >= start and step.result != exact:
            return k
        value = step.result if k < start else exact
    return None


@dataclass(frozen=True)
class Piece:
    """A span of a trace, the part of the trace it is, and whether a model should learn to write it (a wrong line
    of the solution is context, never a target)."""

    text: str
    part: str
    learn: bool = True


def result_of(lines: list[str]) -> int:
    return read_step_line(lines[-1]).result


def check_pieces(problem: str) -> list[Piece]:
    """The exact check of `problem`: the request, the problem units digit first, each step in that form, the answer."""
    steps = [read_step_line(line) for line in exact_chain(problem)]
    return [
        Piece(CHECK_REQUEST, "check request"),
        Piece(restate(problem) + "\n", "problem units first"),
        *(Piece(units_first_line(step) + "\n", "check steps") for step in steps),
        Piece(answer_line(str(steps[-1].result)) + "\n", "check answer"),
    ]


def trace(problem: str, solution: list[str]) -> list[Piece]:
    """The thinking trace of `solution` (a full chain of step lines): the solution, its lines from the first wrong one
    on context, never targets; the exact check; the end of thinking and the check's answer. ValueError when the
    solution is not a chain of the problem's shape."""
    wrong = first_wrong(problem, solution)
    pieces = [Piece(line + "\n", "solution", learn=wrong is None or j < wrong) for j, line in enumerate(solution)]
    answer = result_of(exact_chain(problem))
    return (
        pieces + check_pieces(problem) + [Piece(THINK_END, "end of thinking"), Piece(f"\\boxed{{{answer}}}", "answer")]
    )


@dataclass(frozen=True)
class Reading:
    """What a completion holds: its solution's step lines, and its check's steps (read back most significant digit
    first) and answer (None until the answer line is complete)."""

    solution: list[str]
    check: list[str]
    check_answer: int | None


def read_trace(text: str) -> Reading:
    """The parts of a thinker's completion (or of a plain solution: all of it is the solution). Only complete
    lines (ended by a line break, or by the end of thinking) are read."""
    body = text.split(THINK_END.strip(), 1)[0]
    lines = [line.strip() for line in (body.split("\n") if THINK_END.strip() in text else body.split("\n")[:-1])]
    at = lines.index(CHECK_REQUEST.strip()) if CHECK_REQUEST.strip() in lines else len(lines)
    solution = [line for line in lines[:at] if read_step_line(line) is not None]
    check, check_answer = [], None
    for line in lines[at + 1 :]:
        step, (word, _, number) = most_significant_first(line), line.partition(" ")
        if step is not None:
            check.append(step)
        elif word == ANSWER_WORD and number.isdigit():
            check_answer = read_units_first(number)
            break
    return Reading(solution, check, check_answer)


def most_significant_first(line: str) -> str | None:
    """A check step (units digit first) as a solution line: "211-810=490" -> "112-18=94"; None for another line."""
    found = STEP_LINE.match(line)
    if found is None:
        return None
    left, op, operand, result = found.groups()
    return f"{read_units_first(left)}{op}{read_units_first(operand)}={read_units_first(result)}"


def final_chain(text: str) -> list[str] | None:
    """The chain a thinker's answer comes from: its check's steps once the check has answered, else its solution;
    None when the text holds no step line."""
    reading = read_trace(text)
    chain = reading.check if reading.check_answer is not None and reading.check else reading.solution
    return chain or None


def current_answer(text: str) -> int | None:
    """The answer a trace holds so far: its check's once the check's answer line is complete, else the result of the
    last complete line of its solution; None before any."""
    reading = read_trace(text)
    if reading.check_answer is not None:
        return reading.check_answer
    return read_step_line(reading.solution[-1]).result if reading.solution else None
