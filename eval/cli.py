"""`tts curve` (curves, efficiency ratio, verifier metrics and plots from results files) and `tts bench`
(generation, then the same, in one command). Both take their curve settings from CurveConfig; `tts bench`
takes its engine and sampling options from the same dataclasses as `tts solve`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import click

from tts_engine.cli.options import SAMPLING_EXCLUDE
from tts_engine.config import EngineConfig
from tts_engine.params import SamplingParams
from tts_engine.settings import Command, build, options, setting

from .curves import IMPLS


@dataclass
class CurveConfig:
    """How curves and verifier metrics are computed from results files."""

    num_subsets: int = setting(1000, flags=("--subsets",))
    """R: random subsets per problem and k (every subset is used when there are at most R)."""
    seed: int = 0
    """Seed of the random subsets."""
    threshold: float = 0.5
    """Verifier score at or above which a sample counts as accepted (verifier metrics)."""
    num_bins: int = setting(10, flags=("--bins",))
    """Reliability bins for calibration (ECE)."""
    vote_impl: str = setting("auto", choices=IMPLS)
    """Subset voting implementation: auto = the Triton kernel on a GPU, else prefix (one CPU pass over nested
    subsets); torch / triton = the subset-vote kernel's versions."""
    title: str | None = None
    """Plot title (default: model, problem set, P and N)."""
    only: tuple[str, ...] = ()
    """Plot only aggregations whose name contains this word (repeatable; majority and pass@k are always drawn),
    e.g. --only verifier_yes_no --only likelihood."""
    no_plots: bool = False
    """Only curves.json and curves.csv."""
    all: bool = False
    """Print every aggregation's rows (every aggregation over every score kind), not only the headline rows."""

    def __post_init__(self) -> None:
        if self.num_subsets < 1:
            raise ValueError(f"num_subsets must be >= 1, got {self.num_subsets}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.num_bins < 1:
            raise ValueError(f"num_bins must be >= 1, got {self.num_bins}")
        if self.vote_impl not in IMPLS:
            raise ValueError(f"vote_impl must be one of {IMPLS}, got {self.vote_impl!r}")


@dataclass
class BenchConfig:
    """What `tts bench` runs over and where it writes."""

    out: str = setting("", flag="--out-dir", deprecated=("--out",))
    """Folder for results.jsonl (rerun to resume) and the curves."""
    problems: str | None = None
    """Problem set (JSONL/JSON). Default: the bundled set."""
    limit: int | None = None
    """Only the first LIMIT problems."""
    label: str | None = None
    """Name in plots and tables (default: the problem file stem)."""
    quiet: bool = False
    """No progress bar."""

    def __post_init__(self) -> None:
        if not self.out:
            raise ValueError("out is required: --out FOLDER for results.jsonl and the curves")


def run_curves(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    labels: Sequence[str] = (),
    num_subsets: int = 1000,
    seed: int = 0,
    threshold: float = 0.5,
    num_bins: int = 10,
    vote_impl: str = "auto",
    title: str | None = None,
    plots: bool = True,
    only: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Curves of every results file into `out`: curves.json, curves.csv and PNG plots; returns the curve sets."""
    from tts_engine.running.results import read_results

    from .axes import axes_view
    from .curves import compute_curves
    from .plots import plot_axes, write_plots
    from .report import write_axes, write_csv, write_json
    from .selective import selective_plots, selective_view
    from .table import load_results
    from .verifier_metrics import verifier_group_metrics, verifier_metrics

    if labels and len(labels) != len(paths):
        raise ValueError(f"--label must be given once per results file ({len(paths)}), got {len(labels)}")
    labels = list(labels) or _default_labels(paths)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    curves = []
    for path, label in zip(paths, labels):
        table = load_results(path)
        c = compute_curves(table, num_subsets=num_subsets, seed=seed, impl=vote_impl, label=label)
        c["source"] = str(path)
        c["verifier"] = verifier_metrics(table, threshold=threshold, num_bins=num_bins)
        c["verifier_groups"] = verifier_group_metrics(table, threshold=threshold, num_bins=num_bins)
        c["selective"] = selective_view(list(read_results(path)), num_bins)
        curves.append(c)
    write_json(curves, out / "curves.json")
    write_csv(curves, out / "curves.csv")
    axes = axes_view(curves, [list(read_results(path)) for path in paths])
    if axes is not None:  # thinking budgets beside each other: the parallel, sequential and joint axes
        write_axes(axes, out / "axes.json")
        if plots:
            plot_axes(axes, out / "axes.png")
        curves[0]["axes"] = axes
    if plots:
        write_plots(curves, out, title=title, only=list(only) or None)
        for i, c in enumerate(curves):
            selective_plots(c["selective"], out, c["label"], f"_{i + 1}" if len(curves) > 1 else "")
    return curves


def _default_labels(paths: Sequence[str | Path]) -> list[str]:
    """File stems; the parent folder is added where stems repeat (run1/results, run2/results)."""
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{Path(p).parent.name}/{Path(p).stem}" for p in paths]


def _echo_report(curves: list[dict[str, Any]], out: Path, every_row: bool = False) -> None:
    from .axes import format_axes
    from .report import format_table
    from .selective import format_selective

    for c in curves:
        click.echo(format_table(c, every_row))
        click.echo("\n".join(format_selective(c.get("selective") or {})))
        click.echo("")
    if curves and curves[0].get("axes"):
        click.echo("\n".join(format_axes(curves[0]["axes"])) + "\n")
    written = sorted(p.name for p in out.iterdir() if p.suffix in (".json", ".csv", ".png"))
    click.echo(f"wrote {', '.join(written)} to {out}")


@click.command(cls=Command)
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--out-dir",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for curves.json, curves.csv and the PNG plots (created if missing).",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    help="Name of each results file in plots and tables, once per file in order (default: the file stem).",
)
@options(CurveConfig)
def curve(results, out, labels, **settings):
    """Compute-vs-accuracy curves of every aggregation from RESULTS files (JSONL from `tts solve`).

    For k = 1, 2, 4, ..., N: pass@k, and majority / weighted / best-of-N accuracy with k samples for every
    score kind, against samples, tokens and FLOPs per problem; the efficiency ratio against majority@N;
    verifier metrics. Several files are drawn on the same axes.
    """
    o = build(CurveConfig, settings)
    curves = run_curves(
        results,
        out,
        labels=labels,
        num_subsets=o.num_subsets,
        seed=o.seed,
        threshold=o.threshold,
        num_bins=o.num_bins,
        vote_impl=o.vote_impl,
        title=o.title,
        plots=not o.no_plots,
        only=o.only,
    )
    _echo_report(curves, Path(out), o.all)


@click.command(cls=Command)
@options(EngineConfig)
@options(SamplingParams, exclude=SAMPLING_EXCLUDE, defaults={"n": 64})
@options(BenchConfig)
@options(CurveConfig, exclude=("seed", "title", "only", "no_plots"))
def bench(**settings):
    """Generate N samples per problem, then draw the curves: `tts solve` + `tts curve` in one command.

    The subsets are drawn with the sampling --seed."""
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems

    run = build(BenchConfig, settings)
    params = build(SamplingParams, settings, defaults={"n": 64})
    curve_options = build(CurveConfig, settings, defaults={"seed": params.seed or 0})
    problems_path = Path(run.problems or default_problems_path())
    out_dir = Path(run.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.jsonl"
    items = load_problems(problems_path, limit=run.limit)
    from tts_engine.engine import Engine

    engine = Engine(config=build(EngineConfig, settings))
    click.echo(
        f"model: {engine.model_label} ({engine.backend.num_parameters:,} parameters), "
        f"problems: {problems_path} ({len(items)}), n={params.n}",
        err=True,
    )
    engine.solve(
        items,
        params,
        out=results_path,
        progress=not run.quiet,
    )
    curves = run_curves(
        [results_path],
        out_dir,
        labels=[run.label or problems_path.stem],
        num_subsets=curve_options.num_subsets,
        seed=curve_options.seed,
        threshold=curve_options.threshold,
        num_bins=curve_options.num_bins,
        vote_impl=curve_options.vote_impl,
    )
    _echo_report(curves, out_dir, curve_options.all)


for _param in curve.params:  # `--out` named the folder before `--out-dir` did
    if _param.name == "out":
        _param.deprecated_names = ("--out",)
