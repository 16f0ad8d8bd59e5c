"""The thinking trace of the arithmetic task's thinker: it writes its solution, checks it line by line by recomputing
each step units digit first (the form the default's recompute verifier reads, now written by the model itself),
and at the first line the check rejects it writes "wait", that line fixed from the check and the rest of the chain
again, then checks the new lines; the answer comes after the trace.

    Compute left to right: 28*4-18+80.            the prompt
    <think>
    28*4=112                                      the solution, as the default writes it
    112-18=93
    93+80=173
    check
    28*4=112|820*400=211 ok                       each line again, then its step units digit first, recomputed,
    112-18=93|211-810=490 no                      and whether the line's result matches
    wait
    112-18=94                                     the rejected line fixed from its check (490 is 94), the rest again
    94+80=174
    check
    94+80=174|490+080=471 ok                      the new lines checked
    </think>
    \\boxed{174}

Written units digit first, each digit of a step depends only on the digits at its place and the carry before it,
which a small model computes far more reliably than the solution's own most-significant-first digits; a line's
check reads only that line (copied just before it), so everything it needs is at hand. Training builds these
traces (`trace`) from chains the default really sampled and their fixes; the engine reads a trace's final chain
back (`final_chain`) to verify it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...inputs.prompts import PromptConfig
from .chain import apply, problem_steps, read_step_line, units_first

THINK_START = "<think>\n"
THINK_END = "</think>\n"
CHECK_START = "check\n"
"""The line that starts a check of the lines before it."""
SEPARATOR = "|"
"""Between a copied line and its check."""
OK, NO = "ok", "no"
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
    line fixed): each chain's new lines, then their check up to the first line it rejects, "wait" and the next
    chain from that line; the answer after the last. A solution line from the first wrong one on is context, never
    a target (its copy in the check is learned: a check copies what it checks). ValueError when a check would not
    find its chain's error (a carried value or an operand copied wrong: the check reads the line's own) or the last
    chain is wrong."""
    pieces = [Piece(THINK_START)]
    at = 0  # the line the current chain is written from
    for r, lines in enumerate(chains):
        wrong = first_wrong(problem, lines, at)
        pieces += [Piece(lines[k] + "\n", learn=wrong is None or k < wrong) for k in range(at, len(lines))]
        start = at if r == 0 else at + 1  # a fixed line came from its check: it is not checked again
        if start < len(lines):
            pieces.append(Piece(CHECK_START))
        for k in range(start, len(lines)):
            check, right = check_line(lines[k])
            if right != (k != wrong):
                raise ValueError(f"the check of line {k} ({lines[k]!r}) does not find what the chain gets wrong")
            pieces.append(Piece(lines[k] + SEPARATOR + check + "\n"))
            if not right:
                break
        if wrong is None:
            answer = read_step_line(lines[-1]).result
            return pieces + [Piece(THINK_END), Piece(f"\\boxed{{{answer}}}")]
        if r == len(chains) - 1:
            raise ValueError("the last chain is wrong: no trace ends right")
        pieces.append(Piece(WAIT_WORD + "\n"))
        at = wrong
    raise ValueError("no chains")


def final_chain(text: str, complete_lines_only: bool = False) -> list[str] | None:
    """The chain a thinker's trace holds: its solution lines in order, the lines written after a "wait" replacing
    the chain from the line the check before it rejected. None when the text is not such a trace (or holds no
    solution line). `complete_lines_only`: a last line without its line break is left out (a trace cut there)."""
    if THINK_START.strip() not in text:
        return None
    body = text.split(THINK_START.strip(), 1)[1].split(THINK_END.strip(), 1)[0]
    lines = body.split("\n")
    if complete_lines_only:
        lines = lines[:-1]
    chain: list[str] = []
    unchecked = checked = 0  # the chain's first line no check has read; the line the next check line reads
    rejected = fix_at = None  # the line a check rejected; the line the lines after a "wait" replace the chain from
    for line in (line.strip() for line in lines):
        if line == CHECK_START.strip():
            checked = unchecked
        elif line == WAIT_WORD:
            fix_at, rejected = rejected, None
            unchecked = len(chain) if fix_at is None else fix_at + 1
        elif SEPARATOR in line:
            copied, check = line.split(SEPARATOR, 1)
            step, _, verdict = check.strip().rpartition(" ")
            if read_step_line(copied) is None or read_step_line(step) is None or verdict not in (OK, NO):
                continue
            if verdict == NO and rejected is None:
                rejected = checked
            checked += 1
        elif read_step_line(line) is not None:
            if fix_at is not None:
                chain, fix_at = chain[:fix_at], None
            chain.append(line)
    return chain or None


def current_answer(text: str) -> int | None:
    """The answer a trace holds so far: the result of the last line of the chain it holds (`final_chain` of its
    complete lines); None before the first solution line."""
    chain = final_chain(text, complete_lines_only=True)
    return None if chain is None else read_step_line(chain[-1]).result
