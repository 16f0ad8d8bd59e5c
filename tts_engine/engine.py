"""The engine facade: builds the parts once (backend, prompts, verifier, pipeline) and runs a strategy over
problems. The flow runs one way: `Engine.solve` -> the run loop (`tts_engine.running.loop`) -> the strategy's plan
(`tts_engine.strategies`) -> the pipeline (`tts_engine.pipeline.build`) -> the backend."""

from __future__ import annotations

import logging
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .config import EngineConfig, RunConfig
from .inputs.problems import Problem
from .inputs.prompts import PromptConfig, Prompts
from .params import SOLVE_DEFAULTS, SamplingParams
from .pipeline.build import Pipeline
from .pipeline.calibration import find_calibration
from .strategies.parts import Parts
from .strategies.plan import TokenBudget
from .verifiers.choose import StepScoring, build_verifier

log = logging.getLogger(__name__)


class Engine:
    """Serve a model (and its verifier) over problem sets with test-time scaling."""

    def __init__(self, model: str | Path | None = None, *, config: EngineConfig | None = None, **settings: Any):
        """`Engine(model, **settings)`, the settings being `EngineConfig`'s fields (backend, verifier, ...; the
        embedded default model when `model` is None), or `Engine(config=EngineConfig(...))`."""
        from .backends import make_backend
        from .inputs.models import resolve_model

        if config is not None and (model is not None or settings):
            raise TypeError("Engine takes a config or a model and settings, not both")
        c = self.config = config if config is not None else EngineConfig.of(model, **settings)
        self.model_path, self.model_label = resolve_model(c.model)
        backend = make_backend(c.backend, self.model_path, **(c.backend_options or {}))
        self.prompt_config = c.prompt_config or PromptConfig.load(self.model_path)
        self.score_norm = c.score_norm
        self.judge = None
        if c.judge_model is not None:
            from .answers import LLMJudge

            self.judge = LLMJudge(make_backend(c.backend, str(c.judge_model), **(c.backend_options or {})))
        made: list = []  # the separate verifier checkpoint's backend, if the verifier loads one

        def verifier_backend(path: str):
            made.append(make_backend(c.backend, path, **(c.backend_options or {})))
            return made[-1]

        self.verifier, self.verifier_name = build_verifier(
            c.verifier,
            backend,
            self.prompt_config,
            verifier_model=c.verifier_model,
            make_backend=verifier_backend,
            check_options=c.check_options,
            process_headline=c.process_headline,
        )
        self.verifier_backend = made[0] if made else None
        self.calibration = find_calibration(c.calibration, [c.verifier_model, self.model_path], self.headline_kind)
        self.parts = self._parts(backend)

    @property
    def backend(self):
        """The generation backend (the parts' own)."""
        return self.parts.backend

    @backend.setter
    def backend(self, backend) -> None:
        self.parts = replace(self.parts, backend=backend)

    def _parts(self, backend) -> Parts:
        """What every strategy is built from."""
        c, prompts = self.config, Prompts(self.prompt_config, backend)
        device = str(backend.device) if backend.device is not None else None  # where a PRM loads
        identity = {"model": self.model_label, "num_parameters": backend.num_parameters, "backend": backend.name}
        identity |= {"verifier": self.verifier_name, "score_norm": c.score_norm, "grader": c.grader}
        reading = {"markers": self.prompt_config.markers, "count_tokens": lambda text: len(backend.encode(text))}
        return Parts(
            backend=backend,
            pipeline=Pipeline(self.calibration, grader=c.grader, judge=self.judge, **reading),
            prompts=prompts,
            verifier=self.verifier,
            headline_kind=self.headline_kind,
            steps=StepScoring(c.verifier, self.verifier, c.verifier_model, prompts, c.score_norm, device),
            identity=identity,
        )

    @property
    def headline_kind(self) -> str | None:
        """The verifier score the headline votes use (see `headline_kind`)."""
        return headline_kind(self.verifier, self.score_norm)

    def close(self) -> None:
        """Release the backends (the generator's, a separate verifier's, the judge's) that hold something to
        stop, e.g. vLLM's engine processes and threads; each once. `with Engine(...) as engine:` calls it."""
        owners = (self.backend, self.verifier_backend, self.judge.backend if self.judge else None)
        for backend in {id(b): b for b in owners if b is not None}.values():
            backend.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def solve(
        self,
        problems: Sequence[Problem],
        params: SamplingParams | None = None,
        *,
        run: RunConfig | None = None,
        config: Any = None,
        out: str | Path | None = None,
        progress: bool = True,
        strict: bool = False,
        retry_failed: bool = False,
        overwrite: bool = False,
        step_scorer: Any = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
        on_progress: Callable[[Any], None] | None = None,
        stop: Sequence[str] = (),
        **keywords: Any,
    ) -> list[dict[str, Any]]:
        """Solve every problem with one strategy; results lines (docs/results.md) in input order, written to `out`
        as each problem finishes (a rerun with the same `out` resumes).

        `keywords` are the run's settings (`RunConfig`: strategy, abstain_below, budget_tokens; or pass `run`) and
        the sampling settings (`SamplingParams`' fields, n 16 by default; or pass `params`; its stop strings and
        `stop` are added to the model's own). `config` is the strategy's settings object (defaults when None);
        `step_scorer` replaces a search's step scorer; `on_record` sees each results line as its problem finishes;
        `on_progress` a `RoundProgress` for every problem still open after a round.

        A problem whose prompt does not fit, or whose rows fail even alone, is recorded with its `status` and the
        run goes on (`strict=True` raises instead); `retry_failed=True` solves again the problems `out` holds as
        failed. `out` holds one experiment: resuming it with other sampling, model, verifier or strategy settings is
        a ValueError naming them, unless `overwrite=True` replaces the file. Every vote carries `p_correct`
        (`tts_engine.pipeline.calibration`); with `abstain_below` a vote below it is marked `abstained`."""
        from .running.loop import run_plan
        from .strategies.registry import record_kinds, strategy_entry

        run, params = solve_settings(run, params, keywords)
        entry = strategy_entry(run.strategy)
        params = replace(params, stop=list(dict.fromkeys((*self.prompt_config.stop, *params.stop, *stop))))
        if config is None and entry.config_type is not None:
            config = entry.config_type()
        if config is not None and (entry.config_type is None or not isinstance(config, entry.config_type)):
            raise ValueError(f"strategy {entry.name!r} takes no {type(config).__name__} settings")
        entry.check_n(params.n, config)
        extra = {"step_scorer": step_scorer} if step_scorer is not None else {}
        budget = TokenBudget(run.budget_tokens) if run.budget_tokens is not None else None
        extra |= {"budget": budget} if budget is not None else {}
        headline = entry.headline(self.parts, config)
        calibration = self.calibration.for_family(entry.family, headline)  # the fits of this strategy's family
        parts = replace(self.parts, pipeline=self.parts.pipeline.with_calibration(calibration))
        plan = entry.build(parts, params, config, **extra)
        kinds = record_kinds(parts, entry.name, config, params.top_logprobs)
        run_block = {**plan.run_block, "strategy": entry.name, "headline_kind": headline}
        run_block |= {"calibration": calibration.describe(kinds), **run.run_block()}
        return run_plan(
            plan,
            problems,
            run_block=run_block,
            out=out,
            progress=progress,
            on_record=on_record,
            on_progress=on_progress,
            screen=self.unfit_prompts,
            strict=strict,
            retry_failed=retry_failed,
            overwrite=overwrite,
            settings=run,
            budget=budget,
        )

    def unfit_prompts(self, problems: Sequence[Problem]) -> list[Any]:
        """The failures of the problems whose generation prompt leaves no room in the model's context, found
        before any generation (backends with a local tokenizer; the others report them when they generate)."""
        from .backends.base import PromptTooLongError
        from .pipeline.failures import problem_failure

        if self.backend.tokenizer is None:
            return []
        limit, failures = self.backend.max_model_len, []
        for i, prompt in enumerate(self.parts.prompts.build(problems)):
            num_tokens = len(self.backend.encode(prompt))
            if num_tokens + 1 > limit:
                failures.append(problem_failure(PromptTooLongError(i, num_tokens, limit), problems))
        return failures


