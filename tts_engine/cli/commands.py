"""The `tts` command."""

from __future__ import annotations

import importlib
import logging

import click

from ..config import EngineConfig
from ..engine import SOLVE_DEFAULTS
from ..params import SamplingParams
from ..settings import OneLineErrors, options
from .options import SAMPLING_EXCLUDE, SolveConfig, StrategyCommand, build_solve

LAZY_COMMANDS = {
    "train": ("tts_engine.training.cli", "train", "Train the shipped checkpoints: SFT, joint, recompute, Tango."),
    "calibrate": (
        "tts_engine.eval.calibrate",
        "calibrate",
        "Fit p_correct (how likely an answer is right) on labelled results.",
    ),
    "curve": ("tts_engine.eval.cli", "curve", "Compute-vs-accuracy curves, efficiency ratio and plots from results."),
    "bench": ("tts_engine.eval.cli", "bench", "Generate and draw curves in one command."),
    "merge": ("tts_engine.cli.parallel", "merge", "Merge shard results files into one, in problem order."),
    "launch": ("tts_engine.cli.parallel", "launch", "Run one problem set over several GPUs or local workers."),
    "serve": ("tts_engine.serve.cli", "serve", "Serve test-time scaling behind an OpenAI-compatible API."),
    "view": ("tts_engine.eval.view", "view", "One page to browse runs: summary, curves, problems, samples, trees."),
}


class LazyGroup(OneLineErrors, click.Group):
    """Subcommands living in other packages load only when called, so `tts solve` starts fast; a bad setting
    in any of them is a one-line error."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS:
            module, attr, _ = LAZY_COMMANDS[name]
            try:
                return getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as err:
                return _unavailable(name, err)
        return super().get_command(ctx, name)


def _unavailable(name: str, err: Exception) -> click.Command:
    @click.command(name=name, help=f"{LAZY_COMMANDS[name][2]} (unavailable: {err})")
    def command():
        raise click.ClickException(f"`tts {name}` is not available in this installation: {err}")

    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log progress details.")
def main(verbose: bool) -> None:
    """tts: test-time scaling for reasoning models.

    Sample N solutions per problem, score each with a verifier, aggregate by majority, verifier-weighted
    voting and best-of-N, and measure what each unit of compute bought.
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # weight-loading bars would drown the solve progress bar


@main.command(cls=StrategyCommand)
@click.argument("problems", required=False, type=click.Path(exists=True, dir_okay=False))
@options(EngineConfig)
@options(SamplingParams, exclude=SAMPLING_EXCLUDE, defaults=SOLVE_DEFAULTS)
@options(SolveConfig)
def solve(problems, **settings):
    """Solve PROBLEMS (JSONL/JSON; default: the bundled set) with N samples, verifier scores and voting; each
    strategy's settings are options too (the registry's, listed under --strategy)."""
    from ..engine import Engine
    from ..inputs.models import default_problems_path
    from ..inputs.problems import load_problems
    from ..running.summary import format_summary, summarize

    job, command, entry = build_solve(settings)
    problems_path = problems or default_problems_path()
    items = load_problems(problems_path, limit=command.limit)
    if command.shard:
        from ..launch.shards import shard_problems

        items = shard_problems(items, command.shard)
    engine = Engine(config=job.engine)
    click.get_current_context().call_on_close(engine.close)  # on success, error and Ctrl-C (stops vLLM cleanly)
    click.echo(
        f"model: {engine.model_label} ({engine.backend.num_parameters:,} parameters, backend {job.engine.backend})",
        err=True,
    )
    click.echo(
        f"problems: {problems_path} ({len(items)}), n={entry.samples(job.params.n, job.strategy_config)}", err=True
    )
    records = job.solve(
        engine,
        items,
        out=command.out,
        progress=not command.quiet,
        retry_failed=command.retry_failed,
        overwrite=command.overwrite,
    )
    click.echo(format_summary(summarize(records), every_row=command.all, lines=entry.summary_lines(records)))
    if command.out:
        click.echo(f"results: {command.out}", err=True)
