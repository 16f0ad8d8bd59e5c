"""The settings of an engine and of a run, each declared once here with its default, choices, check and help.

`Engine(...)` and `Engine.solve(...)` take them as keywords; `tts solve`, `tts serve` and `tts bench` list them as
options (`tts_engine.settings`: a field is an option); a `tts serve` request sets the run's (`tts.strategy`,
`tts.abstain_below`) and is checked by the same `__post_init__`; `tts launch --ray` ships them to its actors.
Sampling settings are `SamplingParams`' (`tts_engine.params`), a strategy's its registered settings dataclass.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .answers.grading import GRADERS
from .backends import check_backend
from .pipeline.records import abstains
from .settings import check_int, check_probability, setting
from .strategies.registry import DEFAULT_STRATEGY
from .verifiers import SCORE_NORMS
from .verifiers.choose import RENAMED_VERIFIERS, VERIFIERS, verifier_kind
from .verifiers.process import PROCESS_HEADLINES


@dataclass
class EngineConfig:
    """Which model serves, on which generation backend, scored by which verifier, graded how."""

    model: str | None = None
    """Hugging Face checkpoint (directory; or a name for vllm/openai). Default: the embedded tiny reasoner-verifier."""
    backend: str = "hf"
    """Generation backend: hf (transformers), vllm (offline LLM on GPUs), openai (a compatible server), or one an
    installed package registers."""
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
    process_headline: str = setting("final", deprecated=("--process-aggregation",), choices=PROCESS_HEADLINES)
    """process verifier: its headline score `process` from the final verdict or from its step verdicts reduced
    (min, prod, mean, last; all are recorded). Not to be confused with a search's --step-reduction (how a partial
    solution is ranked)."""
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
    """Override of a check setting the verifier checkpoint (checking or process) stores, KEY=VALUE, repeatable:
    check_samples=4 check_temperature=1 (the mean over 4 sampled re-solves instead of one greedy re-solve),
    check_max_tokens=128."""
    prompt_config: Any = setting(None, cli=False)
    """The model's prompt settings (a `PromptConfig`), in place of its tts_engine.json; Python and config files only."""
    calibration: Any = None
    """p_correct's calibration file (from `tts calibrate`). Default: calibration.json beside the verifier or model
    checkpoint (the shipped ones have theirs), else uncalibrated (the class's best headline verifier score); none:
    uncalibrated. In Python also a `Calibration`."""

    def __post_init__(self) -> None:
        check_backend(self.backend)
        self.verifier = verifier_kind(self.verifier, self.verifier_model)
        if self.score_norm not in SCORE_NORMS:
            raise ValueError(f"score_norm must be one of {SCORE_NORMS}, got {self.score_norm!r}")
        if self.process_headline not in PROCESS_HEADLINES:
            raise ValueError(f"process_headline must be one of {PROCESS_HEADLINES}, got {self.process_headline!r}")
        if self.grader not in GRADERS:
            raise ValueError(f"grader must be one of {GRADERS}, got {self.grader!r}")
        if self.grader != "rule" and self.judge_model is None:
            raise ValueError(f"grader {self.grader!r} needs a judge model: pass judge_model (--judge-model PATH)")
        if isinstance(self.model, Path):
            self.model = str(self.model)

    @classmethod
    def of(cls, model: str | Path | None = None, **settings: Any) -> "EngineConfig":
        """The config of `Engine(model, **settings)`: an unknown keyword is an error naming the settings; the
        earlier names of renamed settings still work, with a warning."""
        for old, new in RENAMED_SETTINGS.items():
            if old in settings:
                warnings.warn(f"{old} is now called {new}", DeprecationWarning, stacklevel=3)
                settings[new] = settings.pop(old)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(f"unknown engine settings {unknown}; the settings are {sorted(known - {'model'})}")
        return cls(model=model, **settings)


RENAMED_SETTINGS = {"process_aggregation": "process_headline"}
"""Earlier names of engine settings, still accepted by `Engine(...)` with a warning."""


@dataclass
class RunConfig:
    """What one solve runs and when it answers: the settings a `tts serve` request may also set."""

    strategy: str = DEFAULT_STRATEGY
    """A registered strategy (the list is read from the registry, `tts_engine.strategies`)."""
    abstain_below: float | None = None
    """Abstain where an answer's p_correct is below this probability: the answer is recorded as abstained (with
    its p_correct and the answer it would have given) and counts as not answered."""
    budget_tokens: int | None = None
    """One token budget for the whole run: generated and verifier tokens (prompt tokens do not count). A strategy
    that allocates (adaptive-n) gives every problem a first wave, then each wave to the open problems where it is
    expected to raise p_correct most per token; the run spends at most this plus one wave."""

    def __post_init__(self) -> None:
        from .strategies.registry import strategies, strategy_entry

        entry = strategy_entry(self.strategy)  # an unknown strategy fails here, naming the known ones
        self.abstain_below = check_probability("abstain_below", self.abstain_below)
        if self.budget_tokens is not None:
            check_int("budget_tokens", self.budget_tokens)
            if not entry.allocates:
                takers = [name for name, e in strategies().items() if e.allocates]
                raise ValueError(
                    f"budget_tokens: strategy {self.strategy!r} spends per problem and cannot share a run's budget; "
                    f"use {' or '.join(takers)}"
                )

    @classmethod
    def of(cls, settings: Any) -> "RunConfig":
        """The run settings of a larger settings object that holds them (`tts solve`'s, `tts serve`'s)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    def run_block(self) -> dict[str, Any]:
        """What the results' run block says of these settings besides the strategy."""
        named = {"abstain_below": self.abstain_below, "budget_tokens": self.budget_tokens}
        return {k: v for k, v in named.items() if v is not None}

    def abstention(self, p_correct: float) -> dict[str, bool]:
        """{"abstained": ...} of an answer with this p_correct (`abstains`) when a threshold is set, else {}."""
        return {} if self.abstain_below is None else {"abstained": abstains(p_correct, self.abstain_below)}


@dataclass
class Job:
    """Everything one solve runs with, parsed once (by `tts solve`, `tts launch --ray` at its driver) and handed to
    `Engine` and `Engine.solve` as it is (a Ray actor builds its engine from it)."""

    engine: EngineConfig
    run: RunConfig
    params: Any
    """The sampling settings (`SamplingParams`)."""
    strategy_config: Any = None
    """The strategy's settings object (its registered type), or None."""
    strict: bool = False
    """A problem that cannot be solved ends the run (else it is recorded as failed)."""

    def solve(self, engine, problems, run: RunConfig | None = None, **loop: Any) -> list[dict[str, Any]]:
        """`engine.solve` of these settings (`run` in place of the job's own: a chunk's share of the budget);
        `loop`: out, progress, retry_failed, on_record, ..."""
        return engine.solve(
            problems, self.params, run=run or self.run, config=self.strategy_config, strict=self.strict, **loop
        )
