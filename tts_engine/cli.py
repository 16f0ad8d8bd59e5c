"""The `tts` command."""

from __future__ import annotations

import importlib
import logging

import click

from .engine import SOLVE_DEFAULTS
from .options import SAMPLING_EXCLUDE, EngineOptions, SolveOptions, StrategyCommand, build_solve
from .params import SamplingParams
from .settings import OneLineErrors, options

LAZY_COMMANDS = {
    "train": ("tts_engine.training.cli", "train", "Train the shipped checkpoints: SFT, joint, recompute, Tango."),
    "calibrate": (
        "tts_engine.eval.calibrate",
        "calibrate",
        "Fit p_correct (how likely an answer is right) on labelled results.",
    ),
    "curve": ("tts_engine.eval.cli", "curve", "Compute-vs-accuracy curves, efficiency ratio and plots from results."),
    "bench": ("tts_engine.eval.cli", "bench", "Generate and draw curves in one command."),
    "merge": ("tts_engine.cli_parallel", "merge", "Merge shard results files into one, in problem order."),
    "launch": ("tts_engine.cli_parallel", "launch", "Run one problem set over several GPUs or local workers."),
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
@options(EngineOptions)
@options(SamplingParams, exclude=SAMPLING_EXCLUDE, defaults=SOLVE_DEFAULTS)
@options(SolveOptions)
def solve(problems, **settings):
    """Solve PROBLEMS (JSONL/JSON; default: the bundled set) with N samples, verifier scores and voting; each
    strategy's settings are options too (the registry's, listed under --strategy)."""
    from .models import default_problems_path
    from .problems import load_problems
    from .summary import format_summary, summarize

    call = build_solve(settings)
    run, params, entry, config, engine_options = call.run, call.params, call.entry, call.config, call.engine
    problems_path = problems or default_problems_path()
    items = load_problems(problems_path, limit=run.limit)
    if run.shard:
        from .parallel import shard_problems

        items = shard_problems(items, run.shard)
    engine = engine_options.make_engine()
    click.get_current_context().call_on_close(engine.close)  # on success, error and Ctrl-C (stops vLLM cleanly)
    click.echo(
        f"model: {engine.model_label} ({engine.backend.num_parameters:,} parameters, backend {engine_options.backend})",
        err=True,
    )
    click.echo(f"problems: {problems_path} ({len(items)}), n={entry.samples(params.n, config)}", err=True)
    records = engine.solve(
        items,
        params,
        strategy=run.strategy,
        out=run.out,
        progress=not run.quiet,
        config=config,
        strict=run.strict,
        retry_failed=run.retry_failed,
        abstain_below=run.abstain_below,
    )
    click.echo(format_summary(summarize(records), every_row=run.all, lines=entry.summary_lines(records)))
    if run.out:
        click.echo(f"results: {run.out}", err=True)
