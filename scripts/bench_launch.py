"""Wall time of `tts launch --ray local`, `tts launch --workers` (static shards) and `tts solve`, side by side.

Two sets, each solved by every command with the same solve options, in one run on this machine (timings on a
shared machine are noisy: compare the ratios of one run):

1. the bundled set (200 problems, levels 1-8, `--strategy fixed`): Ray's overhead against static shards and one
   process; the Ray run's records are compared with `tts solve`'s, problem by problem;
2. a straggler set under `--strategy adaptive-n`: cheap problems (levels 1-2) and expensive ones (levels 7-8)
   alternating, so that round-robin shard 0 of 2 holds every expensive problem and waits while shard 1 idles;
   pulled chunks of both kinds share the work.

    .venv/bin/python -P scripts/bench_launch.py [--out-dir /tmp/bench_launch] [--workers 2]

Prints one table (and writes it to --report if given).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TTS = [sys.executable, "-P", "-c", 'from tts_engine.cli import main; main(prog_name="tts")']


def straggler_set(path: Path, per_kind: int) -> Path:
    """`per_kind` cheap (levels 1-2) and `per_kind` expensive (levels 7-8) problems, expensive first in each
    pair: shard I/2 of a round-robin split holds only one kind."""
    from tts_engine.tasks.arith.generator import make_problem_set

    half = (per_kind + 1) // 2
    cheap = make_problem_set(seed=7, levels=(1, 2), per_level=half)[:per_kind]
    costly = make_problem_set(seed=8, levels=(7, 8), per_level=half)[:per_kind]
    lines = [json.dumps(p.to_record()) for pair in zip(costly, cheap) for p in pair]
    path.write_text("\n".join(lines) + "\n")
    return path


def timed(argv: list[str], log: Path) -> float:
    """Seconds `argv` ran (a fresh process, as a user runs it); its output goes to `log`."""
    started = time.perf_counter()
    with log.open("wb") as f:
        code = subprocess.call(argv, stdout=f, stderr=subprocess.STDOUT)
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{' '.join(argv[4:])} failed ({code}); see {log}")
    return elapsed


def compare(ray_out: Path, solve_out: Path) -> str:
    """How the Ray run's records compare with `tts solve`'s, problem by problem."""
    from tts_engine.running.results import read_results

    ray = {r["id"]: r for r in read_results(ray_out)}
    solo = {r["id"]: r for r in read_results(solve_out)}
    texts = sum([s["text"] for s in ray[i]["samples"]] == [s["text"] for s in r["samples"]] for i, r in solo.items())
    votes = sum(
        {k: v["answer"] for k, v in ray[i]["aggregations"].items()}
        == {k: v["answer"] for k, v in r["aggregations"].items()}
        for i, r in solo.items()
    )
    gap = max(
        abs(s["scores"][k] - t["scores"][k])
        for i, r in solo.items()
        for s, t in zip(ray[i]["samples"], r["samples"])
        for k in t["scores"]
    )
    lines = sum(1 for _ in read_results(ray_out))
    return (
        f"ray vs solve: {len(ray)} ids ({lines} lines) for {len(solo)}; same sample texts {texts}/{len(solo)}, "
        f"same votes {votes}/{len(solo)}, largest score difference {gap:.1e}"
    )


def bench(name: str, problems: str, solve: list[str], count: int, folder: Path, workers: int, rows: list) -> dict:
    """Run the three commands on one set; a row per command."""
    outs = {}
    commands = {  # label: (results file, command line)
        f"tts launch --ray local --workers {workers}": ("ray", ["launch", problems, "--ray", "local"]),
        f"tts launch --workers {workers}": ("static", ["launch", problems]),
        "tts solve": ("solve", ["solve", problems]),
    }
    for label, (kind, argv) in commands.items():
        out = folder / f"{name}.{kind}.jsonl"
        if argv[0] == "launch":
            argv = [*argv, "--workers", str(workers)]
        seconds = timed([*TTS, *argv, *solve, "--out", str(out)], out.with_suffix(".log"))
        outs[label] = out
        rows.append((name, label, seconds, count / seconds))
        print(f"{name:10s} {label:36s} {seconds:7.1f} s {count / seconds:6.2f} problems/s", flush=True)
    return outs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default="/tmp/bench_launch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--per-kind", type=int, default=32, help="straggler set: cheap and expensive problems each")
    parser.add_argument("--report", help="also write the table here")
    args = parser.parse_args()
    folder = Path(args.out_dir)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rows: list = []
    print(f"{os.cpu_count()} CPUs; {args.workers} workers; python {sys.version.split()[0]}", flush=True)
    fixed = ["--seed", "0", "--quiet"]
    from tts_engine.inputs.models import default_problems_path

    outs = bench("bundled", str(default_problems_path()), fixed, 200, folder, args.workers, rows)
    check = compare(outs[f"tts launch --ray local --workers {args.workers}"], outs["tts solve"])
    print(check, flush=True)
    stragglers = str(straggler_set(folder / "stragglers.jsonl", args.per_kind))
    adaptive = ["--strategy", "adaptive-n", "--wave", "8", "--max-n", "32", "--seed", "0", "--quiet"]
    bench("straggler", stragglers, adaptive, 2 * args.per_kind, folder, args.workers, rows)
    table = [f"{'set':10s} {'command':36s} {'wall s':>8s} {'problems/s':>11s} {'vs static':>10s}"]
    for name, label, seconds, rate in rows:
        static = next(s for n, c, s, _ in rows if n == name and c == f"tts launch --workers {args.workers}")
        table.append(f"{name:10s} {label:36s} {seconds:8.1f} {rate:11.2f} {seconds / static:9.2f}x")
    text = "\n".join([*table, check])
    print(text)
    if args.report:
        Path(args.report).write_text(text + "\n")


if __name__ == "__main__":
    main()
