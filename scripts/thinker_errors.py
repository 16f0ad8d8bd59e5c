"""Where a thinker's wrong samples go wrong: the first line of each one's final chain (the solution its answer comes
from, `tasks/arith/thinking.final_chain`) that differs from the exact solution, by kind; and what solving again did,
sample by sample: the answer of the solution it wrote first against the answer it gave, and how often a solution
repeats the wrong answer of the one before it.

    python scripts/thinker_errors.py RESULTS.jsonl [RESULTS.jsonl ...]

RESULTS is `tts solve` of arithmetic-task problems with a reference (any model and strategy; a solution without a
trace is read as its lines). Kinds: operand (the line's operation or operand is not the problem's next one), carry
(its left side is not the line before's result), arithmetic (the line's result is wrong), too many / too few
lines, no chain (no step line to read), answer (every line right, the answer after the trace not). What solving
again did: the solution written first right and kept or spoiled, or wrong and fixed or not; a thinker whose
solutions copied the one before would agree on its wrong answers.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from tts_engine.tasks.arith.chain import apply, problem_steps, read_step_line
from tts_engine.tasks.arith.thinking import THINK_END, final_chain, solutions_in


def error_kind(problem: str, text: str) -> str:
    """What the first wrong line of the sample's final chain (or of a plain solution's lines) got wrong."""
    chain = final_chain(text)
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
    """What solving again did to the solution the thinker wrote first."""
    solutions = solutions_in(text, complete_only=True) or solutions_in(text)
    if not solutions or len(solutions[0]) != len(problem_steps(problem)[1]):
        return "no whole solution"
    if str(read_step_line(solutions[0][-1]).result) == answer.strip():
        return "right solution kept" if correct else "right solution spoiled"
    return "wrong solution fixed" if correct else "wrong solution not fixed"


def repeats(answer: str, text: str) -> tuple[int, int]:
    """(solutions after a wrong one, how many of them reached that same wrong answer)."""
    results = [read_step_line(s[-1]).result for s in solutions_in(text, complete_only=True)]
    after_wrong = [(a, b) for a, b in zip(results, results[1:]) if str(a) != answer.strip()]
    return len(after_wrong), sum(a == b for a, b in after_wrong)


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
        if any(THINK_END.strip() in s["text"] for r in records for s in r.get("samples", [])):  # a model that thinks
            print("  solving again: " + ", ".join(f"{k} {v}" for k, v in checks.most_common()))
            pairs = [repeats(str(r.get("reference", "")), s["text"]) for r in records for s in r.get("samples", [])]
            counts = [len(solutions_in(s["text"], complete_only=True)) for r in records for s in r.get("samples", [])]
            print(
                f"  solutions per sample {sum(counts) / max(len(counts), 1):.2f}; of {sum(p[0] for p in pairs)} "
                f"written after a wrong one, {sum(p[1] for p in pairs)} repeat its answer"
            )


if __name__ == "__main__":
    main()
