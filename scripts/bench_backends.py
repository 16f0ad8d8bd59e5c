"""hf against vLLM for every registered strategy: start-up, solve and wall time, and accuracy, as one table.

    VLLM_CPU_KVCACHE_SPACE=1 .venv/vllm/bin/python -P scripts/bench_backends.py --limit 40 --n 16 \
        --out docs/runs/bench_backends.txt

Each (strategy, backend) runs in a fresh interpreter (`python -P -c ...`), as `tts solve` does: the parent times
the whole process (wall: imports, start-up, solving, shutdown), the child times `Engine(...)` (start-up: loading
the model; for vLLM its engine-core and worker processes), `Engine.solve` (solve) and `Engine.close` (shutdown),
and reports the accuracy of the strategy's headline vote (weighted by the headline score kind, else majority)
on the bundled problem set. Both backends serve the embedded default in float32 (vLLM with enforce_eager, the
settings of the CPU tests). Needs an environment with vLLM (scripts/install.sh vllm); the strategies come from
the registry. The child's exit status must be 0, or the script stops with its output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
from tts_engine.engine import Engine
from tts_engine.inputs.models import default_problems_path
from tts_engine.inputs.problems import load_problems

backend, strategy, limit, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
options = {"dtype": "float32", "enforce_eager": True} if backend == "vllm" else {}
problems = load_problems(default_problems_path(), limit=limit)
t0 = time.perf_counter()
engine = Engine(backend=backend, backend_options=options)
t1 = time.perf_counter()
try:
    records = engine.solve(problems, strategy=strategy, n=n, seed=seed, progress=False)
    t2 = time.perf_counter()
finally:
    engine.close()
t3 = time.perf_counter()
kind = records[0]["run"].get("headline_kind")
vote = f"weighted:{kind}" if kind and f"weighted:{kind}" in records[0]["aggregations"] else "majority"
correct = [bool(r["aggregations"].get(vote, {}).get("correct")) for r in records]
ok = sum(r.get("status") == "ok" for r in records)
print("BENCH " + json.dumps({"startup_s": t1 - t0, "solve_s": t2 - t1, "close_s": t3 - t2, "vote": vote,
                             "accuracy": sum(correct) / len(correct), "ok": ok, "problems": len(records)}))
"""


def run_one(backend: str, strategy: str, args) -> dict:
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    command = [sys.executable, "-P", "-c", CHILD, backend, strategy, str(args.limit), str(args.n), str(args.seed)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.timeout)
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"{backend} {strategy} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    return {**json.loads(lines[-1][len("BENCH ") :]), "wall_s": wall, "exit": done.returncode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="problems of the bundled set (default 40)")
    parser.add_argument("--n", type=int, default=16, help="samples per problem (default 16)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strategies", default="", help="comma-separated subset (default: every registered one)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one run may take")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()

    from tts_engine.strategies.registry import strategies

    names = [s for s in args.strategies.split(",") if s] or list(strategies())
    header = (
        "| strategy | hf solve s | vLLM solve s | hf wall s | vLLM wall s | vLLM start-up s | vLLM close s "
        "| hf accuracy | vLLM accuracy |"
    )
    rows = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for name in names:
        hf, vl = run_one("hf", name, args), run_one("vllm", name, args)
        rows.append(
            f"| {name} | {hf['solve_s']:.1f} | {vl['solve_s']:.1f} | {hf['wall_s']:.1f} | {vl['wall_s']:.1f} "
            f"| {vl['startup_s']:.1f} | {vl['close_s']:.1f} | {hf['accuracy']:.3f} | {vl['accuracy']:.3f} |"
        )
        print(rows[-1], flush=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    note = (
        f"`python -P scripts/bench_backends.py --limit {args.limit} --n {args.n} --seed {args.seed}`: the bundled "
        f"set's first {args.limit} problems, n={args.n}, embedded default in float32, {cores} CPU cores "
        f"({platform.machine()}), {time.strftime('%Y-%m-%d')}; accuracy of each strategy's headline vote."
    )
    table = "\n".join(rows) + "\n\n" + note + "\n"
    print("\n" + table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
