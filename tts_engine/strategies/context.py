"""What a strategy sees of the engine: generation, verification, prompts, the one-step solve and run info.

`Engine.solve` hands every strategy (its `build`, `headline` and `verifier_kinds`) a `StrategyContext` over itself,
never the Engine: a strategy cannot reach the run loop, the results file or another strategy, and this class is the
list of what it may use.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..params import SamplingParams
from ..problems import Problem


class StrategyContext:
    """The engine as a strategy sees it (a read-only view; each member is the engine's own)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Any):
        self._engine = engine

    # --- generation ------------------------------------------------------------------------------------------
    @property
    def backend(self):
        """The generation backend (`tts_engine.backends.base.Backend`): generate, continue, encode, max_model_len."""
        return self._engine.backend

    # --- verification ----------------------------------------------------------------------------------------
    @property
    def verifier(self):
        """The engine's verifier (None: likelihood only)."""
        return self._engine.verifier

    @property
    def headline_kind(self) -> str | None:
        """The verifier score kind the headline votes use (None without a verifier)."""
        return self._engine.headline_kind

    @property
    def calibration(self):
        """How p_correct is computed (`tts_engine.calibration.Calibration`)."""
        return self._engine.calibration

    def step_scorer(self, delimiter: str, *, prm_format: str | None = None):
        """What scores the steps of a search (the PRM, else the verifier's own step scorer)."""
        return self._engine.step_scorer(delimiter, prm_format=prm_format)

    def step_aggregation(self) -> str:
        """How the engine's step scorer ranks a partial solution by default."""
        return self._engine.step_aggregation()

    def score_samples(
        self,
        problems: Sequence[Problem],
        prompts: Sequence[str],
        samples,
        params: SamplingParams,
        started: float | None = None,
        *,
        verifier: Any,
    ) -> list[dict[str, Any]]:
        """The engine's records of given samples, scored by `verifier`: extract, group, grade, score, vote,
        p_correct."""
        return self._engine.score_samples(problems, prompts, samples, params, started, verifier=verifier)

    # --- prompts ---------------------------------------------------------------------------------------------
    @property
    def prompt_config(self):
        """The model's prompt settings (`tts_engine.prompts.PromptConfig`): template, stop strings, step delimiter."""
        return self._engine.prompt_config

    def prompts(self, problems: Sequence[Problem]) -> list[str]:
        """The exact generation prompt of each problem."""
        return self._engine.prompts(problems)

    # --- the fixed step and run info -------------------------------------------------------------------------
    def solve_batch(self, problems: Sequence[Problem], params: SamplingParams) -> list[dict[str, Any]]:
        """One engine step over a chunk: N samples per problem, scored and voted (the fixed strategy)."""
        return self._engine.solve_batch(problems, params)

    def run_info(self, params: SamplingParams) -> dict[str, Any]:
        """The results' "run" block of these settings (model, sampling, verifier, calibration)."""
        return self._engine.run_info(params)
