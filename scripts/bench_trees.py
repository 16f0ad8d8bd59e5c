"""`tts solve` wall time of two checkouts side by side in one run (e.g. before and after a refactor).

    python scripts/bench_trees.py --tree before=/path/to/old/checkout --tree after=. --rounds 3 -- --n 16

Each checkout runs its own `.venv/bin/tts solve` (so each imports its own code), rounds alternating between the
trees so that machine noise falls on both alike; arguments after `--` go to every `tts solve`. Prints every
round's wall time, each tree's median, the ratio of medians against the first tree, and whether each run's
summary table (the accuracy lines) equals the first tree's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def parse_tree(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--tree takes NAME=PATH, got {text!r}")
    tts = Path(path) / ".venv" / "bin" / "tts"
    if not tts.is_file():
        raise argparse.ArgumentTypeError(f"{tts} not found: run `bash scripts/install.sh` in {path} first")
    return name, Path(path)


def solve_once(tree: Path, solve_args: list[str], out_dir: Path) -> tuple[float, list[str]]:
    """(wall seconds, the summary's accuracy lines) of one `tts solve` in `tree`."""
    out = out_dir / f"{time.monotonic_ns()}.jsonl"
    command = [str(tree / ".venv" / "bin" / "tts"), "solve", "--quiet", "--out", str(out), *solve_args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed in {tree}:\n{done.stderr[-2000:]}")
    table = [line for line in done.stdout.splitlines() if line[:1].isalpha() and line.split()[-1][:1] in "01"]
    return elapsed, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", type=parse_tree, required=True, help="NAME=PATH (repeat)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("solve_args", nargs="*", help="after --: arguments for every tts solve")
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name, _ in args.tree}
    tables: dict[str, list[list[str]]] = {name: [] for name, _ in args.tree}
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            order = args.tree if round_index % 2 == 0 else list(reversed(args.tree))
            for name, tree in order:
                elapsed, table = solve_once(tree, args.solve_args, Path(tmp))
                times[name].append(elapsed)
                tables[name].append(table)
                print(f"round {round_index + 1} {name}: {elapsed:.1f} s", flush=True)
    first = args.tree[0][0]
    base = statistics.median(times[first])
    for name, _ in args.tree:
        median = statistics.median(times[name])
        same = all(t == tables[first][0] for t in tables[name])
        print(f"{name}: median {median:.1f} s, {median / base:.3f}x {first}; summary table equal to {first}'s: {same}")
    print("\n".join(tables[first][0]))


if __name__ == "__main__":
    main()
