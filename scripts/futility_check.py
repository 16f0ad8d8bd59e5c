"""How well the futility stop's chance reads a problem whose every sample so far was rejected, on a long fixed run.

    python scripts/futility_check.py RESULTS.jsonl [--calibration FILE] [--points 4,8,12,16,24,32]

RESULTS is `tts solve --n 64` (or any N >= 16) of a labelled set. For each point k, over the problems whose first k
samples the verifier all rejected (headline score < .5): the chance the stop would give that the rest (up to N)
bring an accepted one, from the calibration file's acceptance prior alone (Beta posterior) and from its rescue fit,
against the share whose later samples did bring one; then the same split by how near the k samples came (best
score below 1e-4: out of reach; otherwise near misses). A set the file was fitted on reads in-sample. Then the
futility stop replayed on the run's samples for each `--min-n` (adaptive-n's --futility-min-n): what it stops, what
that loses against fixed N = 16 and against drawing on, and what it saves.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tts_engine.inputs.models import default_model_path
from tts_engine.pipeline.calibration import FILE_NAME, Calibration, load_calibration
from tts_engine.pipeline.futility import ACCEPT_AT, accepted_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results")
    parser.add_argument("--calibration", default=str(default_model_path() / FILE_NAME))
    parser.add_argument("--points", default="4,8,12,16,24,32")
    parser.add_argument("--min-n", default="4,8,12,16", help="futility_min_n values to replay")
    parser.add_argument("--futility", type=float, default=0.1)
    parser.add_argument("--wave", type=int, default=4)
    args = parser.parse_args()
    records = [json.loads(line) for line in Path(args.results).read_text().splitlines() if line.strip()]
    kind = records[0]["run"]["headline_kind"]
    calibration = load_calibration(args.calibration, kind)
    samples = [r["samples"] for r in records if r.get("samples")]
    rows = [[s["scores"].get(kind, 0.0) for s in row] for row in samples]
    print(f"{args.results}: {len(rows)} problems, {kind}; calibration {args.calibration}")
    chance_table(rows, kind, calibration, [int(x) for x in args.points.split(",")])
    replay_table(samples, rows, kind, calibration, [int(x) for x in args.min_n.split(",")], args.futility, args.wave)


def chance_table(rows, kind, calibration, points) -> None:
    """After k rejections: the chance from the prior alone and from the rescue fit, against what later samples did."""
    prior_only = Calibration([], "prior", kind, acceptance=calibration.acceptance)
    print(f"{'k':>3} {'group':<14} {'problems':>8} {'prior':>7} {'rescue':>7} {'seen':>6}")
    for k in points:
        rejected = [s for s in rows if len(s) > k and accepted_count(s[:k]) == 0]
        groups = {
            "all": rejected,
            "out of reach": [s for s in rejected if max(s[:k]) < 1e-4],
            "near misses": [s for s in rejected if max(s[:k]) >= 1e-4],
        }
        for name, group in groups.items():
            if not group:
                continue
            prior = sum(prior_only.chance_of_acceptance(kind, s[:k], len(s) - k) for s in group) / len(group)
            rescue = sum(calibration.chance_of_acceptance(kind, s[:k], len(s) - k) for s in group) / len(group)
            seen = sum(accepted_count(s[k:]) > 0 for s in group) / len(group)
            print(f"{k:>3} {name:<14} {len(group):>8} {prior:>7.3f} {rescue:>7.3f} {seen:>6.3f}")


def replay_table(samples, rows, kind, calibration, min_ns, futility, wave) -> None:
    """The futility stop replayed on the run's samples in order, for each futility_min_n: problems it stops, those
    of them whose later samples hold an accepted right one by sample 16 (lost against fixed N = 16) or by the run's
    N (lost against drawing on), and the samples it saves a problem."""
    print(
        f"\nfutility stop replayed (F = {futility}, waves of {wave}; each problem followed up to its first accepted sample)"
    )
    print(f"{'min_n':>5} {'stopped':>8} {'lost vs 16':>11} {'lost vs N':>10} {'saved / problem':>16}")
    for min_n in min_ns:
        stopped = lost16 = lost_n = saved = 0
        for row, scores in zip(samples, rows):
            n = len(scores)
            for k in range(wave, n, wave):
                if accepted_count(scores[:k]) > 0:
                    break
                if k >= min_n and calibration.chance_of_acceptance(kind, scores[:k], n - k) < futility:
                    good = [j for j in range(k, n) if scores[j] >= ACCEPT_AT and row[j].get("correct")]
                    stopped, saved = stopped + 1, saved + n - k
                    lost16, lost_n = lost16 + any(j < 16 for j in good), lost_n + bool(good)
                    break
        print(f"{min_n:>5} {stopped:>8} {lost16:>11} {lost_n:>10} {saved / len(rows):>16.1f}")


if __name__ == "__main__":
    main()
