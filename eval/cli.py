"""`tts curve` (curves, efficiency ratio, verifier metrics and plots from results files) and `tts bench`
(generation, then the same, in one command)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import click

BACKENDS = ("auto", "prefix", "torch", "triton")


def run_curves(paths: Sequence[str | Path], out: str | Path, *, labels: Sequence[str] = (), num_subsets: int = 1000,
               seed: int = 0, threshold: float = 0.5, num_bins: int = 10, backend: str = "auto",
               title: str | None = None, plots: bool = True, only: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Curves of every results file into `out`: curves.json, curves.csv and PNG plots; returns the curve sets."""
    from .curves import compute_curves
    from .plots import write_plots
    from .report import write_csv, write_json
    from .table import load_results
    from .verifier_metrics import verifier_metrics

    if labels and len(labels) != len(paths):
        raise ValueError(f"--label must be given once per results file ({len(paths)}), got {len(labels)}")
    labels = list(labels) or _default_labels(paths)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    curves = []
    for path, label in zip(paths, labels):
        table = load_results(path)
        c = compute_curves(table, num_subsets=num_subsets, seed=seed, backend=backend, label=label)
        c["source"] = str(path)
        c["verifier"] = verifier_metrics(table, threshold=threshold, num_bins=num_bins)
        curves.append(c)
    write_json(curves, out / "curves.json")
    write_csv(curves, out / "curves.csv")
    if plots:
        write_plots(curves, out, title=title, only=list(only) or None)
    return curves


def _default_labels(paths: Sequence[str | Path]) -> list[str]:
    """File stems; the parent folder is added where stems repeat (run1/results, run2/results)."""
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{Path(p).parent.name}/{Path(p).stem}" for p in paths]


def _echo_report(curves: list[dict[str, Any]], out: Path) -> None:
    from .report import format_table

    for c in curves:
        click.echo(format_table(c))
        click.echo("")
    written = sorted(p.name for p in out.iterdir() if p.suffix in (".json", ".csv", ".png"))
    click.echo(f"wrote {', '.join(written)} to {out}")


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for curves.json, "
              "curves.csv and the PNG plots (created if missing).")
@click.option("--label", "labels", multiple=True, help="Name of each results file in plots and tables, once per "
              "file in order (default: the file stem).")
@click.option("--subsets", "num_subsets", type=click.IntRange(min=1), default=1000, show_default=True,
              help="R: random subsets per problem and k (every subset is used when there are at most R).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random subsets.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="Verifier score at or above which a sample counts as accepted (verifier metrics).")
@click.option("--bins", "num_bins", type=click.IntRange(min=1), default=10, show_default=True,
              help="Reliability bins for calibration (ECE).")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="Subset voting: auto = the Triton kernel on a GPU, else prefix (one CPU pass over nested "
              "subsets); torch / triton = the subset-vote kernel's versions.")
@click.option("--title", help="Plot title (default: model, problem set, P and N).")
@click.option("--only", multiple=True, help="Plot only strategies whose name contains this word (repeatable; "
              "majority and pass@k are always drawn), e.g. --only verifier_yes_no --only likelihood.")
@click.option("--no-plots", is_flag=True, help="Only curves.json and curves.csv.")
def curve(results, out, labels, num_subsets, seed, threshold, num_bins, backend, title, only, no_plots):
    """Compute-vs-accuracy curves of every strategy from RESULTS files (JSONL from `tts solve`).

    For k = 1, 2, 4, ..., N: pass@k, and majority / weighted / best-of-N accuracy with k samples for every
    score kind, against samples, tokens and FLOPs per problem; the efficiency ratio against majority@N;
    verifier metrics. Several files are drawn on the same axes.
    """
    try:
        curves = run_curves(results, out, labels=labels, num_subsets=num_subsets, seed=seed, threshold=threshold,
                            num_bins=num_bins, backend=backend, title=title, plots=not no_plots, only=only)
    except (ValueError, FileNotFoundError) as err:
        raise click.ClickException(str(err)) from err
    _echo_report(curves, Path(out))


@click.command()
@click.option("--model", type=click.Path(), help="Checkpoint (directory; or a name for vllm/openai). "
              "Default: the embedded tiny reasoner-verifier.")
@click.option("--problems", type=click.Path(exists=True, dir_okay=False),
              help="Problem set (JSONL/JSON). Default: the bundled set.")
@click.option("--n", "n", type=click.IntRange(min=1), default=64, show_default=True, help="Samples per problem.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for results.jsonl (rerun to resume) and the curves.")
@click.option("--backend", type=click.Choice(["hf", "vllm", "openai"]), default="hf", show_default=True)
@click.option("--temperature", type=float, default=1.0, show_default=True)
@click.option("--top-p", type=float, default=1.0, show_default=True)
@click.option("--max-new-tokens", type=int, default=256, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of sampling and of the subsets.")
@click.option("--verifier", type=click.Choice(["unified", "none"]), default="unified", show_default=True)
@click.option("--verifier-model", type=click.Path(), help="A separate checkpoint for the unified verifier.")
@click.option("--score-norm", type=click.Choice(["vocab", "yes_no"]), default="yes_no", show_default=True)
@click.option("--grader", type=click.Choice(["rule", "hybrid", "judge"]), default="rule", show_default=True)
@click.option("--judge-model", type=click.Path(), help="LLM judge for --grader hybrid|judge.")
@click.option("--limit", type=int, help="Only the first LIMIT problems.")
@click.option("--subsets", "num_subsets", type=click.IntRange(min=1), default=1000, show_default=True,
              help="R: random subsets per problem and k.")
@click.option("--label", help="Name in plots and tables (default: the problem file stem).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def bench(model, problems, n, out, backend, temperature, top_p, max_new_tokens, seed, verifier, verifier_model,
          score_norm, grader, judge_model, limit, num_subsets, label, quiet):
    """Generate N samples per problem, then draw the curves: `tts solve` + `tts curve` in one command."""
    from tts_engine.engine import Engine
    from tts_engine.models import default_problems_path
    from tts_engine.problems import load_problems

    problems_path = Path(problems or default_problems_path())
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.jsonl"
    try:
        items = load_problems(problems_path, limit=limit)
        engine = Engine(model, backend=backend, verifier=verifier, verifier_model=verifier_model,
                        score_norm=score_norm, grader=grader, judge_model=judge_model)
        click.echo(f"model: {engine.model_label} ({engine.backend.num_parameters:,} parameters), "
                   f"problems: {problems_path} ({len(items)}), n={n}", err=True)
        engine.solve(items, n=n, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, seed=seed,
                     out=results_path, progress=not quiet)
        curves = run_curves([results_path], out_dir, labels=[label or problems_path.stem], num_subsets=num_subsets,
                            seed=seed)
    except (ValueError, FileNotFoundError) as err:
        raise click.ClickException(str(err)) from err
    _echo_report(curves, out_dir)
