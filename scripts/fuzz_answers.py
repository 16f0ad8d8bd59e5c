"""Fuzz the answer pipeline: random and adversarial strings through extraction, answer classes and
grading. Prints the number of inputs, exceptions that escaped, timeouts, the longest check (against
its deadline) and peak memory of this process and of the check workers.

Adversarial inputs: deep nesting, huge exponents (10^{10^{10^{10}}}), unbalanced braces, Python
injection attempts (__import__('os').system(...), which must never run: a marker file proves it),
megabyte-long answers, lone surrogates and other odd unicode.

    python scripts/fuzz_answers.py                 # 10,000 inputs
    python scripts/fuzz_answers.py --inputs 1000 --timeout 0.5
"""

from __future__ import annotations

import argparse
import logging
import random
import resource
import string
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from tts_engine.answers import CheckPool, extract_answer, grade_answers, group_answers_batch
from tts_engine.answers.forms import answer_form

REFERENCES = [
    "\\frac{1}{2}",
    "3",
    "(0,1]",
    "\\{1,2\\}",
    "Monday",
    "x^2+1",
    "(B)",
    "2\\sqrt{3}",
    "45^\\circ",
    "10^{100}",
]
LATEX_PIECES = [
    "\\frac{",
    "\\sqrt{",
    "}",
    "{",
    "^",
    "_",
    "\\left(",
    "\\right)",
    "(",
    ")",
    "[",
    "]",
    "\\{",
    "\\}",
    ",",
    "=",
    "\\pi",
    "\\infty",
    "x",
    "y",
    "1",
    "2",
    "0.5",
    "-",
    "+",
    "\\cdot",
    "\\text{",
    "\\boxed{",
    "$",
    "\\\\",
    "\\le",
    "<",
    "\\cup",
    "!",
    "%",
    "\\circ",
    "e",
    "i",
    " ",
    "and",
    "\\begin{pmatrix}",
    "\\end{pmatrix}",
    "&",
]


def random_unicode(rng: random.Random) -> str:
    chars = []
    for _ in range(rng.randint(0, 40)):
        kind = rng.random()
        if kind < 0.1:
            chars.append(chr(rng.randint(0xD800, 0xDFFF)))  # lone surrogate
        elif kind < 0.4:
            chars.append(chr(rng.randint(0x80, 0x2FFFF)))
        else:
            chars.append(rng.choice(string.printable))
    return "".join(chars)


def random_latex(rng: random.Random) -> str:
    return "".join(rng.choice(LATEX_PIECES) for _ in range(rng.randint(1, 30)))


def deep_nesting(rng: random.Random) -> str:
    depth = rng.choice([50, 500, 5000])
    opener = rng.choice(["{", "\\frac{1}{", "\\sqrt{", "(", "\\left(", "2^{"])
    closer = {"(": ")", "\\left(": "\\right)"}.get(opener, "}")
    return opener * depth + "1" + closer * (depth if rng.random() < 0.5 else rng.randint(0, depth))


def huge_number(rng: random.Random) -> str:
    base = rng.choice(["10", "9", "2", "7", "1.0001", "x"])
    height = rng.randint(2, 5)
    tower = base
    for _ in range(height):
        tower = f"{base}^{{{tower}}}"
    return rng.choice(
        [
            tower,
            f"{rng.randint(10**5, 10**7)}!",
            f"\\binom{{10^{{9}}}}{{{rng.randint(10**8, 5 * 10**8)}}}",
            f"(1+x)^{{{rng.randint(10**4, 10**6)}}}",
            "9" * rng.randint(1000, 5000),
        ]
    )


def injection(rng: random.Random, marker: Path) -> str:
    payloads = [
        f"__import__('os').system('touch {marker}')",
        f"eval(\"__import__('os').system('touch {marker}')\")",
        f'exec(\'open("{marker}", "w")\')',
        "().__class__.__base__.__subclasses__()",
        "lambda: 0",
        f"1 + __import__('os').system('touch {marker}')",
        "globals()['__builtins__']",
    ]
    payload = rng.choice(payloads)
    return rng.choice([payload, f"\\boxed{{{payload}}}", f"x = {payload}", f"${payload}$"])


