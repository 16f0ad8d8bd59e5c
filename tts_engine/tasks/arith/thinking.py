"""The thinking trace of the arithmetic task's thinker: solve, check every line units digit first, fix the first
wrong line, check again; the answer after the trace.

    Compute left to right: 28*4-18+80.          the prompt
    <think>
    28*4=112                                    the solution, one line per operation
    112-18=93
    93+80=173
    check 820*400-810+080                       the problem restated units digit first (the recompute form)
    820*400=211 vs 211                          each line recomputed units first, beside what the line wrote
    211-810=490 vs 390                          they differ: the line is wrong
    wait
    112-18=94                                   the wrong line fixed from the check, then solved on
    94+80=174
    check                                       the fixed lines after the first one, checked again
    490+080=471 vs 471
    </think>
    \\boxed{174}

The check of a line recomputes the value carried into it with the problem's operation and operand (so a wrong
result, carried value or operand all show as a different result), and the trace stops checking at the first line
that differs. Training builds these traces (`trace`) from chains the default really sampled; the engine reads a
trace's final chain back (`final_chain`) to verify it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .chain import apply, problem_steps, read_step_line
from .recompute import restate, units_first

THINK_START = "<think>\n"
THINK_END = "</think>\n"
CHECK_WORD = "check"
WAIT_WORD = "wait"
ANSWER_FORCING = "\n</think>\n\\boxed{"
"""What forces the thinker's answer at a cut (the thinking-budget strategies append it to a cut trace)."""


def check_line(carried: int, op: str, operand: int, written: int) -> str:
    """One line of a check: the step recomputed units digit first, then the line's own result in the same form."""
    exact = apply(carried, op, operand)
    return f"{units_first(carried)}{op}{units_first(operand)}={units_first(exact)} vs {units_first(written)}"


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
    """A span of a trace, and whether a model should learn to write it (a wrong line is context, never a target)."""

    text: str
    learn: bool = True


def trace(problem: str, chains: list[list[str]]) -> list[Piece]:
    """The thinking trace of `chains` (each a full list of step lines; chain r + 1 starts with chain r's first wrong
    line fixed), the answer after it. Checking stops at each chain's first wrong line; a chain with a wrong line
    and no next chain ends the trace with that chain's answer (unchecked past that line)."""
    start, terms = problem_steps(problem)
    pieces = [Piece(THINK_START)]
    checked = 0  # lines before this index are known right
    for r, lines in enumerate(chains):
        wrong = first_wrong(problem, lines, checked)
        for k in range(checked if r == 0 else checked - 1, len(lines)):
            if r > 0 and k == checked - 1:
                pieces.append(Piece(lines[k] + "\n"))  # the fixed line
            else:
                pieces.append(Piece(lines[k] + "\n", learn=k != wrong))
        header = f"{CHECK_WORD} {restate(problem)}\n" if r == 0 else f"{CHECK_WORD}\n"
        pieces.append(Piece(header))
        last = len(lines) - 1 if wrong is None else wrong
        for k in range(checked, last + 1):
            carried = start if k == 0 else read_step_line(lines[k - 1]).result
            op, operand = terms[k]
            pieces.append(Piece(check_line(carried, op, operand, read_step_line(lines[k]).result) + "\n"))
        if wrong is None or r == len(chains) - 1:
            answer = read_step_line(lines[-1]).result
            return pieces + [Piece(THINK_END), Piece(f"\\boxed{{{answer}}}")]
        pieces.append(Piece(WAIT_WORD + "\n"))
        checked = wrong + 1
    raise ValueError("no chains")


def current_answer(text: str) -> int | None:
    """The answer a trace holds so far: the result of its last complete solution line (a line of the chain, not of
    a check); None before the first one."""
    found = None
    for line in text.split("\n")[:-1]:  # the last piece is not yet a complete line
        step = read_step_line(line)
        if step is not None:
            found = step.result
    return found


def final_chain(problem: str, text: str) -> list[str] | None:
    """The chain a thinker's trace ends with: its solution lines, each fix replacing the lines from the one its check
    found wrong. None when the text is not such a trace."""
    if THINK_START.strip() not in text:
        return None
    body = text.split(THINK_START.strip(), 1)[1].split(THINK_END.strip(), 1)[0]
    chain: list[str] = []
    checked = 0  # chain index the current check block starts at
    checks = 0
    fix_at: int | None = None
    for line in body.split("\n"):
        line = line.strip()
        if line.startswith(CHECK_WORD):
            checks = 0
        elif " vs " in line:
            checks += 1
        elif line == WAIT_WORD:
            fix_at = checked + checks - 1
            checked = fix_at + 1
        elif read_step_line(line) is not None:
            if fix_at is not None:
                chain = chain[:fix_at]
                fix_at = None
            chain.append(line)
    return chain or None
