"""The options of `tts solve` beyond the engine's and the run's (`tts_engine.config`): which problems, where the
results go, what the summary shows; and the command class that lists every registered strategy's settings.

`tts solve`, `tts bench` and `tts serve` list the same engine options because they read the same dataclass
(`EngineConfig`); a new engine option is one field there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import EngineConfig, Job, RunConfig
from ..settings import Command, make_options

SAMPLING_EXCLUDE = ("stop",)
"""SamplingParams fields that are not command-line options (stop strings come from the model's prompt config)."""


@dataclass
class SolveConfig(RunConfig):
    """What `tts solve` runs over, where it writes and what it prints."""

    limit: int | None = None
    """Only the first LIMIT problems."""
    shard: str | None = None
    """Only shard I/K of the problems (0-based), for data-parallel runs."""
    out: str | None = None
    """Results JSONL, written as problems finish; rerunning with the same --out resumes."""
    quiet: bool = False
    """No progress bar."""
    all: bool = False
    """Print every row of the summary (every score kind x every aggregation), not only the headline rows."""
    strict: bool = False
    """Stop the run at the first problem that fails (a prompt longer than the model's context, rows that fail
    even alone) instead of recording it as not solved and going on."""
    retry_failed: bool = False
    """Solve again the problems that --out holds as failed (otherwise a resumed run counts them as done)."""
    overwrite: bool = False
    """Replace --out instead of resuming it (a results file holds one experiment: resuming it with other sampling,
    model, verifier or strategy settings is refused)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}")


def marked(options: list) -> list:
    """Strategy options whose help starts with the strategies that take them ("[adaptive-length, adaptive-n] ...")."""
    from ..strategies.registry import owners, strategies

    names = set(strategies())
    for option in options:
        takers = owners(option.name)
        said, sep, rest = option.help.partition(": ")
        named = [n.strip() for n in said.split(",")] if sep else []
        if named and set(named) <= names:  # the docstring's own "adaptive-length: ..." prefix, often narrower
            option.help, takers = rest, [n for n in takers if n in named] or takers
        option.help = f"[{', '.join(takers)}] {option.help}"
    return options


class StrategyCommand(Command):
    """A command whose options include every registered strategy's settings and whose --strategy help lists the
    registered strategies, both read from the registry when the command runs: a strategy registered after
    import (a plug-in, a test) is reachable with its settings, and nothing else lists strategies."""

    _made: dict[type, list] = {}

    def get_params(self, ctx):
        from ..strategies.registry import config_types, strategies

        params = super().get_params(ctx)
        have = {p.name for p in params}
        for cls in config_types():
            options = self._made.setdefault(cls, marked(make_options(cls)))
            params[-1:-1] = [o for o in options if o.name not in have]
            have |= {o.name for o in options}
        for param in params:
            if param.name == "strategy":
                base = param.__dict__.setdefault("base_help", param.help)
                listed = "; ".join(f"{name}: {entry.help}" for name, entry in strategies().items())
                param.help = f"{base} Registered: {listed}"
        return params

    def parse_args(self, ctx, args):
        from ..settings import rename_deprecated

        return super(Command, self).parse_args(ctx, rename_deprecated(self.get_params(ctx), args))


def refuse_foreign_settings(strategy: str, settings: dict[str, Any]) -> None:
    """A strategy setting given on the command line that the chosen strategy does not take is an error naming the
    option and the strategies that take it (as the server refuses it in a request)."""
    from ..settings import option_name
    from ..strategies.registry import foreign_settings

    given = {k: v for k, v in settings.items() if v is not None and v != ()}
    foreign = foreign_settings(strategy, given)
    if foreign:
        said = "; ".join(f"{option_name(k)} is a setting of {', '.join(v)}" for k, v in foreign.items())
        raise ValueError(f"strategy {strategy!r} takes no {', '.join(map(option_name, foreign))}: {said}")


def build_solve(settings: dict[str, Any]) -> tuple[Job, SolveConfig, Any]:
    """The parsed options of `tts solve` (click's keyword arguments): the job, the command's own settings and the
    strategy's registry entry."""
    from ..params import SOLVE_DEFAULTS, SamplingParams
    from ..settings import build
    from ..strategies.registry import strategy_entry

    solve = build(SolveConfig, settings)
    entry = strategy_entry(solve.strategy)
    refuse_foreign_settings(solve.strategy, settings)
    strategy_config = build(entry.config_type, settings) if entry.config_type is not None else None
    params = build(SamplingParams, settings, defaults=SOLVE_DEFAULTS)
    job = Job(build(EngineConfig, settings), RunConfig.of(solve), params, strategy_config, solve.strict)
    return job, solve, entry
