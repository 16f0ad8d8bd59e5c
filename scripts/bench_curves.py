"""Time `tts curve`'s estimators on MATH500-sized synthetic results beside a plain Python loop.

    python scripts/bench_curves.py                      # 500 problems x 256 samples, R = 1000
    python scripts/bench_curves.py --problems 50 --samples 64

Steps timed: writing and loading the results JSONL (orjson, text included but not kept), the batched curves
(pass@k, majority / weighted / best-of-N for every score kind at every k, compute axes, breakdowns), and the
same per-problem voting accuracies by Python loops over problems and subsets (tts_engine.eval.reference). The
loop runs on the first --loop-problems problems only and its time is extrapolated to all problems (linear in
P, labelled as such); the two are checked to agree on those problems.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from tts_engine.eval.curves import compute_curves, per_problem_accuracy
from tts_engine.eval.reference import loop_vote_accuracy
from tts_engine.eval.subsets import SubsetDrawer, subset_sizes
from tts_engine.eval.synthetic import synthetic_records
from tts_engine.eval.table import load_results
from tts_engine.eval.verifier_metrics import verifier_metrics


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=500, help="P problems (MATH500: 500)")
    parser.add_argument("--samples", type=int, default=256, help="N samples per problem")
    parser.add_argument("--subsets", type=int, default=1000, help="R random subsets per problem and k")
    parser.add_argument("--loop-problems", type=int, default=2, help="problems the Python loop runs on")
    parser.add_argument("--text-chars", type=int, default=1500, help="characters of text per sample in the file")
    parser.add_argument("--vote-impl", default="auto", choices=("auto", "prefix", "torch", "triton"))
    return parser.parse_args()


CPU_SECONDS: dict[str, float] = {}
"""CPU seconds of this process per timed step (the machine is shared: wall time alone can mislead)."""


def timed(fn, name: str | None = None):
    """(value, wall seconds); CPU seconds go to CPU_SECONDS[name]."""
    started, cpu = time.perf_counter(), time.process_time()
    value = fn()
    if name:
        CPU_SECONDS[name] = time.process_time() - cpu
    return value, time.perf_counter() - started


def main() -> None:
    args = parse_args()
    print(f"load average (machine shared): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"synthetic results: {args.problems} problems x {args.samples} samples, R = {args.subsets}, "
        f"3 score kinds, {args.text_chars} text characters per sample"
    )
    records = synthetic_records(args.problems, args.samples, seed=0, text_chars=args.text_chars)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        size_mb = path.stat().st_size / 1e6
        del records
        table, load_s = timed(lambda: load_results(path), "load")
    classes = table.class_ids.max(axis=1) + 1
    print(f"classes per problem: median {np.median(classes):.0f}, max {classes.max()}")
    curves, curve_s = timed(lambda: compute_curves(table, num_subsets=args.subsets, impl=args.vote_impl), "curves")
    _, metrics_s = timed(lambda: verifier_metrics(table), "metrics")
    loop_s, batched_part_s, agree = loop_versus_batched(table, args)
    scale = args.problems / args.loop_problems
    rows = [
        (
            "load results JSONL (orjson)",
            f"{load_s:.2f} s",
            f"measured, {size_mb:.0f} MB file, CPU {CPU_SECONDS['load']:.2f} s",
        ),
        ("curves, batched (all k, all strategies)", f"{curve_s:.2f} s", f"measured, CPU {CPU_SECONDS['curves']:.2f} s"),
        ("verifier metrics", f"{metrics_s:.2f} s", f"measured, CPU {CPU_SECONDS['metrics']:.2f} s"),
        (
            f"voting accuracy, batched, {args.loop_problems} problems",
            f"{batched_part_s:.3f} s",
            f"measured, CPU {CPU_SECONDS['batched_part']:.3f} s",
        ),
        (
            f"voting accuracy, Python loop, {args.loop_problems} problems",
            f"{loop_s:.2f} s",
            f"measured, CPU {CPU_SECONDS['loop']:.2f} s",
        ),
        (
            f"voting accuracy, Python loop, {args.problems} problems",
            f"{loop_s * scale:.0f} s",
            f"EXTRAPOLATED x{scale:g} from {args.loop_problems} problems, CPU {CPU_SECONDS['loop'] * scale:.0f} s",
        ),
    ]
    for name, value, how in rows:
        print(f"{name:<52}{value:>12}   {how}")
    print(
        f"speed-up of the batched curves over the extrapolated loop: {loop_s * scale / curve_s:.0f}x wall, "
        f"{CPU_SECONDS['loop'] * scale / CPU_SECONDS['curves']:.0f}x CPU"
    )
    print(f"batched and loop per-problem accuracies agree on the looped problems: max |diff| = {agree:.2e}")
    print(f"majority@{table.num_samples} = {curves['majority_at_n']:.3f}")


def loop_versus_batched(table, args) -> tuple[float, float, float]:
    """(loop seconds, batched seconds, max |difference|) over the first --loop-problems problems, all k."""
    part = table.select(np.arange(min(args.loop_problems, table.num_problems)))
    ks = subset_sizes(part.num_samples)
    batched, batched_s = timed(
        lambda: per_problem_accuracy(part, ks, num_subsets=args.subsets, impl=args.vote_impl), "batched_part"
    )
    drawer = SubsetDrawer(part.ids, part.num_samples, args.subsets, seed=0)
    loop_s = diff = 0.0
    CPU_SECONDS["loop"] = 0.0
    for i, k in enumerate(ks):
        subsets = drawer.subsets(k, np.arange(part.num_problems))
        looped, seconds = timed(
            lambda s=subsets: loop_vote_accuracy(part.class_ids, part.class_correct, part.scores, s), "loop_k"
        )
        loop_s += seconds
        CPU_SECONDS["loop"] += CPU_SECONDS["loop_k"]
        diff = max(diff, max(float(np.abs(looped[name] - batched[name][i]).max()) for name in looped))
    return loop_s, batched_s, diff


if __name__ == "__main__":
    main()
