"""Where a thinker's wrong samples go wrong: the first line of each one's final chain (the chain its trace ends with,
`tasks/arith/thinking.final_chain`) that differs from the exact solution, by kind; and what its check did, sample
by sample: the answer of the solution it wrote first against the answer it gave.

    python scripts/thinker_errors.py RESULTS.jsonl [RESULTS.jsonl ...]

RESULTS is `tts solve` of arithmetic-task problems with a reference (any model and strategy; a solution without a
trace is read as its lines). Kinds: operand (the line's operation or operand is not the problem's next one), carry
(its left side is not the line before's result), arithmetic (the line's result is wrong; in a trace, its check
passed it or fixed it wrongly), too many / too few lines, no chain
(no trace to read), answer (every line right, the answer after the trace not). What the checks did: the solution
written first (before the first check) right and kept or spoiled, or wrong and fixed or not.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from tts_engine.tasks.arith.chain import apply, problem_steps, read_step_line
from tts_engine.tasks.arith.thinking import CHECK_START, THINK_START, final_chain


def plain_chain(text: str) -> list[str]:
    """The step lines of a solution written without a trace (the default's), up to its boxed answer."""
    return [line.strip() for line in text.split("\\boxed")[0].split("\n") if read_step_line(line) is not None]


def error_kind(problem: str, text: str) -> str:
    """What the first wrong line of the sample's final chain (or of a plain solution's lines) got wrong."""
    chain = final_chain(text) if THINK_START.strip() in text else plain_chain(text)
    if not chain:
        return "no chain"
    value, terms = problem_steps(problem)
    for k, line in enumerate(chain):
        step = read_step_line(line)
        if k >= len(terms):
            return "too many lines"
        op, operand = terms[k]
        if step.left != value:
            return "carry"
        if (step.op, step.operand) != (op, operand):
            return "operand"
        if step.result != apply(value, op, operand):
            return "arithmetic"
        value = step.result
    return "too few lines" if len(chain) < len(terms) else "answer"


def check_outcome(problem: str, answer: str, text: str, correct: bool) -> str:
    """What the trace's checks did to the solution the thinker wrote first (its lines before the first check)."""
    first = final_chain(text.split("\n" + CHECK_START, 1)[0])
    if not first or len(first) != len(problem_steps(problem)[1]):
        return "no whole solution"
    if str(read_step_line(first[-1]).result) == answer.strip():
        return "right solution kept" if correct else "right solution spoiled"
    return "wrong solution fixed" if correct else "wrong solution not fixed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+")
    for path in parser.parse_args().results:
        records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        kinds = Counter(
            "right" if s.get("correct") else error_kind(r["problem"], s["text"])
            for r in records
            for s in r.get("samples", [])
        )
        print(f"{path}: {sum(kinds.values())} samples; " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
        checks = Counter(
            check_outcome(r["problem"], str(r.get("reference", "")), s["text"], bool(s.get("correct")))
            for r in records
            for s in r.get("samples", [])
        )
        if set(checks) != {"no whole solution"}:  # a run of a model that thinks
            print("  the checks: " + ", ".join(f"{k} {v}" for k, v in checks.most_common()))


if __name__ == "__main__":
    main()