def solve_settings(
    run: RunConfig | None, params: SamplingParams | None, keywords: dict[str, Any]
) -> tuple[RunConfig, SamplingParams]:
    """The run and sampling settings of a solve call: `run` and `params`, or their fields as keywords (not both);
    `SOLVE_DEFAULTS` where not given; an unknown keyword is an error naming the settings."""
    run_fields = {f.name for f in fields(RunConfig)}
    sampling_fields = {f.name for f in fields(SamplingParams)} - {"stop_below"}
    unknown = sorted(set(keywords) - run_fields - sampling_fields)
    if unknown:
        known = sorted(run_fields | sampling_fields)
        raise TypeError(f"Engine.solve got unknown settings {unknown}; its settings are {known}")
    given_run = {k: v for k, v in keywords.items() if k in run_fields}
    given_sampling = {k: v for k, v in keywords.items() if k in sampling_fields}
    if (run is not None and given_run) or (params is not None and given_sampling):
        raise TypeError("Engine.solve takes run / params or their fields as keywords, not both")
    run = run if run is not None else RunConfig(**given_run)
    params = params if params is not None else SamplingParams(**{**SOLVE_DEFAULTS, **given_sampling})
    return run, params


def headline_kind(verifier, score_norm: str) -> str | None:
    """The verifier's own `headline_kind` where it names one (`verifier_recompute`, `verifier_path`), else
    `verifier_<score_norm>`; None without a verifier."""
    if verifier is None:
        return None
    return verifier.headline_kind or f"verifier_{score_norm}"
