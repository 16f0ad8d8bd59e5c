"""Wall time and a logged figure's trend from a training log (`OUT/log.jsonl` of `tts train tango` and the others
that log `step_s` per step).

    python scripts/log_summary.py LOG [--steps A:B] [--key NAME]

Prints, per phase of the steps A..B (inclusive; all by default), how many steps it has and their wall time (the sum
of `step_s`), and with --key the mean of NAME over each quarter of the records that carry it. A step logged twice (a
run resumed from a checkpoint older than its last logged step) counts once: its last record.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def read_log(path: Path) -> list[dict]:
    """The log's records by step, the last record of a repeated step kept."""
    by_step = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise SystemExit(f"{path}:{number}: not a JSON record ({err.msg})") from None
        by_step[record["step"]] = record
    return [by_step[step] for step in sorted(by_step)]


def quarter_means(values: list[float]) -> list[float]:
    """The mean of each quarter of `values` (the last quarter takes the remainder)."""
    size = len(values) // 4
    if size == 0:
        return [sum(values) / len(values)] if values else []
    cuts = [values[k * size : (k + 1) * size] for k in range(3)] + [values[3 * size :]]
    return [sum(c) / len(c) for c in cuts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--steps", default=None, help="A:B, the steps to read (inclusive)")
    parser.add_argument("--key", default=None, help="a logged figure whose quarter means to print")
    args = parser.parse_args()
    records = read_log(args.log)
    if args.steps:
        first, last = (int(x) for x in args.steps.split(":"))
        records = [r for r in records if first <= r["step"] <= last]
    phases = sorted({r.get("phase", "all") for r in records})
    for phase in phases:
        rows = [r for r in records if r.get("phase", "all") == phase]
        print(f"{phase:<10} {len(rows):>6} steps {sum(r.get('step_s', 0.0) for r in rows) / 60:8.1f} min")
    print(f"{'all':<10} {len(records):>6} steps {sum(r.get('step_s', 0.0) for r in records) / 60:8.1f} min")
    if args.key:
        values = [r[args.key] for r in records if isinstance(r.get(args.key), (int, float))]
        means = " ".join(f"{m:.3f}" for m in quarter_means(values))
        print(f"{args.key}: {len(values)} records, quarter means {means}")


if __name__ == "__main__":
    main()
