"""The thinking trace of the arithmetic task's thinker: each line of the solution carries its own check, written units
digit first right after it, and what is left of the problem; a wrong line is fixed and solving goes on; the answer
comes after the trace.

    Compute left to right: 28*4-18+80.            the prompt
    <think>
    28*4=112|820*400=211 ok|-18+80                a solution line|its check|the operations left
    112-18=93|211-810=490 no                      its check: the step units digit first, then ok or no
    wait
    112-18=94|211-810=490 ok|+80                  the wrong line fixed from its check
    94+80=174|490+080=471 ok|end
    </think>
    \\boxed{174}

A check recomputes the line's own step (its left side, operation and operand, each units digit first: the form the
default's recompute verifier reads) and says whether the line's result matches. Everything a line needs is on the line before it: its left side is that line's result, its operation and
operand the first of the operations left. Training builds these traces (`trace`) from chains the default really
sampled; the engine reads a trace's final chain back (`final_chain`) to verify it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...inputs.prompts import PromptConfig
from .chain import apply, problem_steps, read_step_line, units_first

THINK_START = "<think>\n"
THINK_END = "</think>\n"
OK, NO = "ok", "no"
SEPARATOR = "|"
"""Between a solution line, its check and the operations left."""
LAST = "end"
"""What the last line writes for the operations left."""
WAIT_WORD = "wait"
ANSWER_FORCING = "\n</think>\n\\boxed{"
"""What forces the thinker's answer at a cut (the thinking-budget strategies append it to a cut trace)."""


def thinker_prompt_config(base: PromptConfig) -> PromptConfig:
    """The serving prompts of a checkpoint trained on these traces: its markers, its answer forcing, and "wait" as
    the text budget forcing writes where the trace would end."""
    return replace(
        base,
        think_start=THINK_START.strip(),
        think_end=THINK_END.strip(),
        answer_forcing=ANSWER_FORCING,
        continue_text=WAIT_WORD + "\n",
    )


def check_line(line: str) -> tuple[str, bool]:
    """The check of solution `line`: its step recomputed units digit first, then ok or no; and whether the line's
    arithmetic is right."""
    step = read_step_line(line)
    if step is None:
        raise ValueError(f"not a step line: {line!r}")
    exact = apply(step.left, step.op, step.operand)
    right = step.result == exact
    check = f"{units_first(step.left)}{step.op}{units_first(step.operand)}={units_first(exact)}"
    return f"{check} {OK if right else NO}", right


def operations_left(terms: list[tuple[str, int]], line: int) -> str:
    """The operations after solution line `line` (0-based) as the problem writes them, or `LAST` after the last."""
    return "".join(f"{op}{operand}" for op, operand in terms[line + 1 :]) or LAST


def solution_part(line: str) -> str:
    """The solution step of a trace line (the part before its check)."""
    return line.split(SEPARATOR, 1)[0]


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
    line fixed), the answer after it. Every line carries its check, and a right one the operations left; at a line the check finds wrong the trace writes
    "wait" and goes on with the next chain from that line. ValueError when the checks would not find the chains'
    errors (a carried value or an operand copied wrong: the check reads the line's own) or the last chain is
    wrong."""
    terms = problem_steps(problem)[1]
    pieces = [Piece(THINK_START)]
    at = 0  # the line the current chain is written from
    for r, lines in enumerate(chains):
        wrong = first_wrong(problem, lines, at)
        for k in range(at, len(lines)):
            check, right = check_line(lines[k])
            if right != (k != wrong):
                raise ValueError(f"the check of line {k} ({lines[k]!r}) does not find what the chain gets wrong")
            if not right:
                pieces += [Piece(lines[k], learn=False), Piece(SEPARATOR + check + "\n")]
                break
            pieces += [Piece(lines[k]), Piece(SEPARATOR + check + SEPARATOR + operations_left(terms, k) + "\n")]
        if wrong is None:
            answer = read_step_line(lines[-1]).result
            return pieces + [Piece(THINK_END), Piece(f"\\boxed{{{answer}}}")]
        if r == len(chains) - 1:
            raise ValueError("the last chain is wrong: no trace ends right")
        pieces.append(Piece(WAIT_WORD + "\n"))
        at = wrong
    raise ValueError("no chains")


def current_answer(text: str) -> int | None:
    """The answer a trace holds so far: the result of its last complete solution line (a line of the chain, not of
    a check); None before the first one."""
    found = None
    for line in text.split("\n")[:-1]:  # the last piece is not yet a complete line
        step = read_step_line(solution_part(line))
        if step is not None:
            found = step.result
    return found


def final_chain(text: str) -> list[str] | None:
    """The chain a thinker's trace ends with: its solution lines, each line after a "wait" replacing the line the
    check before it found wrong. None when the text is not such a trace."""
    if THINK_START.strip() not in text:
        return None
    body = text.split(THINK_START.strip(), 1)[1].split(THINK_END.strip(), 1)[0]
    chain: list[str] = []
    fixing = False
    for line in body.split("\n"):
        line = solution_part(line).strip()
        if line == WAIT_WORD:
            fixing = bool(chain)
        elif read_step_line(line) is not None:
            if fixing:
                chain[-1] = line
                fixing = False
            else:
                chain.append(line)
    return chain or None
