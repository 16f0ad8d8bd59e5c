"""Confidence from the model's own tokens (DeepConf) against fixed N and the verifier, side by side in one run.

For every problem set (the bundled set and fresh sets of the synthetic task, by seed) and every generator
(the embedded default at each `--temperatures`; a higher temperature is a weaker generator), on the same
problems:
  - fixed N = `--n`: majority, and offline filtering (keep the top 10% / 90% of the samples by a confidence kind,
    then majority: `filtered10:<kind>`, `filtered90:<kind>`), all from one generation pass;
  - deepconf (online): warm-up, confidence-stopped samples, consensus stop, answer by confidence;
  - deepconf, stop by confidence and answer by the verifier (`vote_from=weighted:<verifier>`);
  - deepconf, warm-up threshold and trace stop by confidence but the problem stopped by the verifier's vote share
    (`consensus_from=weighted:<verifier>`, over samples) and answered by confidence;
  - adaptive N with the verifier (its headline vote, confidence over samples).
Prints one table per generator (accuracy and generated tokens per problem of every run) and whether the online
strategy reaches majority@N's accuracy (within 0.005) with at least 50% fewer generated tokens.

Results go to OUT_DIR/<generator>/<set>/<run>.jsonl and are resumed.

    python scripts/bench_confidence.py                                  # 4 sets x 2 generators, N = 64
    python scripts/bench_confidence.py --per-level 4 --sets bundled,4242 --temperatures 1.5
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any, Sequence

from tts_engine.engine import Engine
from tts_engine.inputs.models import default_problems_path
from tts_engine.inputs.problems import load_problems
from tts_engine.strategies.adaptive import AdaptiveConfig
from tts_engine.strategies.deepconf import DeepConfConfig
from tts_engine.tasks.arith.generator import write_problem_set

TOKEN_GOAL = 0.5
ACCURACY_SLACK = 0.005


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="bundled,4242,90210,515151", help="'bundled' and seeds of fresh sets")
    ap.add_argument("--levels", default="3,4,5", help="levels of the task kept in every set")
    ap.add_argument("--per-level", type=int, default=10, help="problems per level and set")
    ap.add_argument("--temperatures", default="1.0,1.5", help="one generator per temperature")
    ap.add_argument("--n", type=int, default=64, help="N of fixed, the budget of the online strategies")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--kind", default="conf_lowest_group", help="confidence kind of the offline filters")
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--eta", type=float, default=0.9)
    ap.add_argument("--consensus", type=float, default=0.95)
    ap.add_argument("--trace-wave", type=int, default=8)
    ap.add_argument("--adaptive-tau", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default="bench_out/confidence")
    return ap.parse_args(argv)


def problem_sets(args) -> dict[str, list]:
    levels = tuple(int(x) for x in args.levels.split(","))
    out = {}
    for name in args.sets.split(","):
        if name == "bundled":
            every = load_problems(default_problems_path())
            problems = [
                p for level in levels for p in [q for q in every if q.fields.get("level") == level][: args.per_level]
            ]
        else:
            path = write_problem_set(Path(args.out_dir) / f"s{name}.jsonl", int(name), args.per_level, levels)
            problems, name = load_problems(path), f"s{name}"
        out[name] = problems
    return out


def row(run: str, records: list[dict[str, Any]], correct) -> dict[str, Any]:
    graded = [r for r in records if r["reference"] is not None]
    return {
        "run": run,
        "accuracy": sum(bool(correct(r)) for r in graded) / max(1, len(graded)),
        "tokens": sum(r["compute"]["generated_tokens"] for r in records) / max(1, len(records)),
    }


def run_set(plain: Engine, verified: Engine, problems, args, temperature: float, out: Path) -> list[dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    common = dict(temperature=temperature, seed=args.seed, max_new_tokens=args.max_new_tokens, progress=False)
    verifier_key = f"weighted:{verified.headline_kind}"
    deepconf = dict(warmup=args.warmup, eta=args.eta, consensus=args.consensus, trace_wave=args.trace_wave)
    rows = []
    fixed = plain.solve(problems, n=args.n, out=out / "fixed.jsonl", **common)
    rows.append(row(f"majority@{args.n}", fixed, lambda r: r["aggregations"]["majority"]["correct"]))
    for key in (f"filtered10:{args.kind}", f"filtered90:{args.kind}", f"weighted:{args.kind}", "filtered90:likelihood"):
        rows.append(row(f"{key}@{args.n}", fixed, lambda r, key=key: r["aggregations"][key]["correct"]))
    online = plain.solve(
        problems, strategy="deepconf", n=args.n, config=DeepConfConfig(**deepconf), out=out / "deepconf.jsonl", **common
    )
    rows.append(row("deepconf (confidence stops, confidence votes)", online, lambda r: r["deepconf"]["correct"]))
    cv = verified.solve(
        problems,
        strategy="deepconf",
        n=args.n,
        config=DeepConfConfig(**deepconf, vote_from=verifier_key),
        out=out / "deepconf_vote_verifier.jsonl",
        **common,
    )
    rows.append(row("deepconf (confidence stops, verifier votes)", cv, lambda r: r["deepconf"]["correct"]))
    vc = verified.solve(
        problems,
        strategy="deepconf",
        n=args.n,
        config=DeepConfConfig(**deepconf, consensus_from=verifier_key, consensus_over="samples"),
        out=out / "deepconf_consensus_verifier.jsonl",
        **common,
    )
    rows.append(row("deepconf (verifier stops problems, confidence votes)", vc, lambda r: r["deepconf"]["correct"]))
    adaptive = verified.solve(
        problems,
        strategy="adaptive-n",
        config=AdaptiveConfig(wave=2, min_n=2, max_n=args.n, tau=args.adaptive_tau, confidence_over="samples"),
        out=out / "adaptive_n_verifier.jsonl",
        **common,
    )
    rows.append(row("adaptive N, verifier", adaptive, lambda r: r["aggregations"][verifier_key]["correct"]))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    plain, verified = Engine(verifier="none"), Engine()
    sets = problem_sets(args)
    started = time.perf_counter()
    verdicts = []
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        tables = {}
        for name, problems in sets.items():
            out = Path(args.out_dir) / f"t{temperature}" / name
            tables[name] = run_set(plain, verified, problems, args, temperature, out)
        print(
            f"\n## generator: embedded default at temperature {temperature} ({args.per_level} problems per level "
            f"{args.levels} per set, N = {args.n})"
        )
        names = list(tables)
        print("| run | " + " | ".join(f"{n} acc / tokens" for n in names) + " |")
        print("|---|" + "---|" * len(names))
        for i, first in enumerate(tables[names[0]]):
            cells = [f"{tables[n][i]['accuracy']:.3f} / {tables[n][i]['tokens']:.0f}" for n in names]
            print(f"| {first['run']} | " + " | ".join(cells) + " |")
        for n in names:
            base, online = tables[n][0], tables[n][5]
            saved = 1 - online["tokens"] / base["tokens"]
            ok = online["accuracy"] >= base["accuracy"] - ACCURACY_SLACK and saved >= TOKEN_GOAL
            verdicts.append((temperature, n, ok, saved, online["accuracy"] - base["accuracy"]))
    print()
    for temperature, n, ok, saved, delta in verdicts:
        print(
            f"T={temperature} {n}: deepconf {'meets' if ok else 'MISSES'} the goal "
            f"(accuracy {delta:+.3f} vs majority@{args.n}, {100 * saved:.0f}% fewer generated tokens)"
        )
    print(f"\ntime: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
