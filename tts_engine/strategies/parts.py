"""What a strategy is built from: the parts of the engine it uses (generation, the pipeline, prompts, step scoring),
never the Engine itself. `Engine` builds them once and hands the same `Parts` to every strategy; a strategy cannot
reach the run loop, the results file or another strategy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from ..backends.base import Backend
from ..inputs.problems import Problem
from ..inputs.prompts import Prompts
from ..params import SamplingParams
from ..pipeline.build import Pipeline
from ..pipeline.failures import generate_or_fail
from ..pipeline.records import ProblemRecord
from ..verifiers.choose import StepScoring


@dataclass(frozen=True)
class Parts:
    """The engine's parts, as every strategy sees them."""

    backend: Backend
    """Generation: generate, continue, encode, max_model_len."""
    pipeline: Pipeline
    """Samples in, records out (`records`); holds the calibration."""
    prompts: Prompts
    """The model's prompt settings (`config`) and each problem's generation prompt (`build`)."""
    verifier: Any
    """The engine's verifier (None: likelihood only)."""
    headline_kind: str | None
    """The verifier score kind the headline votes use (None without a verifier)."""
    steps: StepScoring
    """What scores the steps of a search, and how it ranks a partial solution by default."""
    identity: dict[str, Any]
    """What the run block says of the engine: model, parameters, backend, verifier, score_norm, grader."""

    def run_info(self, params: SamplingParams) -> dict[str, Any]:
        """The results' "run" block of these sampling settings."""
        sampling = {
            "n": params.n,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_new_tokens": params.max_new_tokens,
            "seed": params.seed,
        }
        if params.top_logprobs:
            sampling |= {
                "top_logprobs": params.top_logprobs,
                "confidence_window": params.confidence_window,
                "confidence_tail": params.confidence_tail,
            }
        head = {k: self.identity[k] for k in ("model", "num_parameters", "backend")}
        return {**head, **sampling, **{k: self.identity[k] for k in ("verifier", "score_norm", "grader")}}

    def one_step(self, problems: Sequence[Problem], params: SamplingParams) -> list[ProblemRecord]:
        """N samples of every problem, scored and voted by the engine's verifier (the fixed strategy's step)."""
        started = time.perf_counter()
        prompts = self.prompts.build(problems)
        samples = generate_or_fail(self.backend, problems, prompts, params)  # (P, N)
        return self.pipeline.records(problems, prompts, samples, params, verifier=self.verifier, started=started)
