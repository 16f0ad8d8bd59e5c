"""What a thinker that never slips would reach, from the default's own samples.

A thinker that solves a problem again and again inside one trace can do no better than its solutions. This script
takes a results file of the default (`tts solve SET --n N --out R.jsonl`), reads each problem's N samples as the
solutions a thinker would write one after another, and plays two stopping rules over them at thinking budgets:

- agree: stop once a solution's answer equals an earlier one's, answer with it; else the first solution's answer
  (the trace format of tasks/arith/thinking.py);
- check: write the recompute check after each solution, stop at the first one the check accepts (the default's
  verifier_recompute score >= .5), answer with it; else the first solution's answer.

A solution counts only when it ends within the budget. Each later solution also costs the problem written again
and `wait`; under `check`, each solution costs its check's tokens too (the verifier's text). Every rotation of a
problem's samples is one trace; the figure is the mean over problems of the share of right traces (pass@1 of the
thinker), beside the default's pass@1 and majority over all N.

    python scripts/thinker_ceiling.py R.jsonl [--budgets 128,256,512,1024]
"""

import argparse
import json
from collections import Counter

WAIT_TOKENS = 5  # "wait\n"


def solution_costs(record: dict, rule: str) -> list[int]:
    """Tokens each sample costs as the i-th solution of a trace, in the record's sample order."""
    restate = record["compute"]["prompt_tokens"] + WAIT_TOKENS
    costs = []
    for sample in record["samples"]:
        cost = sample["num_tokens"]
        if rule == "check":
            cost += sample.get("verifier_tokens", 0)
        costs.append(cost + (restate if costs else 0))
    return costs


def stop_index(samples: list[dict], rule: str) -> int | None:
    """Index of the solution a never-slipping thinker stops on, or None when it never stops."""
    seen = set()
    for index, sample in enumerate(samples):
        if rule == "agree" and sample["answer"] in seen:
            return index
        if rule == "check" and sample["scores"].get("verifier_recompute", 0.0) >= 0.5:
            return index
        seen.add(sample["answer"])
    return None


def trace_correct(record: dict, rotation: int, rule: str, budget: int) -> bool | None:
    """Whether the trace over the samples from `rotation` on is right at `budget`; None when no solution fits."""
    samples = record["samples"][rotation:] + record["samples"][:rotation]
    rotated = {**record, "samples": samples}
    spent, fitting = 0, []
    for sample, cost in zip(samples, solution_costs(rotated, rule), strict=True):
        spent += cost
        if spent > budget:
            break
        fitting.append(sample)
    if not fitting:
        return None
    stop = stop_index(fitting, rule)
    return bool((fitting[stop] if stop is not None else fitting[0])["correct"])


def thinker_pass_at_1(records: list[dict], rule: str, budget: int) -> float:
    shares = []
    for record in records:
        n = len(record["samples"])
        shares.append(sum(bool(trace_correct(record, r, rule, budget)) for r in range(n)) / n)
    return sum(shares) / len(shares)


def default_figures(records: list[dict]) -> tuple[float, float]:
    pass_at_1 = sum(sum(s["correct"] for s in r["samples"]) / len(r["samples"]) for r in records) / len(records)
    majority = 0
    for record in records:
        top, _ = Counter(s["answer"] for s in record["samples"]).most_common(1)[0]
        majority += any(s["correct"] for s in record["samples"] if s["answer"] == top)
    return pass_at_1, majority / len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--budgets", default="128,256,512,1024")
    args = parser.parse_args()
    with open(args.results, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    records = [r for r in records if r["samples"] and all(s.get("correct") is not None for s in r["samples"])]
    pass_at_1, majority = default_figures(records)
    n = len(records[0]["samples"])
    print(f"{len(records)} problems, {n} samples each: the default's pass@1 {pass_at_1:.3f}, majority {majority:.3f}")
    budgets = [int(b) for b in args.budgets.split(",")]
    print("thinker pass@1 at budget " + "".join(f"{b:>8}" for b in budgets))
    for rule in ("agree", "check"):
        figures = "".join(f"{thinker_pass_at_1(records, rule, b):>8.3f}" for b in budgets)
        print(f"{rule:<25}{figures}")


if __name__ == "__main__":
    main()
