"""Step-level search beside best-of-N and weighted voting at equal generated tokens, and its wall time.

On the same model, verifier and problems, for each N: best-of-N sampling scored by the verifier (the engine's
fixed strategy: best-of-N, weighted and majority votes over the N samples), beam search and DVTS with N beams
(their weighted vote over the finished beams' step scores). Prints a table (accuracy, generated and verifier
tokens per problem, wall seconds) and the wall-time ratio of beam search to best-of-N at the largest N, both run
in this process one after the other; writes the plot (accuracy against generated tokens per problem),
table.md, summary.json and every run's results JSONL to OUT_DIR (runs start fresh: timings are never resumed).

    python scripts/bench_search.py --limit 40                     # embedded model, its unified verifier
    python scripts/bench_search.py --problems tts_engine/assets/problems/arith_levels1-5.jsonl --limit 20 \\
        --model tts_engine/assets/tango/generator \\
        --verifier process --verifier-model tts_engine/assets/tango/verifier --step-aggregation min
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from tts_engine.engine import Engine
from tts_engine.models import default_problems_path
from tts_engine.problems import load_problems
from tts_engine.strategies.search import SearchConfig

GOAL_WALL_RATIO = 3.0
"""Beam search with N beams may take at most this many times the wall time of best-of-N (issue 14)."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="checkpoint directory (default: the embedded model)")
    ap.add_argument("--problems", help="problem file (default: the bundled set)")
    ap.add_argument("--limit", type=int, default=40, help="this many problems, spread evenly over the file")
    ap.add_argument("--verifier", default="unified", choices=["unified", "process"])
    ap.add_argument("--verifier-model", help="a separate verifier checkpoint (needed by --verifier process)")
    ap.add_argument("--ns", default="4,16,64", help="N values (multiples of --beam-width)")
    ap.add_argument("--beam-width", type=int, default=4)
    ap.add_argument(
        "--step-aggregation",
        choices=["last", "min", "prod", "mean"],
        help="default: the step scorer's own (prod for the default's path scorer, last otherwise)",
    )
    ap.add_argument("--lookahead", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--max-new-tokens", type=int, default=256, help="as tts solve")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/bench_search", help="output folder")
    return ap.parse_args(argv)


def spread(items: list, limit: int) -> list:
    """`limit` items evenly spread over the list (every level of the bundled set is represented)."""
    if limit >= len(items):
        return items
    return [items[i * len(items) // limit] for i in range(limit)]


def accuracy(records: list[dict[str, Any]], key: str) -> float:
    return sum(bool(r["aggregations"][key]["correct"]) for r in records) / len(records)


def per_problem(records: list[dict[str, Any]], field: str) -> float:
    return sum(r["compute"][field] for r in records) / len(records)


def fresh(path: Path) -> Path:
    path.unlink(missing_ok=True)
    return path


def run_all(args, engine, problems) -> list[dict[str, Any]]:
    kind = engine.headline_kind  # verifier_recompute for the default, process for a process verifier
    step = f"step_{args.step_aggregation}"
    config = SearchConfig(beam_width=args.beam_width, step_aggregation=args.step_aggregation, lookahead=args.lookahead)
    common = dict(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed, progress=False)
    out = Path(args.out)
    rows = []
    for n in [int(x) for x in args.ns.split(",")]:
        runs = {
            "best-of-n": lambda: engine.solve(problems, n=n, out=fresh(out / f"bon_{n}.jsonl"), **common),
            "beam": lambda: engine.solve(
                problems, strategy="beam", config=config, n=n, out=fresh(out / f"beam_{n}.jsonl"), **common
            ),
            "dvts": lambda: engine.solve(
                problems, strategy="dvts", config=config, n=n, out=fresh(out / f"dvts_{n}.jsonl"), **common
            ),
        }
        for name, solve in runs.items():
            started = time.perf_counter()
            records = solve()
            wall = time.perf_counter() - started
            votes = (
                {"best-of-N": f"best_of_n:{kind}", "weighted": f"weighted:{kind}", "majority": "majority"}
                if name == "best-of-n"
                else {name: f"weighted:{step}"}
            )
            for label, key in votes.items():
                rows.append(
                    {
                        "n": n,
                        "run": name,
                        "strategy": label,
                        "accuracy": round(accuracy(records, key), 4),
                        "generated_tokens": round(per_problem(records, "generated_tokens"), 1),
                        "verifier_tokens": round(per_problem(records, "verifier_tokens"), 1),
                        "wall_s": round(wall, 2),
                    }
                )
            print(
                f"N={n:<3} {name:<10} {wall:7.1f} s  "
                + "  ".join(f"{r['strategy']} {r['accuracy']:.3f}" for r in rows if r["n"] == n and r["run"] == name),
                flush=True,
            )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| N | strategy | accuracy | generated tokens / problem | verifier tokens / problem | run wall s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['strategy']} | {r['accuracy']:.3f} | {r['generated_tokens']:.0f} | "
            f"{r['verifier_tokens']:.0f} | {r['wall_s']:.1f} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label in dict.fromkeys(r["strategy"] for r in rows):
        mine = sorted((r for r in rows if r["strategy"] == label), key=lambda r: r["generated_tokens"])
        ax.plot([r["generated_tokens"] for r in mine], [r["accuracy"] for r in mine], marker="o", label=label)
        for r in mine:
            ax.annotate(
                f"{r['n']}",
                (r["generated_tokens"], r["accuracy"]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("generated tokens per problem (labels: N)")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING)
    args = parse_args(argv)
    if args.verifier == "process" and not args.verifier_model:
        raise SystemExit(
            "--verifier process needs --verifier-model PATH (the shipped one: tts_engine/assets/tango/verifier)"
        )
    engine = Engine(
        args.model,
        verifier=args.verifier,
        verifier_model=args.verifier_model,
        process_aggregation=args.step_aggregation or "last",
    )
    if args.step_aggregation is None:  # the scorer's own; each run below builds its own scorer, sharing no reads
        scorer = engine.step_scorer(engine.prompt_config.step_delimiter)
        args.step_aggregation = SearchConfig().for_scorer(scorer).step_aggregation
    problems = spread(load_problems(args.problems or default_problems_path()), args.limit)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"{engine.model_label}, verifier {args.verifier}, {len(problems)} problems, T={args.temperature}, "
        f"M={args.beam_width}, aggregation {args.step_aggregation}, lookahead {args.lookahead}",
        flush=True,
    )
    rows = run_all(args, engine, problems)
    top = max(r["n"] for r in rows)
    wall = {r["run"]: r["wall_s"] for r in rows if r["n"] == top}
    ratio = {name: round(wall[name] / wall["best-of-n"], 3) for name in ("beam", "dvts")}
    text = table(rows)
    verdict = "met" if ratio["beam"] <= GOAL_WALL_RATIO else "NOT met"
    summary = (
        f"wall time at N={top}: beam / best-of-N = {ratio['beam']:.2f}, dvts / best-of-N = {ratio['dvts']:.2f} "
        f"(goal beam <= {GOAL_WALL_RATIO:g}x: {verdict})"
    )
    print(text)
    print(summary)
    title = f"{args.model or 'embedded default model'}: {len(problems)} problems, verifier {args.verifier}"
    plot(rows, out / "search_vs_best_of_n.png", title)
    (out / "table.md").write_text(text + "\n\n" + summary + "\n")
    (out / "summary.json").write_text(json.dumps({"args": vars(args), "rows": rows, "wall_ratio": ratio}, indent=1))
    print(f"wrote {out / 'search_vs_best_of_n.png'}, {out / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
