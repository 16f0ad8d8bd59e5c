"""The engine facade: problems in, N samples each, verifier scores, every strategy's vote, results out."""

from __future__ import annotations

import logging
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .aggregate import vote_predictions
from .answers.grading import GRADERS
from .backends.base import PromptFailedError, PromptTooLongError, Sample
from .calibration import Calibration, check_abstain_below, find_calibration
from .confidence import confidence_scores
from .params import SamplingParams
from .problems import Problem
from .prompts import PromptConfig, build_prompt
from .results import problem_record
from .strategies.registry import DEFAULT_STRATEGY
from .verifiers import SCORE_NORMS, likelihood_score, score_each_text_once
from .verifiers.choose import build_verifier, verifier_kind

log = logging.getLogger(__name__)


class Engine:
    """Serve a model (and its verifier) over problem sets with test-time scaling."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        backend: str = "hf",
        verifier: str = "own",
        verifier_model: str | Path | None = None,
        score_norm: str = "yes_no",
        prompt_config: PromptConfig | None = None,
        grader: str = "rule",
        judge_model: str | Path | None = None,
        backend_options: dict[str, Any] | None = None,
        process_aggregation: str = "final",
        check_options: dict[str, Any] | None = None,
        calibration: str | Path | Calibration | None = None,
    ):
        from .backends import make_backend
        from .models import resolve_model

        verifier = verifier_kind(verifier, verifier_model)
        if score_norm not in SCORE_NORMS:
            raise ValueError(f"score_norm must be one of {SCORE_NORMS}, got {score_norm!r}")
        if grader not in GRADERS:
            raise ValueError(f"grader must be one of {GRADERS}, got {grader!r}")
        if grader != "rule" and judge_model is None:
            raise ValueError(f"grader {grader!r} needs a judge model: pass judge_model (--judge-model PATH)")
        self.model_path, self.model_label = resolve_model(model)
        self.backend = make_backend(backend, self.model_path, **(backend_options or {}))
        self.prompt_config = prompt_config or PromptConfig.load(self.model_path)
        self.score_norm = score_norm
        self.grader = grader
        self.judge = None
        if judge_model is not None:
            from .answers import LLMJudge

            self.judge = LLMJudge(make_backend(backend, str(judge_model), **(backend_options or {})))
        self.verifier_kind, self.verifier_model = verifier, verifier_model
        self.verifier, self.verifier_name = build_verifier(
            verifier,
            self.backend,
            self.prompt_config,
            verifier_model=verifier_model,
            make_backend=lambda path: make_backend(backend, path, **(backend_options or {})),
            check_options=check_options,
            process_aggregation=process_aggregation,
        )
        self.calibration = find_calibration(calibration, [verifier_model, self.model_path], self.headline_kind)

    @property
    def headline_kind(self) -> str | None:
        """The verifier score the headline votes use (see `headline_kind`)."""
        return headline_kind(self.verifier, self.score_norm)

    def step_scorer(self, delimiter: str, *, prm_format: str | None = None):
        """What scores the steps of a search: the PRM checkpoint (verifier kind `prm`), else the engine's own
        verifier's step scorer (each verifier declares its own)."""
        if self.verifier_kind == "prm":
            from .verifiers.prm import load_prm

            device = str(getattr(self.backend, "device", "")) or None
            return load_prm(self.verifier_model, prm_format, device=device)
        if self.verifier is None:
            raise ValueError(
                "step-level search needs a step scorer: use the unified or process verifier, or "
                "--verifier-kind prm --verifier-model PATH"
            )
        prompt_for = lambda text: build_prompt(self.prompt_config, text, self.backend)  # noqa: E731
        return self.verifier.step_scorer(prompt_for, delimiter, self.score_norm)

    def step_aggregation(self) -> str:
        """How the engine's step scorer ranks a partial solution by default (prod for a checkpoint's own step
        checks, last for a PRM or where there is no step scorer); read without loading a PRM."""
        if self.verifier_kind == "prm" or self.verifier is None:
            return "last"
        try:
            scorer = self.step_scorer(self.prompt_config.step_delimiter)
        except ValueError:  # a verifier that cannot score steps
            return "last"
        return getattr(scorer, "aggregation", "last")

    def prompts(self, problems: Sequence[Problem]) -> list[str]:
        """The exact generation prompt of each problem."""
        return [build_prompt(self.prompt_config, p.text, self.backend) for p in problems]

    def close(self) -> None:
        """Release the backends (the generator's, a separate verifier's, the judge's) that hold something to
        stop, e.g. vLLM's engine processes and threads; each once. `with Engine(...) as engine:` calls it."""
        seen: set[int] = set()
        for owner in (self, self.verifier, self.judge):
            backend = getattr(owner, "backend", None)
            if backend is not None and id(backend) not in seen and hasattr(backend, "close"):
                seen.add(id(backend))
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
        strategy: str = DEFAULT_STRATEGY,
        config: Any = None,
        out: str | Path | None = None,
        progress: bool = True,
        step_scorer: Any = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
        on_progress: Callable[[Any], None] | None = None,
        stop: Sequence[str] = (),
        strict: bool = False,
        retry_failed: bool = False,
        abstain_below: float | None = None,
        **sampling: Any,
    ) -> list[dict[str, Any]]:
        """Solve every problem with one strategy (`tts_engine.strategies.strategies()`); records in input order,
        written to `out` as each problem finishes (a rerun with the same `out` resumes).

        How samples are drawn: `params` (a `SamplingParams`; its stop strings are added to the model's own), or
        its fields as keywords in `sampling` (n, temperature, top_p, max_new_tokens, seed, top_logprobs,
        confidence_window, confidence_tail; n defaults to 16 here, SOLVE_DEFAULTS), not both. The strategy sees
        this engine through a `StrategyContext` only. `config` is the strategy's settings object
        (its registered type, defaults when None); `step_scorer` replaces a search's step scorer (any
        `StepScorer`); `on_record` sees each record as its problem finishes; `stop` adds stop strings to the
        model's own; `on_progress` sees a `RoundProgress` for every problem still open after a round of the
        strategies that work in rounds.

        A problem whose prompt does not fit the model's context, or whose rows fail even alone, is recorded with
        its `status` (no samples; not solved) and the run goes on; `strict=True` raises instead (a ValueError
        naming the problem). `retry_failed=True` solves again the problems `out` holds as failed.

        Every vote carries `p_correct`, the probability that its answer is right (`tts_engine.calibration`); with
        `abstain_below` a vote whose p_correct is below it is marked `abstained` (it counts as not answered)."""
        from .run import run_plan
        from .strategies.context import StrategyContext
        from .strategies.registry import record_kinds, strategy_entry

        entry = strategy_entry(strategy)
        if params is not None and sampling:
            raise TypeError(f"Engine.solve takes params or sampling keywords, not both (got {sorted(sampling)})")
        params = params if params is not None else solve_params(**sampling)
        params = replace(params, stop=list(dict.fromkeys((*self.prompt_config.stop, *params.stop, *stop))))
        context = StrategyContext(self)
        if config is None and entry.config_type is not None:
            config = entry.config_type()
        if config is not None and (entry.config_type is None or not isinstance(config, entry.config_type)):
            raise ValueError(f"strategy {entry.name!r} takes no {type(config).__name__} settings")
        entry.check_n(params.n, config)
        extra = {"step_scorer": step_scorer} if step_scorer is not None else {}
        plan = entry.build(context, params, config, **extra)
        plan.run_block["headline_kind"] = entry.headline(context, config)
        kinds = record_kinds(context, strategy, config, params.top_logprobs)
        plan.run_block["calibration"] = self.calibration.describe(kinds)
        if check_abstain_below(abstain_below) is not None:
            plan.run_block["abstain_below"] = abstain_below
        return run_plan(
            plan,
            problems,
            out=out,
            progress=progress,
            on_record=on_record,
            on_progress=on_progress,
            screen=self.unfit_prompts,
            strict=strict,
            retry_failed=retry_failed,
            abstain_below=abstain_below,
        )

    def unfit_prompts(self, problems: Sequence[Problem]) -> list[Any]:
        """The failures of the problems whose generation prompt leaves no room in the model's context, found
        before any generation (backends with a local tokenizer; the others report them when they generate)."""
        from .run import problem_failure

        if getattr(self.backend, "tokenizer", None) is None:
            return []
        limit, failures = self.backend.max_model_len, []
        for i, prompt in enumerate(self.prompts(problems)):
            num_tokens = len(self.backend.encode(prompt))
            if num_tokens + 1 > limit:
                failures.append(problem_failure(PromptTooLongError(i, num_tokens, limit), problems))
        return failures

    def solve_batch(self, problems: Sequence[Problem], params: SamplingParams) -> list[dict[str, Any]]:
        """One engine step: generate, extract, group, grade, score, vote for a batch of problems."""
        from .run import generate_or_fail

        started = time.perf_counter()
        prompts = self.prompts(problems)
        samples = generate_or_fail(self.backend, problems, prompts, params)  # (P, N)
        return self.score_samples(problems, prompts, samples, params, started, verifier=self.verifier)

    def score_samples(
        self,
        problems: Sequence[Problem],
        prompts: Sequence[str],
        samples: Sequence[Sequence[Sample]],
        params: SamplingParams,
        started: float | None = None,
        *,
        verifier: Any,
    ) -> list[dict[str, Any]]:
        """Records for problems whose samples exist, scored by `verifier` (the engine's, a strategy's wrapper of
        it, or None for likelihood only); every strategy builds its records here."""
        from .answers import GradingReport, extract_answer, grade_answers_report, group_answers_batch

        started = time.perf_counter() if started is None else started
        answers = [[extract_answer(s.text) for s in row] for row in samples]  # (P, N)
        classes = group_answers_batch(answers)
        reps = [(p, rep) for p, c in zip(problems, classes) for rep in c.representatives]
        report = (
            grade_answers_report(
                [p.reference for p, _ in reps],
                [rep for _, rep in reps],
                questions=[p.text for p, _ in reps],
                grader=self.grader,
                judge=self.judge,
            )
            if any(p.reference is not None for p in problems)
            else GradingReport([None] * len(reps), [None] * len(reps))
        )
        judged = set(report.judged_indices)
        verify_started = time.perf_counter()
        verdicts = _verify(verifier, problems, prompts, samples) if verifier is not None else None
        verify_elapsed = (time.perf_counter() - verify_started) / max(1, len(problems))
        elapsed = (time.perf_counter() - started) / max(1, len(problems))
        records, offset = [], 0
        for i, problem in enumerate(problems):
            num_classes = len(classes[i].representatives)
            span = range(offset, offset + num_classes)
            offset += num_classes
            class_grades = [report.verdicts[k] for k in span] if problem.reference is not None else [None] * num_classes
            record = self._record(
                problem,
                prompts[i],
                samples[i],
                answers[i],
                classes[i],
                class_grades,
                verdicts[i] if verdicts else None,
                params,
                elapsed,
            )
            for k, entry in zip(span, record["classes"]):
                if report.reasons[k] is not None and entry["correct"] is None:
                    entry["undecided_because"] = report.reasons[k]
            record["judged_pairs"] = sum(k in judged for k in span)
            record["verify_time_s"] = round(verify_elapsed, 4)
            records.append(record)
        return records

    def _record(self, problem, prompt, samples, answers, classes, class_grades, verdicts, params, elapsed):
        sample_records = []
        # The confidence kinds where every sample has its token confidences (a problem's samples carry the
        # same kinds: votes need a score of each sample).
        with_confidence = any(s.confidences for s in samples) and all(
            len(s.confidences) == s.num_tokens for s in samples
        )
        for j, sample in enumerate(samples):
            scores = {"likelihood": likelihood_score(sample.logprobs)}
            if with_confidence:
                scores.update(confidence_scores(sample.confidences, params.confidence_window, params.confidence_tail))
            verifier_tokens = 0
            verifier_status, check = None, {}
            if verdicts is not None:
                scores.update(verdicts[j].scores)
                verifier_tokens = verdicts[j].tokens
                verifier_status = verdicts[j].status
                check = _check_fields(verdicts[j])
            c = classes.class_ids[j]
            sample_records.append(
                {
                    "text": sample.text,
                    "answer": answers[j],
                    "answer_class": c,
                    "answer_status": classes.statuses[j],
                    "correct": class_grades[c] if c >= 0 else (False if problem.reference is not None else None),
                    "num_tokens": sample.num_tokens,
                    "finish_reason": sample.finish_reason,
                    "scores": scores,
                    "verifier_tokens": verifier_tokens,
                }
            )
            if verifier_status not in (None, "ok"):
                sample_records[-1]["verifier_status"] = verifier_status
            sample_records[-1].update(check)
        record = problem_record(
            problem,
            prompt=prompt,
            samples=sample_records,
            classes=[
                {"answer": rep, "size": size, "correct": grade}
                for rep, size, grade in zip(classes.representatives, classes.sizes(), class_grades)
            ],
            aggregations=vote_predictions(sample_records, class_grades, has_reference=problem.reference is not None),
            compute={
                "prompt_tokens": samples[0].num_prompt_tokens if samples else 0,
                "generated_tokens": sum(s.num_tokens for s in samples),
                "verifier_tokens": sum(r["verifier_tokens"] for r in sample_records),
            },
            run=self.run_info(params),
            time_s=round(elapsed, 4),
        )
        self.calibration.annotate(record)
        return record

    def run_info(self, params: SamplingParams) -> dict[str, Any]:
        return {
            "model": self.model_label,
            "num_parameters": self.backend.num_parameters,
            "backend": self.backend.name,
            "n": params.n,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_new_tokens": params.max_new_tokens,
            "seed": params.seed,
            **(
                {
                    "top_logprobs": params.top_logprobs,
                    "confidence_window": params.confidence_window,
                    "confidence_tail": params.confidence_tail,
                }
                if params.top_logprobs
                else {}
            ),
            "verifier": self.verifier_name,
            "score_norm": self.score_norm,
            "grader": self.grader,
        }


