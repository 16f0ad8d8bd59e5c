"""The synthetic multi-step task: chain arithmetic solved one operation per line, answer in \\boxed{}.

A problem is "Compute left to right: 28*4-18+80." and its solution writes every step out in full:

    28*4=112
    112-18=94
    94+80=174
    \\boxed{174}

Operations are evaluated left to right (the problem says so), one per line. Levels add operations and widen
the numbers: level L has L + 1 operations; running values stay under 100 (levels 1-2), 200 (level 3), 1000
(levels 4-5) or 10000 (levels 6 and above); start values and +/- operands go up to 30 (levels 1-3), then to a
tenth of the cap (99, then 999). `max_value` overrides the cap for every level (`--max-value 999` at levels 6-8:
longer chains of the trained magnitudes). Subtractions never go below zero and multiplications (by 2-9) never
pass the cap, so every answer is a non-negative integer and the engine's answer extraction and equivalence
classes apply unchanged.

Bundled evaluation set (the engine's default problem set), reproduced by
    python -P -m tts_engine.tasks.arith.generator --out tts_engine/assets/problems/arith.jsonl
and the levels 1-5 set it replaced (what the earlier defaults and Tango pair were trained for) by
    python -P -m tts_engine.tasks.arith.generator --levels 1-5 --per-level 40 --out tts_engine/assets/problems/arith_levels1-5.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

from tts_engine.tasks.arith.chain import apply

LEVELS = (1, 2, 3, 4, 5, 6, 7, 8)
"""The bundled set's levels: 2 to 9 operations, from what the default solves almost always to what it solves
less than half the time at temperature 1."""
EVAL_SEED = 20250505
EVAL_PER_LEVEL = 25


@dataclass(frozen=True)
class Problem:
    """One task instance."""

    id: str
    """Stable identifier, e.g. "arith-L3-007"."""
    problem: str
    """Problem text shown to the model."""
    answer: str
    """Reference answer (a non-negative integer, as text)."""
    level: int
    """Difficulty: level L has L + 1 operations."""
    solution: str
    """Reference step-by-step solution ending in \\boxed{answer}."""

    def to_record(self, with_solution: bool = False) -> dict:
        record = {"id": self.id, "problem": self.problem, "answer": self.answer, "level": self.level}
        if with_solution:
            record["solution"] = self.solution
        return record


def num_operations(level: int) -> int:
    if level < 1:
        raise ValueError(f"level must be >= 1, got {level}")
    return level + 1


def max_value(level: int) -> int:
    """Largest running value of a level: 99 at levels 1-2, 199 at level 3, 999 at 4-5, 9999 above."""
    return 99 if level <= 2 else 199 if level == 3 else 999 if level <= 5 else 9999


def solution_budget(levels) -> int:
    """Tokens (characters) a solution of any of `levels` can need, with room to spare, and at least 96: each
    line `left op operand=result` and the boxed answer at the level's widest numbers."""
    widest = 0
    for level in levels:
        top = max_value(level)
        digits, operand_digits = len(str(top)), len(str(_operand_limit(level, top)))
        widest = max(widest, num_operations(level) * (2 * digits + operand_digits + 3) + len("\\boxed{}") + digits)
    return max(96, widest + 16)


