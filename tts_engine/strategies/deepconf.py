"""The online confidence strategy (DeepConf, arXiv 2508.15260): stop low-confidence traces early, and stop
sampling a problem once its vote is settled.

Per problem (per chunk of problems, all in the same generate calls):
1. Warm-up: `warmup` full-length samples (the run's seed: the first samples of a fixed run with that seed).
   The stop threshold is the percentile of their lowest group confidences that keeps the top `eta` of them
   (eta 0.9: the 10th percentile, DeepConf-high; 0.1: the 90th, DeepConf-low), from the problem's own
   warm-up (`calibrate="problem"`) or once from all warm-up traces of the run's first chunk (`"run"`).
2. Then waves of `trace_wave` samples per open problem. A sample is stopped (finish reason "low_confidence",
   its text and tokens kept and counted) as soon as the mean token confidence of its last `confidence_window`
   tokens falls below the threshold. On the hf backend that is checked at every token inside the decoding loop
   (`SamplingParams.stop_below`); on vllm and openai samples are generated in chunks of `stop_check_tokens`
   (continued as adaptive length continues them, `adaptive.continue_samples`) and a sample whose window fell
   below the threshold within a chunk is stopped at the chunk's end (the rest of the chunk is generated and
   counted).
3. After the warm-up and after every wave: the vote. Stopped samples vote for nothing (`stopped_votes="none"`)
   or as recorded (`"low"`: a stopped sample with an answer votes, with its low confidence as its weight in
   the confidence-weighted votes). A problem stops once the vote share of `consensus_from` reaches
   `consensus` (DeepConf's tau), or at N samples (`--n`).

The answer is the vote `vote_from` (any key of a record's "aggregations"): confidence and the verifier are two
signals, so either can stop (`consensus_from`) and either can answer (`vote_from`); the trace stop is always by
confidence. Records are the pipeline's, every key of "aggregations" voted over the samples that vote, plus a "deepconf"
block.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Iterator, Literal, Sequence

from ..backends.base import Sample
from ..inputs.problems import Problem
from ..params import SamplingParams
from ..pipeline.aggregate import aggregation_keys
from ..pipeline.build import voting_samples
from ..pipeline.confidence import group_confidences, percentile_threshold
from ..pipeline.records import ProblemRecord, StrategyBlock
from ..settings import check_int, setting
from .parts import Parts
from .registry import BlockView, record_kinds, register_strategy
from .rounds import (
    CONFIDENCE_OVER,
    STOP_ON,
    Clock,
    Track,
    cached,
    can_continue,
    check_confidence_over,
    check_stop_on,
    check_tau,
    continue_samples,
    derive_seed,
    generate,
    score_open,
    stop_signal,
)

log = logging.getLogger(__name__)

DEFAULT_VOTE = "weighted:conf_lowest_group"
"""DeepConf's vote: weighted by the lowest group confidence, over the samples that were not stopped."""


@dataclass
class DeepConfConfig:
    """Settings of the online confidence strategy (`tts solve --strategy deepconf`; N is --n)."""

    warmup: int = 8
    """deepconf: full-length warm-up samples per problem; their lowest group confidences set the stop threshold."""
    eta: float = 0.9
    """deepconf: share of the warm-up traces the stop threshold keeps (0.9: their 10th percentile, DeepConf-high;
    0.1: their 90th percentile, DeepConf-low)."""
    consensus: float = 0.95
    """deepconf: a problem stops sampling once --consensus-on of --consensus-from's vote reaches this (DeepConf's
    tau)."""
    consensus_on: str = setting("p_correct", choices=STOP_ON)
    """deepconf: what reaches --consensus: p_correct (the probability that the vote's answer is right) or share (its
    vote share, DeepConf's own rule)."""
    trace_wave: int = 8
    """deepconf: samples per open problem per wave after the warm-up."""
    calibrate: Literal["problem", "run"] = "problem"
    """deepconf: the stop threshold from each problem's own warm-up, or one from all warm-up traces of the first
    chunk of problems (run)."""
    stopped_votes: Literal["none", "low"] = "none"
    """deepconf: a stopped sample votes for nothing, or as recorded (an answer it wrote votes, with its low
    confidence as its weight in confidence-weighted votes)."""
    vote_from: str | None = None
    """deepconf: the vote that answers, a key of a record's strategies (default weighted:conf_lowest_group; e.g.
    weighted:verifier_recompute to stop by confidence and answer by the verifier)."""
    consensus_from: str | None = None
    """deepconf: the vote whose share is compared with --consensus (default: --vote-from)."""
    consensus_over: str = setting("answered", choices=CONFIDENCE_OVER)
    """deepconf, with --consensus-on share: the vote share as a share of the answered samples' scores, of all samples' scores or of the
    number of samples (see --confidence-over)."""
    stop_check_tokens: int = 0
    """deepconf on vllm / openai: tokens per chunk between confidence checks (0: the confidence window)."""

    def __post_init__(self) -> None:
        for name in ("warmup", "trace_wave"):
            value = getattr(self, name)
            check_int(name, value)
        if not 0 < self.eta <= 1:
            raise ValueError(f"eta must be in (0, 1], got {self.eta}")
        self.consensus = check_tau(self.consensus)
        check_confidence_over(self.consensus_over)
        check_stop_on(self.consensus_on)
        if self.calibrate not in ("problem", "run"):
            raise ValueError(f"calibrate must be 'problem' or 'run', got {self.calibrate!r}")
        if self.stopped_votes not in ("none", "low"):
            raise ValueError(f"stopped_votes must be 'none' or 'low', got {self.stopped_votes!r}")
        if isinstance(self.stop_check_tokens, bool) or self.stop_check_tokens < 0:
            raise ValueError(f"stop_check_tokens must be an integer >= 0, got {self.stop_check_tokens!r}")


