"""Why a step-level search wins or loses, round by round, from its results files (beam, dvts, particle).

For each round (depth) of every problem's tree, every child generated that round is labelled right (each of its
steps so far is the problem's next operation, computed right; a boxed answer after the last operation equal to
the answer) or wrong, by the arithmetic task's own chain. Printed per round:

- problems: problems with both a right and a wrong child that round (the ones an AUROC can be read on);
- AUROC rank / AUROC step: within-problem AUROC of the score the search ranks and weighs by (its step
  aggregation) and of the new step's own score, mean over those problems: does the scorer separate right from
  wrong prefixes at that depth?
- right pruned: of the problems that had a right child that round, the share where no right child was kept
  (kept by beam/dvts's cut or drawn by particle resampling) nor finished: where the search lost the right path;
- lost by now: problems whose every right path is gone after that round (a wrong prefix never becomes right).

    python scripts/search_diagnostics.py runs/bench_search/*_beam_n16.jsonl runs/bench_search/*_particle_n16.jsonl
    python scripts/search_diagnostics.py --pool runs/bench_search/*_seed*_beam_n16.jsonl   # one table, every set
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

from tts_engine.pipeline.metrics import auroc
from tts_engine.running.results import read_results
from tts_engine.tasks.arith.chain import apply, is_task_problem, problem_steps, read_step_line

BOXED_PREFIX, BOXED_SUFFIX = "\\boxed{", "}"


def right_prefix(problem: str, steps: Sequence[str]) -> bool:
    """Whether `steps` are the problem's first operations in order, each computed right (a boxed answer step
    right only after the last operation and equal to the result)."""
    value, chain = problem_steps(problem)
    for k, text in enumerate(steps):
        if text.startswith(BOXED_PREFIX):
            return (
                k == len(chain) and text.endswith(BOXED_SUFFIX) and text[len(BOXED_PREFIX) : -1].strip() == str(value)
            )
        line = read_step_line(text)
        if line is None or k >= len(chain) or (line.left, line.op, line.operand) != (value, *chain[k]):
            return False
        value = apply(value, *chain[k])
        if line.result != value:
            return False
    return True


def node_steps(nodes: dict[int, dict[str, Any]], node: dict[str, Any], delimiter: str) -> list[str]:
    """The steps of the path to `node` (a last-round child may hold several)."""
    steps: list[str] = []
    while node["parent"] is not None:
        steps = [s.strip() for s in node["step"].split(delimiter) if s.strip()] + steps
        node = nodes[node["parent"]]
    return steps


def separation(right: list[float], wrong: list[float]) -> float:
    """AUROC of right against wrong scores (`tts_engine.pipeline.metrics.auroc`: ties count 1/2)."""
    return auroc(right + wrong, [True] * len(right) + [False] * len(wrong))


def diagnose(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round: the figures of the module docstring."""
    per_round: dict[int, dict[str, list]] = {}
    lost_after: list[int] = []  # per problem: the round after which no right path remained
    for record in records:
        if not is_task_problem(record["problem"]) or "search" not in record:
            continue
        delimiter = (record["run"].get("search") or record["run"].get("particle") or {}).get("step_delimiter", "\n")
        nodes = {n["id"]: n for n in record["search"]["nodes"]}
        lost = None
        for r in sorted({n["round"] for n in nodes.values() if n["round"] >= 0}):
            children = [n for n in nodes.values() if n["round"] == r]
            labels = [right_prefix(record["problem"], node_steps(nodes, n, delimiter)) for n in children]
            slot = per_round.setdefault(r, {"auroc_rank": [], "auroc_step": [], "pruned": [], "lost": []})
            right = [n for n, ok in zip(children, labels) if ok]
            wrong = [n for n, ok in zip(children, labels) if not ok]
            if right and wrong:
                slot["auroc_rank"].append(separation([n["score"] for n in right], [n["score"] for n in wrong]))
                last = lambda n: n["step_scores"][-1] if n["step_scores"] else 0.0  # noqa: E731
                slot["auroc_step"].append(separation([last(n) for n in right], [last(n) for n in wrong]))
            if right:
                slot["pruned"].append(not any(n["kept"] or n["finished"] for n in right))
            if lost is None and (not right or not any(n["kept"] or n["finished"] for n in right)):
                lost = r
        lost_after.append(lost if lost is not None else 10**9)
    rows = []
    for r, slot in sorted(per_round.items()):
        mean = lambda xs: statistics.fmean(xs) if xs else float("nan")  # noqa: E731
        rows.append(
            {
                "round": r,
                "problems": len(slot["auroc_rank"]),
                "auroc_rank": mean(slot["auroc_rank"]),
                "auroc_step": mean(slot["auroc_step"]),
                "right_pruned": mean(slot["pruned"]),
                "with_right": len(slot["pruned"]),
                "lost_by_now": sum(lost <= r for lost in lost_after) / max(1, len(lost_after)),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="results JSONL files of beam, dvts or particle runs")
    ap.add_argument("--pool", action="store_true", help="one table over every file's problems (seeds, sets)")
    args = ap.parse_args(argv)
    groups = [(" + ".join(args.results), args.results)] if args.pool else [(path, [path]) for path in args.results]
    for name, paths in groups:
        records = [record for path in paths for record in read_results(Path(path))]
        rows = diagnose(records)
        print(f"\n{name} ({len(records)} problems)")
        print("| round | problems (right and wrong) | AUROC rank | AUROC step | right pruned | lost by now |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            if not row["with_right"] and not row["problems"]:
                continue  # a late round no right path reached
            print(
                f"| {row['round'] + 1} | {row['problems']} | {row['auroc_rank']:.3f} | {row['auroc_step']:.3f} | "
                f"{row['right_pruned']:.3f} of {row['with_right']} | {row['lost_by_now']:.3f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
