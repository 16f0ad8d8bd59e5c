"""Adaptive compute vs fixed settings: accuracy against generated tokens per problem, on one model and set.

Runs, on the same model and problems:
  - fixed length: N samples at each token budget;          adaptive length: a sweep of tau over those budgets;
  - fixed N: k samples for each k (one token budget);      adaptive N: a sweep of tau, waves up to max N.
Prints a table (accuracy of the `--confidence-from` strategy, generated and verifier tokens per problem) and
writes one plot (fixed settings as points, adaptive as a line over tau). The goal it checks: the accuracy of
the largest fixed setting at no more than 60% of its generated tokens.

Every run's results go to OUT_DIR/<run>.jsonl and are resumed, so a rerun only generates what is missing
(keep one OUT_DIR per model, problem set and setting: files are matched by run name only).

    python scripts/bench_adaptive.py                      # embedded default model, bundled set, levels 4-5
    python scripts/bench_adaptive.py --limit 20 --taus 0.5,0.8,1.0 --budgets 32,64,128
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from tts_engine.engine import Engine
from tts_engine.inputs.models import default_model_path, default_problems_path
from tts_engine.inputs.problems import load_problems
from tts_engine.strategies.adaptive import AdaptiveConfig, confidence_key, parse_budgets

GOAL_TOKEN_FRACTION = 0.6


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="checkpoint directory (default: the embedded model, else a random tiny one)")
    ap.add_argument("--backend", default="hf", choices=["hf", "vllm", "openai"])
    ap.add_argument("--problems", help="problem file (default: the bundled set)")
    ap.add_argument("--levels", default="4,5", help="keep problems whose `level` field is in this list ('' = all)")
    ap.add_argument("--limit", type=int, default=40, help="at most this many problems (after the level filter)")
    ap.add_argument("--verifier", default="unified", choices=["unified", "none"])
    ap.add_argument("--confidence-from", help="strategy key for confidence and accuracy (default: the headline)")
    ap.add_argument(
        "--confidence-over",
        default="answered",
        choices=["answered", "all", "samples"],
        help="confidence as a share of the answered samples or of all samples",
    )
    ap.add_argument("--n", type=int, default=8, help="samples per problem of the length runs")
    ap.add_argument("--budgets", default="32,64,128", help="token budgets of the length runs")
    ap.add_argument("--fixed-n", default="2,4,8,16", help="sample counts of the fixed-N runs")
    ap.add_argument("--wave", type=int, default=2)
    ap.add_argument("--min-n", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=128, help="token budget of the N runs")
    ap.add_argument("--taus", default="0.5,0.6,0.7,0.8,0.9,1.0", help="tau sweep of both adaptive strategies")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default="bench_out/adaptive", help="results, table and plot go here")
    return ap.parse_args(argv)


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def pick_model(model: str | None) -> tuple[str | None, str]:
    """The model to serve and a sentence saying which it is (a missing embedded default fails loudly)."""
    if model:
        return model, f"model: {model}"
    return None, f"model: the embedded default ({default_model_path()})"


def pick_problems(path: str | None, levels: str, limit: int):
    problems = load_problems(path or default_problems_path())
    wanted = {str(x) for x in levels.split(",") if x.strip()}
    if wanted:
        problems = [p for p in problems if str(p.fields.get("level")) in wanted]
    if not problems:
        raise SystemExit(f"no problems left after the level filter {levels!r}")
    return problems[:limit]


def summarize(name: str, family: str, records: list[dict[str, Any]], key: str, **extra) -> dict[str, Any]:
    """Accuracy of `key` and tokens per problem of one run."""
    graded = [r for r in records if r["reference"] is not None]
    verifier = [
        r["adaptive"]["verifier_tokens_spent"] if "adaptive" in r else r["compute"]["verifier_tokens"] for r in records
    ]
    return {
        "run": name,
        "family": family,
        "problems": len(records),
        "accuracy": sum(bool(r["aggregations"][key]["correct"]) for r in graded) / max(1, len(graded)),
        "generated_tokens": sum(r["compute"]["generated_tokens"] for r in records) / max(1, len(records)),
        "verifier_tokens": sum(verifier) / max(1, len(records)),
        **extra,
    }


def run_all(engine: Engine, problems, args, key: str, out_dir: Path) -> list[dict[str, Any]]:
    budgets, taus = parse_budgets(args.budgets), [float(t) for t in args.taus.split(",")]
    fixed_ns = int_list(args.fixed_n)
    common = dict(temperature=args.temperature, seed=args.seed, progress=False)
    adaptive = dict(confidence_from=key, confidence_over=args.confidence_over)
    rows = []
    for budget in budgets:
        name = f"fixed-length-{budget}"
        records = engine.solve(problems, n=args.n, max_new_tokens=budget, out=out_dir / f"{name}.jsonl", **common)
        rows.append(summarize(name, "fixed length", records, key, setting=f"N={args.n}, {budget} tokens"))
    for k in fixed_ns:
        name = f"fixed-n-{k}"
        records = engine.solve(
            problems, n=k, max_new_tokens=args.max_new_tokens, out=out_dir / f"{name}.jsonl", **common
        )
        rows.append(summarize(name, "fixed N", records, key, setting=f"N={k}, {args.max_new_tokens} tokens"))
    for tau in taus:
        name = f"adaptive-length-{args.confidence_over}-tau{tau}"
        records = engine.solve(
            problems,
            strategy="adaptive-length",
            n=args.n,
            config=AdaptiveConfig(budgets=budgets, tau=tau, **adaptive),
            out=out_dir / f"{name}.jsonl",
            **common,
        )
        rows.append(summarize(name, "adaptive length", records, key, tau=tau, setting=f"tau={tau}"))
    for tau in taus:
        name = f"adaptive-n-{args.confidence_over}-tau{tau}"
        records = engine.solve(
            problems,
            strategy="adaptive-n",
            config=AdaptiveConfig(wave=args.wave, min_n=args.min_n, max_n=max(fixed_ns), tau=tau, **adaptive),
            max_new_tokens=args.max_new_tokens,
            out=out_dir / f"{name}.jsonl",
            **common,
        )
        mean_n = sum(r["adaptive"]["n_used"] for r in records) / max(1, len(records))
        rows.append(summarize(name, "adaptive N", records, key, tau=tau, setting=f"tau={tau}, mean N={mean_n:.1f}"))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'run':<34}{'setting':<28}{'accuracy':>9}{'gen tok/problem':>17}{'verifier tok/problem':>22}"]
    for r in rows:
        lines.append(
            f"{r['run']:<34}{r['setting']:<28}{r['accuracy']:>9.3f}{r['generated_tokens']:>17.1f}"
            f"{r['verifier_tokens']:>22.1f}"
        )
    return "\n".join(lines)


def goal_lines(rows: list[dict[str, Any]]) -> list[str]:
    """For each adaptive family: its cheapest run matching the largest fixed setting's accuracy, and the ratio."""
    lines = []
    for fixed, adaptive in (("fixed length", "adaptive length"), ("fixed N", "adaptive N")):
        family = sorted((r for r in rows if r["family"] == fixed), key=lambda r: r["generated_tokens"])
        smallest, largest = family[0], family[-1]
        if largest["accuracy"] <= smallest["accuracy"]:
            lines.append(
                f"{adaptive}: not informative: more fixed compute buys nothing here ({smallest['run']} "
                f"{smallest['accuracy']:.3f}, {largest['run']} {largest['accuracy']:.3f}), so matching "
                "the largest setting is cheap for any strategy"
            )
            continue
        matching = [r for r in rows if r["family"] == adaptive and r["accuracy"] >= largest["accuracy"]]
        if not matching:
            lines.append(f"{adaptive}: no tau reaches {largest['run']}'s accuracy {largest['accuracy']:.3f}")
            continue
        best = min(matching, key=lambda r: r["generated_tokens"])
        ratio = best["generated_tokens"] / max(1e-9, largest["generated_tokens"])
        verdict = "goal met" if ratio <= GOAL_TOKEN_FRACTION else "goal NOT met"
        lines.append(
            f"{adaptive}: {best['run']} reaches accuracy {best['accuracy']:.3f} (>= {largest['run']}'s "
            f"{largest['accuracy']:.3f}) with {ratio:.0%} of its generated tokens: {verdict} "
            f"(<= {GOAL_TOKEN_FRACTION:.0%})"
        )
    return lines


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    styles = {
        "fixed length": ("tab:blue", "o"),
        "fixed N": ("tab:orange", "s"),
        "adaptive length": ("tab:blue", "-"),
        "adaptive N": ("tab:orange", "-"),
    }
    for family, (colour, style) in styles.items():
        part = sorted((r for r in rows if r["family"] == family), key=lambda r: r["generated_tokens"])
        xs, ys = [r["generated_tokens"] for r in part], [r["accuracy"] for r in part]
        if family.startswith("fixed"):
            ax.scatter(xs, ys, color=colour, marker=style, label=family, zorder=3)
            for r in part:
                ax.annotate(
                    r["setting"].split(",")[0 if family == "fixed N" else 1].strip(),
                    (r["generated_tokens"], r["accuracy"]),
                    textcoords="offset points",
                    xytext=(4, -10),
                    fontsize=7,
                    color=colour,
                )
        else:
            ax.plot(xs, ys, style, color=colour, marker=".", label=f"{family} (tau sweep)", alpha=0.8)
            for r in part:
                ax.annotate(
                    f"{r['tau']:g}",
                    (r["generated_tokens"], r["accuracy"]),
                    textcoords="offset points",
                    xytext=(3, 4),
                    fontsize=7,
                    color=colour,
                )
    ax.set_xscale("log")
    ax.set_ylim(0, min(1.0, max(0.1, 1.15 * max(r["accuracy"] for r in rows))))
    ax.set_xlabel("generated tokens per problem (log scale)")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    model, model_line = pick_model(args.model)
    print(model_line, flush=True)
    problems = pick_problems(args.problems, args.levels, args.limit)
    engine = Engine(model, backend=args.backend, verifier=args.verifier)
    key = confidence_key(engine.parts, args.confidence_from)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"problems: {len(problems)} (levels {args.levels or 'all'}); confidence and accuracy from {key}", flush=True)
    rows = run_all(engine, problems, args, key, out_dir)
    report = "\n".join(
        [model_line, f"problems: {len(problems)}, strategy: {key}", format_table(rows), *goal_lines(rows)]
    )
    print(format_table(rows))
    print("\n".join(goal_lines(rows)))
    (out_dir / "table.txt").write_text(report + "\n")
    plot_path = out_dir / "accuracy_vs_tokens.png"
    plot(rows, plot_path, f"{engine.model_label}\n{len(problems)} problems, accuracy of {key}")
    print(f"plot: {plot_path}\ntable: {out_dir / 'table.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