def _check_key(parts: Parts, params: SamplingParams, key: str, name: str) -> str:
    """`key` if the run's records carry that vote (the choices of vote_from, consensus_from)."""
    keys = aggregation_keys(record_kinds(parts, "deepconf", None, params.top_logprobs))
    if key not in keys:
        raise ValueError(f"{name} must be one of {keys}, got {key!r}")
    return key


def lowest_group(sample: Sample, window: int) -> float:
    """The lowest group confidence (raw C) of a sample; +inf with no confidences (never below a threshold)."""
    groups = group_confidences(sample.confidences, window)
    return min(groups) if groups else float("inf")


def stop_low(samples: Sequence[Sample], threshold: float, window: int) -> list[Sample]:
    """`samples` with every one that has a full window below `threshold` marked "low_confidence" (the chunked
    stop of backends that cannot stop inside their decoding loop)."""
    out = []
    for s in samples:
        low = len(s.confidences) >= window and min(group_confidences(s.confidences, window)) < threshold
        out.append(replace(s, finish_reason="low_confidence") if low else s)
    return out


def votes_from(stopped_votes: str):
    """Which samples vote: with `stopped_votes` "none", a sample stopped for low confidence votes for nothing (its
    answer stays in the record); with "low", every sample votes."""
    if stopped_votes == "low":
        return None
    return lambda sample: sample.finish_reason != "low_confidence"


@dataclass
class DeepconfBlock(StrategyBlock):
    """A finished deepconf problem: its stop threshold, why and when it stopped, what it spent, its answer."""

    key = "deepconf"
    threshold: float | None
    """The stop threshold (raw C) from the warm-up's lowest group confidences."""
    confidence: float
    """The consensus signal when the problem stopped."""
    confidences: list[float]
    stopped_because: str
    n_used: int
    stopped_samples: int
    waves: int
    vote_from: str
    answer: str | None
    correct: bool | None
    tokens_spent: int
    verifier_tokens_spent: int


