"""Where a thinker's wrong samples go wrong: the first line of each one's final chain (the chain its trace ends with,
`tasks/arith/thinking.final_chain`) that differs from the exact solution, by kind.

    python scripts/thinker_errors.py RESULTS.jsonl [RESULTS.jsonl ...]

RESULTS is `tts solve` of arithmetic-task problems with a reference (any model and strategy). Kinds: operand (the
line's operation or operand is not the problem's next one), carry (its left side is not the line before's result),
arithmetic (the line's result is wrong: its check passed it or fixed it wrongly), too many / too few lines, no chain
(no trace to read), answer (every line right, the answer after the trace not).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from tts_engine.tasks.arith.chain import apply, problem_steps, read_step_line
from tts_engine.tasks.arith.thinking import final_chain


def error_kind(problem: str, text: str) -> str:
    """What the first wrong line of the sample's final chain got wrong."""
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


if __name__ == "__main__":
    main()
