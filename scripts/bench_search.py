"""Step-level search and particle filtering beside best-of-N, weighted and majority voting, at equal compute.

On the same model, verifier and problems, for each problem set, seed and N: best-of-N sampling scored by the
verifier (the engine's fixed strategy: its best-of-N, weighted and majority votes over the N samples), beam
search and DVTS with N beams, particle filtering with N particles and particle Gibbs (N split into sweeps),
each search voted by its weighted vote over its finished samples' step scores. Every run goes through
`Engine.solve` (what `tts solve --strategy S` calls) and writes its results JSONL. Accuracy is reported as the mean
over seeds with 2 standard errors, beside generated and verifier tokens per problem and their sum; the plots show
accuracy against total tokens (generated + verifier) and against generated tokens alone. Beside them, coverage
(a right answer among the final samples: the most any vote over them can reach) and pass@1 (the share of final
samples that are right: where the budget went).

    python scripts/bench_search.py --limit 40                     # bundled set, N = 4, 16, 64, one seed
    python scripts/bench_search.py --set bundled --set s1=runs/sets/s1.jsonl --levels 6-8 --limit 30 \\
        --ns 4,8,16,32,64 --seeds 0,1,2 --runs best-of-n,beam,dvts,particle,gibbs --resume
    python scripts/bench_search.py --set tts_engine/assets/problems/arith_levels1-5.jsonl --limit 20 \\
        --model tts_engine/assets/tango/generator \\
        --verifier process --verifier-model tts_engine/assets/tango/verifier --step-reduction min

Each finished run appends its rows to OUT/rows.jsonl; `--resume` skips the runs found there (a run cut short
is redone from the start, so its wall time is whole).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from tts_engine.engine import Engine
from tts_engine.inputs.models import default_problems_path
from tts_engine.inputs.problems import Problem, load_problems
from tts_engine.strategies.particle import ParticleConfig
from tts_engine.strategies.search import SearchConfig

RUNS = ("best-of-n", "beam", "beam-repeats", "dvts", "particle", "gibbs")
"""beam-repeats: beam search keeping repeated texts among its beams (--no-filter-duplicates)."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="checkpoint directory (default: the embedded model)")
    ap.add_argument(
        "--set",
        "--problems",
        action="append",
        dest="sets",
        help="NAME=PATH or PATH (repeatable; default: bundled, the bundled set)",
    )
    ap.add_argument("--levels", help="keep these levels of every set, e.g. 6-8 (problems with a level field)")
    ap.add_argument("--limit", type=int, default=40, help="this many problems per set, spread evenly over it")
    ap.add_argument("--verifier", default="own", choices=["own", "unified", "process"], help="unified: own")
    ap.add_argument("--verifier-model", help="a separate verifier checkpoint (needed by --verifier process)")
    ap.add_argument("--ns", default="4,16,64", help="N values (multiples of --beam-width and of --sweeps)")
    ap.add_argument("--seeds", default="0", help="seeds, comma-separated (error bars need two or more)")
    ap.add_argument("--runs", default="best-of-n,beam,dvts,particle", help=f"comma-separated, of {', '.join(RUNS)}")
    ap.add_argument("--beam-width", type=int, default=4)
    ap.add_argument("--sweeps", type=int, default=2, help="particle Gibbs sweeps")
    ap.add_argument("--resample-temperature", type=float, default=1.0)
    ap.add_argument(
        "--step-reduction",
        choices=["last", "min", "prod", "mean"],
        help="default: the step scorer's own (prod for the default's step checks, last otherwise)",
    )
    ap.add_argument("--lookahead", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--max-new-tokens", type=int, default=256, help="as tts solve")
    ap.add_argument("--out", default="runs/bench_search", help="output folder")
    ap.add_argument("--resume", action="store_true", help="skip the runs OUT/rows.jsonl already holds")
    args = ap.parse_args(argv)
    unknown = set(args.runs.split(",")) - set(RUNS)
    if unknown:
        ap.error(f"--runs: unknown {sorted(unknown)}; known: {', '.join(RUNS)}")
    return args


def spread(items: list, limit: int) -> list:
    """`limit` items evenly spread over the list (every level of a set is represented)."""
    if limit >= len(items):
        return items
    return [items[i * len(items) // limit] for i in range(limit)]


def load_set(spec: str, levels: set[int] | None, limit: int) -> tuple[str, list[Problem]]:
    name, sep, path = spec.partition("=")
    if not sep:
        name, path = Path(spec).stem if spec != "bundled" else "bundled", spec
    problems = load_problems(default_problems_path() if path == "bundled" else path)
    if levels:
        problems = [p for p in problems if p.fields.get("level") in levels]
        if not problems:
            raise SystemExit(f"{spec}: no problem of levels {sorted(levels)}")
    return name, spread(problems, limit)


def accuracy(records: list[dict[str, Any]], key: str) -> float:
    return sum(bool(r["aggregations"][key]["correct"]) for r in records) / len(records)


def per_problem(records: list[dict[str, Any]], field: str) -> float:
    return sum(r["compute"][field] for r in records) / len(records)


def coverage(records: list[dict[str, Any]]) -> dict[str, float]:
    """coverage: share of problems with a right answer among the final samples (what any vote could reach);
    pass@1: mean share of right final samples (how much of the budget sits on right answers)."""
    return {
        "coverage": round(sum(any(bool(s["correct"]) for s in r["samples"]) for r in records) / len(records), 4),
        "pass1": round(
            sum(sum(bool(s["correct"]) for s in r["samples"]) / max(1, len(r["samples"])) for r in records)
            / len(records),
            4,
        ),
    }


def solvers(args, engine, n: int, common: dict[str, Any]) -> dict[str, Callable[[Path], list[dict[str, Any]]]]:
    """Each run's solve (its results file as argument): every one `Engine.solve`, as `tts solve` calls it."""
    search = SearchConfig(beam_width=args.beam_width, step_reduction=args.step_reduction, lookahead=args.lookahead)
    repeats = SearchConfig(
        beam_width=args.beam_width,
        step_reduction=args.step_reduction,
        lookahead=args.lookahead,
        filter_duplicates=False,
    )
    particle = ParticleConfig(resample_temperature=args.resample_temperature, step_reduction=args.step_reduction)
    gibbs = ParticleConfig(
        resample_temperature=args.resample_temperature, step_reduction=args.step_reduction, sweeps=args.sweeps
    )
    every = {
        "best-of-n": lambda out: engine.solve(common["problems"], n=n, out=out, **common["sampling"]),
        "beam": lambda out: engine.solve(
            common["problems"], strategy="beam", config=search, n=n, out=out, **common["sampling"]
        ),
        "beam-repeats": lambda out: engine.solve(
            common["problems"], strategy="beam", config=repeats, n=n, out=out, **common["sampling"]
        ),
        "dvts": lambda out: engine.solve(
            common["problems"], strategy="dvts", config=search, n=n, out=out, **common["sampling"]
        ),
        "particle": lambda out: engine.solve(
            common["problems"], strategy="particle", config=particle, n=n, out=out, **common["sampling"]
        ),
        "gibbs": lambda out: engine.solve(
            common["problems"], strategy="particle", config=gibbs, n=n, out=out, **common["sampling"]
        ),
    }
    return {name: every[name] for name in args.runs.split(",")}


def votes(run: str, kind: str, step: str) -> dict[str, str]:
    """The rows a run reports: label -> aggregation key."""
    if run == "best-of-n":
        return {"best-of-N": f"best_of_n:{kind}", "weighted": f"weighted:{kind}", "majority": "majority"}
    return {run: f"weighted:{step}"}


def run_all(args, engine, sets: list[tuple[str, list[Problem]]], rows_path: Path) -> list[dict[str, Any]]:
    kind = engine.headline_kind  # verifier_recompute for the default, process for a process verifier
    step = f"step_{args.step_reduction}"
    done = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    have = {(r["set"], r["seed"], r["n"], r["run"]) for r in done}
    out = Path(args.out)
    rows = list(done)
    for set_name, problems in sets:
        for seed in [int(s) for s in args.seeds.split(",")]:
            sampling = dict(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=seed, progress=False)
            for n in [int(x) for x in args.ns.split(",")]:
                common = {"problems": problems, "sampling": sampling}
                for name, solve in solvers(args, engine, n, common).items():
                    if (set_name, seed, n, name) in have:
                        continue
                    path = out / f"{set_name}_seed{seed}_{name}_n{n}.jsonl"
                    path.unlink(missing_ok=True)
                    started = time.perf_counter()
                    records = solve(path)
                    wall = time.perf_counter() - started
                    new = [
                        {
                            "set": set_name,
                            "seed": seed,
                            "n": n,
                            "run": name,
                            "strategy": label,
                            "accuracy": round(accuracy(records, key), 4),
                            "generated_tokens": round(per_problem(records, "generated_tokens"), 1),
                            "verifier_tokens": round(per_problem(records, "verifier_tokens"), 1),
                            **coverage(records),
                            "wall_s": round(wall, 2),
                        }
                        for label, key in votes(name, kind, step).items()
                    ]
                    with rows_path.open("a") as f:
                        f.writelines(json.dumps(r) + "\n" for r in new)
                    rows += new
                    shown = "  ".join(f"{r['strategy']} {r['accuracy']:.3f}" for r in new)
                    print(f"{set_name} seed {seed} N={n:<3} {name:<10} {wall:7.1f} s  {shown}", flush=True)
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (set, N, strategy): mean over seeds of accuracy (with 2 s.e.), tokens and wall time."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], r["n"], r["strategy"]), []).append(r)
    out = []
    for (set_name, n, label), mine in groups.items():
        acc = [r["accuracy"] for r in mine]
        se = statistics.stdev(acc) / math.sqrt(len(acc)) if len(acc) > 1 else float("nan")
        mean = lambda field: statistics.fmean(r[field] for r in mine)  # noqa: E731
        out.append(
            {
                "set": set_name,
                "n": n,
                "strategy": label,
                "seeds": len(mine),
                "accuracy": round(statistics.fmean(acc), 4),
                "two_se": round(2 * se, 4),
                "generated_tokens": round(mean("generated_tokens"), 1),
                "verifier_tokens": round(mean("verifier_tokens"), 1),
                "total_tokens": round(mean("generated_tokens") + mean("verifier_tokens"), 1),
                "coverage": round(mean("coverage"), 4),
                "pass1": round(mean("pass1"), 4),
                "wall_s": round(mean("wall_s"), 2),
            }
        )
    return sorted(out, key=lambda r: (r["set"], r["n"], r["strategy"]))


def table(summary: list[dict[str, Any]]) -> str:
    lines = []
    for set_name in dict.fromkeys(r["set"] for r in summary):
        lines += [
            f"\n{set_name}:\n",
            "| N | strategy | accuracy (± 2 s.e.) | generated tokens / problem | verifier tokens / problem | "
            "total | verifier tokens / best-of-N's | coverage | pass@1 | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        mine = [r for r in summary if r["set"] == set_name]
        for r in mine:
            base = next((b for b in mine if b["n"] == r["n"] and b["strategy"] == "weighted"), None)
            ratio = f"{r['verifier_tokens'] / base['verifier_tokens']:.2f}" if base and base["verifier_tokens"] else "-"
            spread_ = "" if math.isnan(r["two_se"]) else f" ± {r['two_se']:.3f}"
            lines.append(
                f"| {r['n']} | {r['strategy']} | {r['accuracy']:.3f}{spread_} | {r['generated_tokens']:.0f} | "
                f"{r['verifier_tokens']:.0f} | {r['total_tokens']:.0f} | {ratio} | {r['coverage']:.3f} | "
                f"{r['pass1']:.3f} | {r['wall_s']:.1f} |"
            )
    return "\n".join(lines).lstrip("\n")


def plot(summary: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["set"] for r in summary))
    fig, axes = plt.subplots(2, len(sets), figsize=(4.2 * len(sets), 7.2), squeeze=False)
    for column, set_name in enumerate(sets):
        for row, (x_field, x_label) in enumerate(
            (("total_tokens", "generated + verifier tokens / problem"), ("generated_tokens", "generated tokens"))
        ):
            ax = axes[row][column]
            mine = [r for r in summary if r["set"] == set_name]
            for label in dict.fromkeys(r["strategy"] for r in mine):
                line = sorted((r for r in mine if r["strategy"] == label), key=lambda r: r[x_field])
                errors = [0 if math.isnan(r["two_se"]) else r["two_se"] for r in line]
                ax.errorbar(
                    [r[x_field] for r in line], [r["accuracy"] for r in line], yerr=errors, marker="o", ms=3,
                    capsize=2, label=label,
                )  # fmt: skip
            ax.set_xscale("log", base=2)
            ax.set_xlabel(x_label, fontsize=8)
            ax.set_ylabel("accuracy", fontsize=8)
            ax.set_title(set_name, fontsize=9)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
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
        process_headline=args.step_reduction or "last",
    )
    if args.step_reduction is None:  # the scorer's own; each run below builds its own scorer, sharing no reads
        scorer = engine.parts.steps.scorer(engine.prompt_config.step_delimiter)
        args.step_reduction = SearchConfig().for_scorer(scorer).step_reduction
    levels = None
    if args.levels:
        low, _, high = args.levels.partition("-")
        levels = set(range(int(low), int(high or low) + 1))
    sets = [load_set(spec, levels, args.limit) for spec in args.sets or ["bundled"]]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    if not args.resume:
        rows_path.unlink(missing_ok=True)
    print(
        f"{engine.model_label}, verifier {args.verifier}, sets {[f'{name} ({len(p)})' for name, p in sets]}, "
        f"T={args.temperature}, M={args.beam_width}, sweeps {args.sweeps}, aggregation {args.step_reduction}, "
        f"resample T={args.resample_temperature}, lookahead {args.lookahead}, seeds {args.seeds}",
        flush=True,
    )
    rows = run_all(args, engine, sets, rows_path)
    summary = summarize(rows)
    text = table(summary)
    print(text)
    seeds = sorted({r["seed"] for r in rows})
    title = f"{args.model or 'embedded default model'}, verifier {args.verifier}, seeds {seeds} (error bars: 2 s.e.)"
    plot(summary, out / "search_vs_best_of_n.png", title)
    (out / "table.md").write_text(text + "\n")
    (out / "summary.json").write_text(json.dumps({"args": vars(args), "summary": summary}, indent=1))
    print(f"wrote {out / 'search_vs_best_of_n.png'}, {out / 'table.md'}, {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