@register_strategy(
    "deepconf",
    config_type=DeepConfConfig,
    help="Warm-up sets a confidence threshold; later samples stop when below it; stop at consensus or N.",
    summary_lines=lambda records: format_deepconf_summary(records),
    view=BlockView(
        "deepconf",
        "rounds",
        "DeepConf waves",
        signal="consensus signal",
        round_label="wave {i}",
        first_round="warm-up",
        threshold="consensus",
        wave="trace_wave",
        warmup="warmup",
    ),
)
class DeepConfPlan:
    """DeepConf online: warm-up, confidence-stopped waves, consensus stop (see the module docstring)."""

    name = "deepconf"

    def __init__(self, parts: Parts, params: SamplingParams, config: DeepConfConfig):
        if params.top_logprobs < 1:
            raise ValueError(f"strategy deepconf needs token confidences: top_logprobs >= 1, got {params.top_logprobs}")
        if config.warmup > params.n:
            raise ValueError(f"warmup must be <= n, got warmup={config.warmup}, n={params.n}")
        self.parts, self.params, self.config = parts, params, config
        self.vote_key = _check_key(parts, params, config.vote_from or DEFAULT_VOTE, "vote_from")
        self.consensus_key = _check_key(parts, params, config.consensus_from or self.vote_key, "consensus_from")
        self.in_loop = parts.backend.stops_in_loop
        self.chunk_tokens = config.stop_check_tokens or params.confidence_window
        self.rows_per_problem = max(config.warmup, config.trace_wave)
        self.run_threshold: float | None = None
        self.settings = {
            "warmup": config.warmup,
            "eta": config.eta,
            "calibrate": config.calibrate,
            "consensus": config.consensus,
            "consensus_from": self.consensus_key,
            "consensus_on": config.consensus_on,
            "consensus_over": config.consensus_over,
            "vote_from": self.vote_key,
            "stopped_votes": config.stopped_votes,
            "trace_wave": config.trace_wave,
            "stop_mode": "in_loop" if self.in_loop else f"chunks of {self.chunk_tokens} tokens",
        }
        self.run_block = {**parts.run_info(params), "deepconf": self.settings}
        self.verifier = cached(parts.verifier)

    # --- thresholds ---------------------------------------------------------------------------------------
    def _thresholds(self, warm: Sequence[Sequence[Sample]]) -> list[float]:
        """One stop threshold (raw C) per problem from its warm-up samples (or the run's, see `calibrate`)."""
        window, eta = self.params.confidence_window, self.config.eta
        lows = [[lowest_group(s, window) for s in row] for row in warm]
        if self.config.calibrate == "run":
            if self.run_threshold is None:
                pooled = [v for row in lows for v in row if v != float("inf")]
                self.run_threshold = percentile_threshold(pooled, eta) if pooled else float("-inf")
            return [self.run_threshold] * len(warm)
        out = []
        for row in lows:
            finite = [v for v in row if v != float("inf")]
            out.append(percentile_threshold(finite, eta) if finite else float("-inf"))
        return out

    # --- generation with the stop -------------------------------------------------------------------------
    def _stopped_wave(self, problems, prompts, step: SamplingParams, thresholds: list[float]) -> list[list[Sample]]:
        """One wave of samples per prompt, each stopped when its window confidence falls below its threshold."""
        if self.in_loop:
            return generate(self.parts, problems, prompts, replace(step, stop_below=thresholds))
        window = step.confidence_window
        budget = min(self.chunk_tokens, step.max_new_tokens)
        samples = generate(self.parts, problems, prompts, replace(step, max_new_tokens=budget))
        samples = [stop_low(row, t, window) for row, t in zip(samples, thresholds)]
        round_index = 0
        max_len = self.parts.backend.max_model_len
        while budget < step.max_new_tokens and any(can_continue(s, budget + 1, max_len) for r in samples for s in r):
            budget, round_index = min(budget + self.chunk_tokens, step.max_new_tokens), round_index + 1
            samples = continue_samples(
                self.parts.backend, prompts, samples, budget=budget, params=step, round_index=round_index
            )
            samples = [stop_low(row, t, window) for row, t in zip(samples, thresholds)]
        return samples

    # --- the plan -----------------------------------------------------------------------------------------
    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        parts, params, config = self.parts, self.params, self.config
        clock, prompts = Clock(), parts.prompts.build(problems)
        warm_params = replace(params, n=config.warmup)
        samples = generate(parts, problems, prompts, warm_params)  # (P, warmup)
        voting = votes_from(config.stopped_votes)
        thresholds = self._thresholds(samples)
        tracks = [Track() for _ in problems]
        open_rows = list(range(len(problems)))
        wave_index = 0
        while open_rows:
            still_open = []
            for i, record in score_open(
                parts, problems, prompts, samples, open_rows, params, self.verifier, clock, tracks, voting
            ):
                voters = voting_samples(record.samples)
                share = stop_signal(record, self.consensus_key, config.consensus_on, config.consensus_over, voters)
                tracks[i].observe(record, share)
                used = len(samples[i])
                reason = "consensus" if share >= config.consensus else "max_n" if used >= params.n else None
                if reason is None:
                    still_open.append(i)
                    continue
                yield self._finish(record, tracks[i], thresholds[i], share, reason, used, wave_index)
            open_rows = still_open
            if not open_rows:
                return
            size = min(config.trace_wave, params.n - len(samples[open_rows[0]]))  # open problems have as many
            step = replace(params, n=size, seed=derive_seed(params.seed, "deepconf", wave_index + 1))
            new = self._stopped_wave(
                [problems[i] for i in open_rows],
                [prompts[i] for i in open_rows],
                step,
                [thresholds[i] for i in open_rows],
            )
            for i, row in zip(open_rows, new):
                samples[i].extend(row)
            wave_index += 1

    def _finish(self, record, track: Track, threshold: float, share: float, reason: str, used: int, waves: int):
        vote = record.aggregations[self.vote_key]
        record.block = DeepconfBlock(
            threshold=round(threshold, 6) if threshold not in (float("inf"), float("-inf")) else None,
            confidence=share,
            confidences=track.confidences,
            stopped_because=reason,
            n_used=used,
            stopped_samples=sum(s.finish_reason == "low_confidence" for s in record.samples),
            waves=waves,
            vote_from=self.vote_key,
            answer=vote.answer,
            correct=vote.correct,
            tokens_spent=record.compute.generated_tokens,
            verifier_tokens_spent=track.verifier_tokens,
        )
        track.settle(record)
        return record


def format_deepconf_summary(records: Sequence[dict[str, Any]]) -> list[str]:
    """One line on what a deepconf run spent and how its answers scored."""
    blocks = [r["deepconf"] for r in records if "deepconf" in r]
    if not blocks:
        return []
    graded = [b for b in blocks if b["correct"] is not None]
    accuracy = f"{sum(bool(b['correct']) for b in graded) / len(graded):.3f}" if graded else "n/a"
    return [
        f"deepconf ({blocks[0]['vote_from']}): accuracy {accuracy}, mean N used "
        f"{sum(b['n_used'] for b in blocks) / len(blocks):.1f}, stopped samples / problem "
        f"{sum(b['stopped_samples'] for b in blocks) / len(blocks):.1f}, generated tokens / problem "
        f"{sum(b['tokens_spent'] for b in blocks) / len(blocks):.1f}"
    ]