SOLVE_DEFAULTS = {"n": 16}
"""Where `Engine.solve` (and `tts solve`) differ from `SamplingParams`' own defaults."""


def solve_params(**sampling: Any) -> SamplingParams:
    """The SamplingParams of a solve call: `SamplingParams` fields as keywords, `SOLVE_DEFAULTS` where not given;
    an unknown keyword is an error naming the fields."""
    known = {f.name for f in fields(SamplingParams)} - {"stop_below"}
    unknown = sorted(set(sampling) - known)
    if unknown:
        raise TypeError(f"Engine.solve got unknown settings {unknown}; sampling settings are {sorted(known)}")
    return SamplingParams(**{**SOLVE_DEFAULTS, **sampling})


def headline_kind(verifier, score_norm: str) -> str | None:
    """The verifier's own `headline_kind` where it names one (`verifier_recompute`, `verifier_path`), else
    `verifier_<score_norm>`; None without a verifier."""
    if verifier is None:
        return None
    return verifier.headline_kind or f"verifier_{score_norm}"


def _verify(verifier, problems, prompts, samples) -> list[list[Any]]:
    """The verifier's score of every sample (see `_verify_all`). Where a verification prompt does not fit or a
    row fails even alone, the problems are verified one by one to find the one at fault, which fails alone
    (`ProblemFailedError`: the run loop records it and solves the others again)."""
    from .run import problem_failure

    try:
        return _verify_all(verifier, problems, prompts, samples)
    except (PromptTooLongError, PromptFailedError) as err:
        if len(problems) == 1:
            err.index = 0  # the verifier's row; the problem is the one verified
            raise problem_failure(err, problems) from err
        for i in range(len(problems)):  # the one that fails alone raises its ProblemFailedError
            _verify(verifier, problems[i : i + 1], prompts[i : i + 1], samples[i : i + 1])
        raise


def _verify_all(verifier, problems, prompts, samples) -> list[list[Any]]:
    """The verifier's score of every sample; each distinct text of a problem is scored once
    (`score_each_text_once`). A verifier whose scores belong to samples rather than texts
    (`scores_by_text = False`, e.g. a search's beams) scores every sample."""
    questions, texts = [p.text for p in problems], [[s.text for s in row] for row in samples]
    if not getattr(verifier, "scores_by_text", True):
        return verifier.score(questions, prompts, texts)
    return score_each_text_once(verifier, questions, prompts, texts)


def _check_fields(verdict) -> dict[str, Any]:
    """What a generative verifier wrote of a sample (its check text and step scores), for the results line."""
    text = getattr(verdict, "text", "")
    if not text:
        return {}
    steps = getattr(verdict, "step_scores", None)
    return {"verifier_text": text, "step_scores": None if steps is None else [round(x, 6) for x in steps]}
