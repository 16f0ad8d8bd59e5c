"""The option dataclasses of the serving commands: `tts solve` and `tts bench` build their engine from the same
EngineOptions and sample with the same SamplingParams fields, so their --help lists the same engine options.

A new engine option is one field here (with its docstring); `Engine(...)` receives it through `make_engine`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .answers.grading import GRADERS
from .backends import BACKENDS
from .settings import Command, make_options, setting
from .strategies.registry import DEFAULT_STRATEGY
from .verifiers import SCORE_NORMS
from .verifiers.choose import RENAMED_VERIFIERS, VERIFIERS
from .verifiers.process import PROCESS_HEADLINES

SAMPLING_EXCLUDE = ("stop",)
"""SamplingParams fields that are not command-line options (stop strings come from the model's prompt config)."""


@dataclass
class EngineOptions:
    """Which model serves, on which generation backend, scored by which verifier, graded how."""

    model: str | None = None
    """Hugging Face checkpoint (directory; or a name for vllm/openai). Default: the embedded tiny reasoner-verifier."""
    backend: str = setting("hf", choices=BACKENDS)
    """Generation backend: hf (transformers), vllm (offline LLM on GPUs), openai (a compatible server)."""
    verifier: str = setting(
        "own", flag="--verifier-kind", deprecated=("--verifier",), choices=(*VERIFIERS, *RENAMED_VERIFIERS)
    )
    """own: the checkpoint's own check, what its tts_engine.json `verify_form` names (the RL^V question 'Is this
    solution correct?' scored P(Yes), the embedded default's recompute check, a re-solve, ...; `unified` is its
    earlier name); process: a generative verifier judging every step (needs --verifier-model); prm: a
    discriminative process reward model scoring the steps of a step-level search (needs
    --verifier-model); none: likelihood only."""
    verifier_model: str | None = None
    """A separate verifier checkpoint (unified or process)."""
    process_aggregation: str = setting(
        "final", flag="--process-headline", deprecated=("--process-aggregation",), choices=PROCESS_HEADLINES
    )
    """process verifier: its headline score `process` from the final verdict or from its step verdicts aggregated
    (all are recorded). Not to be confused with a search's --step-aggregation (how a partial solution is ranked)."""
    score_norm: str = setting("yes_no", choices=SCORE_NORMS)
    """Headline normalisation of P(Yes) (both are always recorded)."""
    grader: str = setting("rule", choices=GRADERS)
    """How answers are graded against references (hybrid/judge need --judge-model)."""
    judge_model: str | None = None
    """LLM judge for --grader hybrid|judge."""
    backend_options: dict[str, Any] | None = setting(None, flags=("--backend-option",))
    """Backend setting KEY=VALUE, repeatable: e.g. dtype=bfloat16, max_batch_rows=64 (hf); tensor_parallel_size=2,
    gpu_memory_utilization=0.8, max_model_len=4096 (vllm); base_url=..., tokenizer=PATH, max_concurrency=32
    (openai)."""
    check_options: dict[str, Any] | None = setting(None, flags=("--check-option",))
    """Override of a check setting the verifier checkpoint (checking or process) stores, KEY=VALUE, repeatable: check_samples=4
    check_temperature=1 (the mean over 4 sampled re-solves instead of one greedy re-solve), check_max_tokens=128."""

    calibration: str | None = None
    """p_correct's calibration file (from `tts calibrate`). Default: calibration.json beside the verifier or model
    checkpoint (the shipped ones have theirs), else uncalibrated (the class's best headline verifier score); none:
    uncalibrated."""

    def make_engine(self):
        """The Engine these options describe."""
        from .engine import Engine

        kwargs = asdict(self)
        try:
            return Engine(kwargs.pop("model"), **kwargs)
        except TypeError as err:  # an unknown --backend-option reaches the backend's constructor
            raise ValueError(f"--backend-option: {err}") from None


@dataclass
class SolveOptions:
    """What `tts solve` runs over and where it writes."""

    strategy: str = DEFAULT_STRATEGY
    """A registered strategy (the list is read from the registry, `tts_engine.strategies`)."""
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
    abstain_below: float | None = None
    """Abstain where an answer's p_correct is below this probability: the answer is recorded as abstained (with
    its p_correct and the answer it would have given) and counts as not answered."""

    def __post_init__(self) -> None:
        from .calibration import check_abstain_below
        from .strategies.registry import strategy_entry

        check_abstain_below(self.abstain_below)
        strategy_entry(self.strategy)  # an unknown strategy fails here, naming the known ones
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}")


class StrategyCommand(Command):
    """A command whose options include every registered strategy's settings and whose --strategy help lists the
    registered strategies, both read from the registry when the command runs: a strategy registered after
    import (a plug-in, a test) is reachable with its settings, and nothing else lists strategies."""

    _made: dict[type, list] = {}

    def get_params(self, ctx):
        from .strategies.registry import config_types, strategies

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
        from .settings import rename_deprecated

        return super(Command, self).parse_args(ctx, rename_deprecated(self.get_params(ctx), args))


@dataclass
class SolveCall:
    """What one `tts solve` command line asks for, built once for every command that takes its options (`tts solve`,
    `tts launch --ray`)."""

    run: SolveOptions
    params: Any
    """The SamplingParams, with `SOLVE_DEFAULTS`."""
    entry: Any
    """The strategy's registry entry."""
    config: Any
    """The strategy's settings (None for a strategy without any)."""
    engine: EngineOptions


def build_solve(settings: dict[str, Any]) -> SolveCall:
    """The parsed options of `tts solve` (click's keyword arguments) as the objects a run needs."""
    from .engine import SOLVE_DEFAULTS
    from .params import SamplingParams
    from .settings import build
    from .strategies.registry import strategy_entry

    run = build(SolveOptions, settings)
    entry = strategy_entry(run.strategy)
    config = build(entry.config_type, settings) if entry.config_type is not None else None
    params = build(SamplingParams, settings, defaults=SOLVE_DEFAULTS)
    return SolveCall(run, params, entry, config, build(EngineOptions, settings))
