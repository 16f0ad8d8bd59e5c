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

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}")


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
            options = self._made.setdefault(cls, make_options(cls))
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


def build_solve(settings: dict[str, Any]) -> tuple[Job, SolveConfig, Any]:
    """The parsed options of `tts solve` (click's keyword arguments): the job, the command's own settings and the
    strategy's registry entry."""
    from ..engine import SOLVE_DEFAULTS
    from ..params import SamplingParams
    from ..settings import build
    from ..strategies.registry import strategy_entry

    solve = build(SolveConfig, settings)
    entry = strategy_entry(solve.strategy)
    strategy_config = build(entry.config_type, settings) if entry.config_type is not None else None
    params = build(SamplingParams, settings, defaults=SOLVE_DEFAULTS)
    job = Job(build(EngineConfig, settings), RunConfig.of(solve), params, strategy_config, solve.strict)
    return job, solve, entry
