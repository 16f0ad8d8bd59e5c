"""Answer-class grouping throughput: the project's group_answers_batch beside greedy grouping with plain
math_verify.verify, on the same realistic answer lists, in one run.

Input: for each MATH500 problem, N samples drawn from its reference answer written in other forms
(\\dfrac, a/b, decimals, "x = ...", units, spacing, \\left( \\right)), common wrong answers (off by one,
sign, reciprocal, another problem's answer) and None (no answer), with the skew of real samples
(most samples agree on a few answers).

Baseline: each answer parsed once with math-verify (wrapped in \\boxed{} so that bare LaTeX parses),
then compared with verify() against the representative of each class so far (first match joins):
the usual greedy grouping, in one process, math-verify's default timeouts.

    python scripts/bench_answer_classes.py                  # 500 problems x 64 samples
    python scripts/bench_answer_classes.py --problems 50
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Sequence

from tts_engine.answers import CheckPool, group_answers_batch

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "math500.jsonl"
_FRAC = re.compile(r"^(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}$")


def same_forms(reference: str) -> list[str]:
    """The reference written in other, equivalent ways."""
    forms = [reference, " " + reference + " ", reference.replace("\\frac", "\\dfrac"), reference.replace(",", ", ")]
    if "\\left" not in reference:
        forms.append(reference.replace("(", "\\left(").replace(")", "\\right)"))
    frac = _FRAC.match(reference)
    if frac:
        sign, p, q = frac.group(1), int(frac.group(2)), int(frac.group(3))
        forms += [f"{sign}{p}/{q}", f"{sign}\\frac{{{p}}}{{{q}}}"]
        value = Fraction(int(sign + "1") * p, q)
        if 1_000_000 % value.denominator == 0:
            forms.append(str(float(value)))
    if re.fullmatch(r"-?\d+", reference):
        forms += [f"x = {reference}", f"{reference}.0", f"{reference} \\text{{ units}}", f"{int(reference):,}"]
    if re.fullmatch(r"\d+\^\\circ", reference):
        forms.append(reference.replace("^\\circ", ""))
    return forms


def wrong_answers(reference: str, others: Sequence[str], rng: random.Random) -> list[str]:
    """Answers a model plausibly gives instead."""
    wrong = [rng.choice(others), rng.choice(others)]
    if re.fullmatch(r"-?\d+", reference):
        n = int(reference)
        wrong += [str(n + 1), str(n - 1), str(2 * n), str(-n)]
    frac = _FRAC.match(reference)
    if frac:
        p, q = frac.group(2), frac.group(3)
        wrong += [f"\\frac{{{q}}}{{{p}}}", f"\\frac{{{int(p) + 1}}}{{{q}}}"]
    wrong += [reference + "+1", "2" + reference]
    return [w for w in wrong if w != reference]


def make_problem(reference: str, others: Sequence[str], samples: int, rng: random.Random) -> list[str | None]:
    """`samples` answers: a majority of equivalent forms, a few wrong answers, some None (skewed)."""
    right = same_forms(reference)
    wrong = wrong_answers(reference, others, rng)[: rng.randint(1, 4)]
    p_right, p_none = rng.uniform(0.3, 0.8), rng.uniform(0.0, 0.15)
    answers: list[str | None] = []
    for _ in range(samples):
        u = rng.random()
        if u < p_none:
            answers.append(None)
        elif u < p_none + p_right:
            answers.append(right[0] if rng.random() < 0.6 else rng.choice(right))
        else:
            answers.append(wrong[0] if rng.random() < 0.5 else rng.choice(wrong))
    return answers


def greedy_plain_math_verify(answers: Sequence[str | None]) -> list[int]:
    from math_verify import parse, verify

    class_ids, representatives = [], []
    for answer in answers:
        if answer is None or not answer.strip():
            class_ids.append(-1)
            continue
        parsed = parse("\\boxed{" + answer + "}")
        match = next((i for i, rep in enumerate(representatives) if verify(rep, parsed)), None)
        if match is None:
            representatives.append(parsed)
            match = len(representatives) - 1
        class_ids.append(match)
    return class_ids


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="math500.jsonl (reference answers)")
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--samples", type=int, default=64, help="answers per problem")
    ap.add_argument("--processes", type=int, default=2, help="check worker processes")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.data.exists():
        sys.exit(f"data file {args.data} not found (pass --data PATH to math500.jsonl)")
    references = [json.loads(line)["answer"] for line in args.data.read_text().splitlines() if line.strip()]
    rng = random.Random(args.seed)
    problems = [
        make_problem(references[i % len(references)], references, args.samples, rng) for i in range(args.problems)
    ]
    total = sum(len(p) for p in problems)

    with CheckPool(processes=args.processes) as pool:
        pool.warm()  # start the workers outside the timing
        start = time.perf_counter()
        ours = group_answers_batch(problems, pool=pool)
        ours_s = time.perf_counter() - start
    start = time.perf_counter()
    plain = [greedy_plain_math_verify(p) for p in problems]
    plain_s = time.perf_counter() - start

    same = sum(c.class_ids == ids for c, ids in zip(ours, plain))
    print(f"{args.problems} problems x {args.samples} samples = {total:,} answers\n")
    print("| method | seconds | answers/s | classes per problem | math checks |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| tts-engine group_answers_batch ({args.processes} workers) | {ours_s:.1f} | {total / ours_s:,.0f} | "
        f"{sum(c.num_classes for c in ours) / len(ours):.2f} | {sum(c.math_checks for c in ours):,} |"
    )
    plain_classes = sum(max(ids, default=-1) + 1 for ids in plain) / len(plain)
    print(
        f"| greedy + plain math_verify.verify (1 process) | {plain_s:.1f} | {total / plain_s:,.0f} | "
        f"{plain_classes:.2f} | - |"
    )
    print(f"\nspeed-up {plain_s / ours_s:.1f}x; identical partitions on {same}/{len(problems)} problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
