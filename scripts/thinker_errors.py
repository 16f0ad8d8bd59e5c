"""Where a thinker's wrong samples go wrong: the first line of each one's final chain (the solution its answer comes
from, `tasks/arith/thinking.final_chain`) that differs from the exact solution, by kind; and what its check did,
sample by sample: whether its solution was right against whether its answer (the check's) is, and how often the
check wrote the problem units digit first exactly.

    python scripts/thinker_errors.py RESULTS.jsonl [RESULTS.jsonl ...]

RESULTS is `tts solve` of arithmetic-task problems with a reference (any model and strategy; a solution without a
trace is read as its lines). Kinds: operand (the line's operation or operand is not the problem's next one), carry
(its left side is not the line before's result), arithmetic (the line's result is wrong), too many / too few
lines, no chain (no step line to read), answer (every line right, the answer after the trace not). What the check
did: the solution right and its answer kept or spoiled, or wrong and fixed or not (or no whole solution, or no
check answer written).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from tts_engine.tasks.arith.chain import apply, problem_steps, read_step_line, restate
from tts_engine.tasks.arith.thinking import CHECK_REQUEST, THINK_END, final_chain, read_trace


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
    """What the check did to the thinker's solution."""
    reading = read_trace(text)
    if len(reading.solution) != len(problem_steps(problem)[1]):
        return "no whole solution"
    if reading.check_answer is None:
        return "no check answer"
    if str(read_step_line(reading.solution[-1]).result) == answer.strip():
        return "right solution kept" if correct else "right solution spoiled"
    return "wrong solution fixed" if correct else "wrong solution not fixed"


def restated_exactly(problem: str, text: str) -> bool:
    """The check wrote the problem units digit first exactly."""
    return f"{CHECK_REQUEST}{restate(problem)}\n" in text


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
            print("  the check: " + ", ".join(f"{k} {v}" for k, v in checks.most_common()))
            checked = [
                (r["problem"], s["text"]) for r in records for s in r.get("samples", []) if CHECK_REQUEST in s["text"]
            ]
            exact = sum(restated_exactly(p, t) for p, t in checked)
            print(f"  {len(checked)} samples opened the check; {exact} wrote the problem units digit first exactly")


if __name__ == "__main__":
    main()
