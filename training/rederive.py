"""The re-derivation verification form of the arithmetic task, and solutions with planted errors.

A verifier checks a solution line by line in a form the solution does not contain, so that it has to
compute rather than copy. For step i it takes the operation and operand from the *problem*, the value the
solution carried into the step (its previous line's result, or the start value) and the result the solution
wrote, and re-derives one from the others:

    operation   solution line    verification line         compares
    a + b       112+18=130       18+112=130 vs 130 +       b + a (commuted) with the written result
    a * b       28*4=112         4*28=112 vs 112 +         b * a (commuted) with the written result
    a - b       112-18=94        94+18=112 vs 112 +        result + b (the inverse) with the value carried in

Then the answer line (`boxed 174 vs 174 +`: the boxed answer against the last line's result) and the verdict
(`verdict:Yes` when every mark is "+"). A step whose result cannot be read is marked `? -` and the check stops
there (verdict No). So for `Compute left to right: 28*4-18+80.` and the reference solution, the whole check is

    4*28=112 vs 112 +
    94+18=112 vs 112 +
    80+94=174 vs 174 +
    boxed 174 vs 174 +
    verdict:Yes

Every number the check writes is computed here from the problem; training uses these texts as targets.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from tts_engine.tasks.arith.chain import apply, problem_steps

LINE_RESULT = re.compile(r"=\s*(\d+)\s*$")
BOXED_LINE = re.compile(r"^\\boxed\{(\d+)\}$")
UNREADABLE = "? -"
VERDICT_PREFIX = "verdict:"


@dataclass(frozen=True)
class Check:
    """The verification text of one solution and what it decided."""

    text: str
    """The check, one line per step, the answer line and the verdict (no end token)."""
    marks: tuple[bool, ...]
    """Per written line (steps, then the answer line): True when the step checked out."""
    verdict: bool
    """True when every step and the answer checked out."""
    disagrees: tuple[bool, ...]
    """Per written line: True where the line's computed part differs from what the solution wrote there (copying
    the solution would be wrong)."""


def problem_text(start: int, steps: list[tuple[str, int]]) -> str:
    """The task problem of a start value and (operation, operand) list (the inverse of `problem_steps`)."""
    return f"Compute left to right: {start}" + "".join(f"{op}{operand}" for op, operand in steps) + "."


@dataclass(frozen=True)
class StepCheck:
    """One solution step as its check sees it: the problem's operation and operand, the value the solution
    carried into the step (its previous line's result, or the start value) and the result it wrote."""

    op: str
    operand: int
    carried: int
    written: int

    @property
    def in_solution_order(self) -> str:
        """The sum or product the check re-derives, written as a solution line would start (what a model is asked
        to compute as its next line): `carried op operand`, or for a subtraction its inverse `written+operand`."""
        return f"{self.written}+{self.operand}" if self.op == "-" else f"{self.carried}{self.op}{self.operand}"

    def exact(self) -> int:
        """The re-derived value, computed here."""
        return self.written + self.operand if self.op == "-" else apply(self.carried, self.op, self.operand)

    def line(self, derived: int | None) -> tuple[str, bool]:
        """The verification line for a re-derived value (None: none could be read) and its mark."""
        if self.op == "-":
            expr, against = self.in_solution_order, self.carried
        else:
            expr, against = f"{self.operand}{self.op}{self.carried}", self.written
        ok = derived == against
        return f"{expr}={'?' if derived is None else derived} vs {against} {'+' if ok else '-'}", ok


@dataclass(frozen=True)
class ReadSolution:
    """What a check reads off a solution: its non-blank lines and its steps up to the first unreadable one."""

    lines: list[str]
    steps: list[StepCheck]
    """Every step whose result could be read, in order, up to the first that could not."""
    complete: bool
    """Every step of the problem could be read."""
    carried: int
    """The value the last read step carried out (the start value when none was read)."""

    def recompute_queries(self, problem: str) -> list[tuple[str, str]]:
        """Per step, (problem, solution text) after which a model computes the step's re-derivation as its next
        solution line, where its problem says that line comes: the lines before the step, then
        `carried op operand=`; for a subtraction, the step's own line, then `written+operand=`, asked of the
        problem with `+operand` put after the step (so the line is the one the problem calls for)."""
        start, ops = problem_steps(problem)
        queries = []
        for k, step in enumerate(self.steps):
            asked, before = problem, self.lines[:k]
            if step.op == "-":
                inverse = ops[: k + 1] + [("+", step.operand)] + ops[k + 1 :]
                asked = problem_text(start, inverse)
                before = self.lines[: k + 1]
            queries.append((asked, "".join(line + "\n" for line in before) + step.in_solution_order + "="))
        return queries


def read_solution(problem: str, solution: str) -> ReadSolution:
    """The steps of `solution` (the text after the prompt) for a task `problem`."""
    start, ops = problem_steps(problem)
    lines = [line.strip() for line in solution.strip().split("\n") if line.strip()]
    steps, carried = [], start
    for k, (op, operand) in enumerate(ops):
        found = LINE_RESULT.search(lines[k]) if k < len(lines) else None
        if found is None:
            return ReadSolution(lines, steps, False, carried)
        steps.append(StepCheck(op, operand, carried, int(found.group(1))))
        carried = steps[-1].written
    return ReadSolution(lines, steps, True, carried)


def rederive(problem: str, solution: str, derived: list[int | None] | None = None) -> Check:
    """The check of `solution` (the text after the prompt) for a task `problem`. `derived`: the re-derived value
    of each read step (None where none could be read); by default computed here, exactly. A model's own
    recomputations (`ReadSolution.recompute_queries`) give the check that model would write, marks and all."""
    return check_read(read_solution(problem, solution), derived)


def check_read(read: ReadSolution, derived: list[int | None] | None = None) -> Check:
    """`rederive` of a solution already read."""
    values = [step.exact() for step in read.steps] if derived is None else derived
    if len(values) != len(read.steps):
        raise ValueError(f"need one derived value per read step ({len(read.steps)}), got {len(values)}")
    out, marks = [], []
    for step, value in zip(read.steps, values):
        line, ok = step.line(value)
        out.append(line)
        marks.append(ok)
    if not read.complete:
        out.append(UNREADABLE)
        marks.append(False)
        return _finish(out, marks)
    boxed = BOXED_LINE.match(read.lines[-1]) if len(read.lines) == len(read.steps) + 1 else None
    if boxed is None:
        out.append(f"boxed {UNREADABLE}")
        marks.append(False)
    else:
        ok = int(boxed.group(1)) == read.carried
        out.append(f"boxed {boxed.group(1)} vs {read.carried} {'+' if ok else '-'}")
        marks.append(ok)
    return _finish(out, marks)


def with_verdict(check: Check, verdict: bool) -> Check:
    """The check with its verdict line replaced (an outcome-labelled target); its marks stay as computed."""
    text = check.text.rsplit("\n", 1)[0] + "\n" + VERDICT_PREFIX + ("Yes" if verdict else "No")
    return replace(check, text=text, verdict=verdict)


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
