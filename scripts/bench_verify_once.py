"""Verifying each distinct sample text once against verifying every sample, side by side on one model and set.

Both arms run `Engine.solve` with the same settings and seed, each on a fresh engine (an empty prefix cache),
in alternating order for `--repeats` rounds. The baseline wraps the verifier so that the engine scores every
sample (`scores_by_text = False`, as it did before texts were verified once). Prints each arm's median wall
time, verifier tokens per problem, their ratio, and how far the two arms' scores and predictions differ.

    python scripts/bench_verify_once.py                   # embedded default model, bundled set, N = 16
    python scripts/bench_verify_once.py --limit 40 --n 64 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Sequence

from tts_engine.engine import Engine
from tts_engine.inputs.models import default_problems_path
from tts_engine.inputs.problems import load_problems


class EverySample:
    """The engine's verifier, asking to be run on every sample (repeats included)."""

    scores_by_text = False

    def __init__(self, verifier):
        self.verifier = verifier

    def __getattr__(self, name: str) -> Any:
        return getattr(self.verifier, name)

    def score(self, questions, prompts, outputs):
        return self.verifier.score(questions, prompts, outputs)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="checkpoint directory (default: the embedded model)")
    ap.add_argument("--problems", help="problem file (default: the bundled set)")
    ap.add_argument("--limit", type=int, default=None, help="at most this many problems")
    ap.add_argument("--n", type=int, default=16, help="samples per problem")
    ap.add_argument("--repeats", type=int, default=2, help="rounds of both arms, alternating which goes first")
    return ap.parse_args(argv)


def run_arm(args, problems, every_sample: bool) -> tuple[float, list[dict[str, Any]]]:
    engine = Engine(args.model)
    if every_sample:
        engine.verifier = EverySample(engine.verifier)
    started = time.perf_counter()
    records = engine.solve(problems, n=args.n, seed=0, progress=False)
    return time.perf_counter() - started, records


def differences(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[float, int]:
    """Largest score difference over all samples and kinds; predictions (answer, correct) that differ."""
    score_diff = max(
        abs(x["scores"][k] - y["scores"][k])
        for ra, rb in zip(a, b)
        for x, y in zip(ra["samples"], rb["samples"])
        for k in x["scores"]
    )
    predictions = sum(
        (ra["aggregations"][k]["answer"], ra["aggregations"][k]["correct"])
        != (rb["aggregations"][k]["answer"], rb["aggregations"][k]["correct"])
        for ra, rb in zip(a, b)
        for k in ra["aggregations"]
    )
    return score_diff, predictions


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    problems = load_problems(args.problems or default_problems_path())[: args.limit]
    times: dict[str, list[float]] = {"every sample": [], "each text once": []}
    records: dict[str, list[dict[str, Any]]] = {}
    for r in range(args.repeats):
        for arm in ("every sample", "each text once") if r % 2 == 0 else ("each text once", "every sample"):
            elapsed, records[arm] = run_arm(args, problems, every_sample=arm == "every sample")
            times[arm].append(elapsed)
            print(f"round {r + 1}, {arm}: {elapsed:.1f} s", flush=True)
    print(f"{len(problems)} problems x {args.n} samples, {args.repeats} rounds")
    print(f"{'arm':<18}{'median wall s':>15}{'verifier tokens / problem':>28}")
    for arm, values in times.items():
        tokens = sum(rec["compute"]["verifier_tokens"] for rec in records[arm]) / len(problems)
        print(f"{arm:<18}{statistics.median(values):>15.1f}{tokens:>28.1f}")
    ratio = statistics.median(times["every sample"]) / statistics.median(times["each text once"])
    score_diff, predictions = differences(records["every sample"], records["each text once"])
    print(f"speed-up (median wall, every sample / each text once): {ratio:.2f}x")
    print(f"largest score difference: {score_diff:.2e}; predictions that differ: {predictions}")


if __name__ == "__main__":
    main()
