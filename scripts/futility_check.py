"""How well the futility stop's chance reads a problem whose every sample so far was rejected, on a long fixed run.

    python scripts/futility_check.py RESULTS.jsonl [--calibration FILE] [--points 4,8,12,16,24,32]

RESULTS is `tts solve --n 64` (or any N >= 16) of a labelled set. For each point k, over the problems whose first k
samples the verifier all rejected (headline score < .5): the chance the stop would give that the rest (up to N)
bring an accepted one, from the calibration file's acceptance prior alone (Beta posterior) and from its rescue fit,
against the share whose later samples did bring one; then the same split by how near the k samples came (best
score below 1e-4: out of reach; otherwise near misses). A set the file was fitted on reads in-sample.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tts_engine.inputs.models import default_model_path
from tts_engine.pipeline.calibration import FILE_NAME, Calibration, load_calibration
from tts_engine.pipeline.futility import accepted_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results")
    parser.add_argument("--calibration", default=str(default_model_path() / FILE_NAME))
    parser.add_argument("--points", default="4,8,12,16,24,32")
    args = parser.parse_args()
    records = [json.loads(line) for line in Path(args.results).read_text().splitlines() if line.strip()]
    kind = records[0]["run"]["headline_kind"]
    calibration = load_calibration(args.calibration, kind)
    prior_only = Calibration([], "prior", kind, acceptance=calibration.acceptance)
    rows = [[s["scores"].get(kind, 0.0) for s in r["samples"]] for r in records if r.get("samples")]
    print(f"{args.results}: {len(rows)} problems, {kind}; calibration {args.calibration}")
    print(f"{'k':>3} {'group':<14} {'problems':>8} {'prior':>7} {'rescue':>7} {'seen':>6}")
    for k in (int(x) for x in args.points.split(",")):
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


if __name__ == "__main__":
    main()
