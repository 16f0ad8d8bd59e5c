"""The thinking trace of the arithmetic task's thinker: it solves the problem, then checks its answer by solving it
again from the start (the problem written again first); while no two of its solutions agree it writes "wait" and
solves once more. Its answer, after the trace, is the one two solutions agree on; a trace that ends (or is cut)
before any two agree answers with its first solution's answer.

    Compute left to right: 28*4-18+80.            the prompt
    28*4=112                                      a solution, as the default writes it: the trace opens with the
    112-18=93                                     completion (no start marker: the default's solutions go wrong
    93+80=173                                     when anything stands between the problem and them)
    wait                                          nothing to compare with yet: solve again,
    Compute left to right: 28*4-18+80.            the problem first: each solution stands right below it, as the
    28*4=112                                      default's solutions always do
    112-18=94
    94+80=174
    wait                                          174 is not 173: solve again
    Compute left to right: 28*4-18+80.
    28*4=112
    112-18=94
    94+80=174
    </think>                                      174 again: two solutions agree
    \\boxed{174}

Solutions sampled apart seldom agree on a wrong answer (one wrong arithmetic line makes a number another solution
seldom reaches), so the answer two of them agree on is right far more often than one solution's; the longer the
thinker may think, the more solutions it can compare. Training builds these traces (`trace`) from solutions the
default really samples and independent ones of the same error rate; the engine reads back the solution a trace's
answer comes from (`final_chain`) to verify it, and the answer a trace holds where it is cut (`current_answer`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...inputs.prompts import PromptConfig
from .chain import apply, problem_steps, read_step_line

THINK_END = "</think>\n"
WAIT_WORD = "wait"
"""The line between two solutions."""
ANSWER_FORCING = "\n</think>\n\\boxed{"
"""What forces the thinker's answer at a cut (the thinking-budget strategies append it to a cut trace)."""


def thinker_prompt_config(base: PromptConfig) -> PromptConfig:
    """The serving prompts of a checkpoint trained on these traces: its markers, its answer forcing, and "wait" as
    the text budget forcing writes where the trace would end (one more solution)."""
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
    """A span of a trace, and whether a model should learn to write it (a wrong line is context, never a target)."""

    text: str
    learn: bool = True


def result_of(lines: list[str]) -> int:
    return read_step_line(lines[-1]).result


def agreed(solutions: list[list[str]]) -> bool:
    """Whether the last solution's answer is one an earlier solution reached."""
    return len(solutions) > 1 and result_of(solutions[-1]) in {result_of(s) for s in solutions[:-1]}


def answering(solutions: list[list[str]]) -> list[str]:
    """The solution a trace's answer comes from: the last one when it agrees with an earlier one, else the first."""
    return solutions[-1] if agreed(solutions) else solutions[0]


def trace(problem: str, solutions: list[list[str]]) -> list[Piece]:
    """The thinking trace of `solutions` (each a full chain of step lines, in the order written): each solution,
    and before every one but the first "wait" and the problem again; then the end of thinking and the answer
    (`answering`). A solution's lines from its first wrong one on are context, never a target. ValueError when a solution is not a chain of the
    problem's shape, or when two solutions agree before the last (the trace stops there)."""
    if not solutions:
        raise ValueError("no solutions")
    pieces = []
    for k, lines in enumerate(solutions):
        if k:
            if agreed(solutions[:k]):
                raise ValueError(f"solution {k} agrees with an earlier one: the trace stops there")
            pieces += [Piece(WAIT_WORD + "\n"), Piece(problem.strip() + "\n")]
        wrong = first_wrong(problem, lines)
        pieces += [Piece(line + "\n", learn=wrong is None or j < wrong) for j, line in enumerate(lines)]
    return pieces + [Piece(THINK_END), Piece(f"\\boxed{{{result_of(answering(solutions))}}}")]


def solutions_in(text: str, complete_only: bool = False) -> list[list[str]]:
    """The solutions a completion holds, in order: the step lines before the end of thinking, between "wait"
    lines (the problem written again is not a step line; a plain solution is one solution). `complete_only`: in
    a trace still open, only those a "wait" closes."""
    body, closed = text.split(THINK_END.strip(), 1)[0], THINK_END.strip() in text
    parts = body.split("\n" + WAIT_WORD + "\n")
    if complete_only and not closed:
        parts = parts[:-1]
    found = [[line.strip() for line in part.split("\n") if read_step_line(line) is not None] for part in parts]
    return [lines for lines in found if lines]


def final_chain(text: str) -> list[str] | None:
    """The solution a thinker's answer comes from (`answering`); None when the text holds no step line."""
    solutions = solutions_in(text)
    return answering(solutions) if solutions else None


def current_answer(text: str) -> int | None:
    """The answer a trace holds so far: that of its complete solutions (`answering`); before the first is complete,
    the result of the last complete line written; None before any."""
    complete = solutions_in(text, complete_only=True)
    if complete:
        return result_of(answering(complete))
    lines = [line for line in text.split("\n")[:-1] if read_step_line(line) is not None]
    return read_step_line(lines[-1]).result if lines else None