def megabyte(rng: random.Random) -> str:
    unit = rng.choice(["1+", "{", "\\frac{1}{2}", "a", "}", "\\boxed{"])
    return unit * (1_000_000 // len(unit))


def make_inputs(count: int, rng: random.Random, marker: Path) -> list[str]:
    generators: list[tuple[float, Callable[[random.Random], str]]] = [
        (0.30, random_latex),
        (0.25, random_unicode),
        (0.15, lambda r: r.choice(REFERENCES)),
        (0.10, deep_nesting),
        (0.08, lambda r: injection(r, marker)),
        (0.07, huge_number),
        (0.05, megabyte),
    ]
    weights = [w for w, _ in generators]
    return [rng.choices(generators, weights)[0][1](rng) for _ in range(count)]


def run_stage(name: str, fn: Callable[[], object], escaped: list[str]) -> object:
    try:
        return fn()
    except Exception as exc:  # the point of the fuzzer: count anything that escapes
        escaped.append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
        return None


def fuzz_chunk(
    inputs: list[str], args: argparse.Namespace, pool: CheckPool, escaped: list[str], statuses: dict[str, int]
) -> None:
    """Every input through extraction, forms, answer classes and grading (both ways round)."""
    for text in inputs:
        run_stage("extract_answer", lambda: extract_answer(text), escaped)
        run_stage("extract_answer(boxed)", lambda: extract_answer("so \\boxed{" + text + "} done"), escaped)
        run_stage("answer_form", lambda: answer_form(text), escaped)
    problems = [inputs[i : i + args.problem_size] for i in range(0, len(inputs), args.problem_size)]
    batch = (
        run_stage(
            "group_answers_batch", lambda: group_answers_batch(problems, timeout=args.timeout, pool=pool), escaped
        )
        or []
    )
    for classes in batch:
        for status in classes.statuses:
            statuses[status] = statuses.get(status, 0) + 1
    references = [REFERENCES[i % len(REFERENCES)] for i in range(len(inputs))]
    run_stage("grade_answers", lambda: grade_answers(references, inputs, timeout=args.timeout, pool=pool), escaped)
    run_stage(
        "grade_answers(swapped)", lambda: grade_answers(inputs, references, timeout=args.timeout, pool=pool), escaped
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=0.5, help="seconds per check")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=500, help="inputs held in memory at once")
    ap.add_argument("--problem-size", type=int, default=16, help="answers per problem (one answer-class grouping)")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.getLogger("tts_engine.answers").setLevel(logging.ERROR)  # timeouts are counted, not logged
    marker = Path(tempfile.mkdtemp(prefix="fuzz-answers-")) / "injected"
    rng = random.Random(args.seed)
    escaped: list[str] = []
    statuses: dict[str, int] = {}
    start = time.perf_counter()
    with CheckPool(processes=args.processes) as pool:
        pool.warm()
        for done in range(0, args.inputs, args.chunk):  # chunks keep memory bounded (megabyte inputs)
            inputs = make_inputs(min(args.chunk, args.inputs - done), rng, marker)
            fuzz_chunk(inputs, args, pool, escaped, statuses)
        worker_rss = pool.peak_worker_rss_mb()
        stats = pool.stats
    seconds = time.perf_counter() - start
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"inputs                 {args.inputs:,} ({seconds:.1f} s, {args.inputs / seconds:,.0f} inputs/s)")
    print(f"escaped exceptions     {len(escaped)}")
    for line in escaped[:10]:
        print(f"    {line}")
    print(f"answer statuses        {statuses}")
    print(
        f"worker checks          {stats.requests:,} (timeouts {stats.timeouts}, errors {stats.errors}, restarts {stats.restarts})"
    )
    print(
        f"max check time         {stats.max_request_seconds:.3f} s (deadline {args.timeout} s; "
        f"{2 * args.timeout} s for the one retry of a short pair: grading.RETRY_CHARS)"
    )
    print(f"peak RSS               this process {own_rss:.0f} MiB, workers {worker_rss:.0f} MiB")
    print(f"injection marker       {'CREATED (code ran!)' if marker.exists() else 'absent (nothing ran)'}")
    over = stats.max_request_seconds - args.timeout
    failed = escaped or marker.exists() or over > 0.5
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
