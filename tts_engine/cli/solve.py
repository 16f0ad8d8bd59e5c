"""`tts solve`: the engine, the sampling settings, the run's and the strategies' settings as options (each read
from its one declaration), the run, and the summary."""

from __future__ import annotations

import click

from ..config import EngineConfig
from ..params import SOLVE_DEFAULTS, SamplingParams
from ..settings import options
from .options import SAMPLING_EXCLUDE, SolveConfig, StrategyCommand, build_solve


@click.command(cls=StrategyCommand)
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