def _operand_limit(level: int, top: int) -> int:
    """Largest +/- operand and start value: 30 up to level 3, then a tenth of the running cap `top` (99 under 1000,
    999 under 10000); never above half the cap."""
    limit = 30 if level <= 3 else (top + 1) // 10 - 1
    return max(2, min(limit, top // 2))


def _next_op(rng: random.Random, value: int, level: int, top: int) -> tuple[str, int]:
    """One operation that keeps the running value in [0, top]."""
    choices = ["+", "-"]
    if 0 < value * 2 <= top:
        choices.append("*")
    op = rng.choice(choices)
    if op == "*":
        return op, rng.randint(2, min(9, top // value))
    if op == "+" and value >= top:
        op = "-"
    if op == "-":
        if value == 0:
            op = "+"
        else:
            return op, rng.randint(1, min(value, _operand_limit(level, top)))
    return op, rng.randint(1, min(_operand_limit(level, top), top - value))


def make_problem(rng: random.Random, level: int, problem_id: str = "", cap: int | None = None) -> Problem:
    """One problem of `level` drawn from `rng`, with its reference solution; `cap` overrides the level's
    largest running value (`max_value(level)`)."""
    top = max_value(level) if cap is None else cap
    if top < 9:
        raise ValueError(f"max value must be >= 9, got {top}")
    steps = num_operations(level)
    value = start = rng.randint(2, _operand_limit(level, top))
    expression, lines = str(start), []
    for _ in range(steps):
        op, operand = _next_op(rng, value, level, top)
        result = apply(value, op, operand)
        lines.append(f"{value}{op}{operand}={result}")
        expression += f"{op}{operand}"
        value = result
    lines.append(f"\\boxed{{{value}}}")
    return Problem(
        id=problem_id,
        problem=f"Compute left to right: {expression}.",
        answer=str(value),
        level=level,
        solution="\n".join(lines),
    )


def make_problem_set(
    seed: int = EVAL_SEED, levels=LEVELS, per_level: int = EVAL_PER_LEVEL, cap: int | None = None
) -> list[Problem]:
    """A fixed set: `per_level` problems for each level, the same for the same seed (and `cap`)."""
    rng = random.Random(seed)
    return [make_problem(rng, level, f"arith-L{level}-{k:03d}", cap) for level in levels for k in range(per_level)]


class ProblemStream:
    """An endless stream of training problems (levels drawn by `level_weights`), skipping held-out texts."""

    def __init__(self, seed: int, levels=LEVELS, level_weights=None, exclude: set[str] | None = None):
        self.rng = random.Random(seed)
        self.levels = list(levels)
        self.weights = list(level_weights) if level_weights else None
        self.exclude = exclude or set()

    def next(self) -> Problem:
        while True:
            level = self.rng.choices(self.levels, weights=self.weights)[0]
            p = make_problem(self.rng, level)
            if p.problem not in self.exclude:
                return p

    def batch(self, size: int) -> list[Problem]:
        return [self.next() for _ in range(size)]


def load_problems(path: str | Path) -> list[dict]:
    """Records of a JSONL problem file as dicts (kept for training modules that index records by field;
    new code uses tts_engine.inputs.problems.load_problems)."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def held_out_texts() -> set[str]:
    """Problem texts of every bundled evaluation set (the default, and the levels 1-5 set before it), which training
    streams skip."""
    from tts_engine.inputs.problems import load_problems as load

    return {p.text for path in sorted(bundled_problems_path().parent.glob("arith*.jsonl")) for p in load(path)}


def first_per_level(problems: list, k: int) -> list:
    """The first `k` problems of each level, in file order (a fixed subset, chosen before any model is seen).
    Takes tts_engine.inputs.problems.Problem objects (level in .fields) or record dicts."""
    taken: dict = {}
    out = []
    for p in problems:
        level = p.fields.get("level") if hasattr(p, "fields") else p.get("level")
        taken[level] = taken.get(level, 0) + 1
        if taken[level] <= k:
            out.append(p)
    return out


def bundled_problems_path() -> Path:
    """The engine's default problem set, shipped inside the package (tts_engine.inputs.models holds asset paths)."""
    from tts_engine.inputs.models import DEFAULT_PROBLEMS

    return DEFAULT_PROBLEMS / "arith.jsonl"


def parse_levels(text: str) -> tuple[int, ...]:
    """'1-5' or '1,2,6-8' -> the levels, each >= 1; a clear error otherwise."""
    levels: list[int] = []
    try:
        for part in filter(None, (p.strip() for p in text.split(","))):
            low, _, high = part.partition("-")
            levels += range(int(low), int(high or low) + 1)
    except ValueError:
        raise ValueError(f"levels must be like 1-5 or 1,2,6-8, got {text!r}") from None
    if not levels or min(levels) < 1:
        raise ValueError(f"levels must be integers >= 1, got {text!r}")
    return tuple(dict.fromkeys(levels))


def write_problem_set(
    path: str | Path,
    seed: int = EVAL_SEED,
    per_level: int = EVAL_PER_LEVEL,
    levels: tuple[int, ...] = LEVELS,
    cap: int | None = None,
) -> Path:
    """`per_level` problems of each level (default: the bundled set's levels 1-8; any level >= 1 is L + 1 operations);
    `cap` overrides every level's largest running value."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(p.to_record()) for p in make_problem_set(seed, levels, per_level, cap)]
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the bundled evaluation set of the arithmetic task.")
    parser.add_argument("--out", default="tts_engine/assets/problems/arith.jsonl")
    parser.add_argument("--seed", type=int, default=EVAL_SEED)
    parser.add_argument("--per-level", type=int, default=EVAL_PER_LEVEL)
    parser.add_argument("--levels", type=parse_levels, default=LEVELS, help="e.g. 1-8 (default) or 6-8")
    parser.add_argument("--max-value", type=int, default=None, help="largest running value (default: by level)")
    args = parser.parse_args()
    print(write_problem_set(args.out, args.seed, args.per_level, args.levels, args.max_value))


if __name__ == "__main__":
    main()
