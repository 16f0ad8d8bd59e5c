"""Adaptive test-time compute: spend more only on the problems whose vote is not yet confident.

- **Adaptive length**: N samples at the first token budget; problems whose confidence is below tau get their
  samples that stopped on the length limit continued (the existing text is the prefix, never regenerated) to
  the next budget; stop at tau or at the last budget. A problem whose samples all stopped early is done.
- **Adaptive N**: samples in waves of W per open problem; a problem stops once its confidence reaches tau
  (after at least min_n samples), once more samples are unlikely to bring one the verifier accepts (futile), once
  its p_correct has stopped rising short of tau (plateau), or at max_n.

What reaches tau is, by default, the p_correct of one vote's answer (`confidence_from`, a key of a record's
"aggregations"; default the headline: weighted by the verifier's `headline_kind` where it names one, else by
`verifier_<score_norm>`; `majority` without a verifier): the probability that it is right, so a problem whose
samples the verifier rejects keeps sampling. With `stop_on="share"` it is the vote's share instead, of the answered
samples (the vote's own confidence) or of all samples or of the number of samples (`confidence_over`, see
CONFIDENCE_OVER). Records are the pipeline's
(`Pipeline.records`, docs/results.md) plus an "adaptive" block, written as each problem finishes; a rerun
with the same `out` resumes. The problems still open in a round go to the backend in one generate call.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from ..backends.base import Sample
from ..inputs.problems import Problem
from ..params import SamplingParams
from ..pipeline.aggregate import aggregation_keys, headline_vote
from ..pipeline.futility import accepted_count
from ..pipeline.records import ProblemRecord, StrategyBlock, strategy_of
from ..settings import check_int, check_probability, is_int, setting
from .parts import Parts
from .plan import RoundProgress, TokenBudget
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

ADAPTIVE_STRATEGIES = ("adaptive-length", "adaptive-n")


# --- parameters --------------------------------------------------------------------------------------------
def check_budgets(budgets: Sequence[int]) -> list[int]:
    """Token budgets as a list of strictly increasing positive integers, or a clear error."""
    budgets = list(budgets)
    if not budgets:
        raise ValueError("budgets must list at least one token budget, got []")
    if not all(is_int(b) and b >= 1 for b in budgets):
        raise ValueError(f"budgets must be positive integers, got {budgets}")
    if any(later <= earlier for earlier, later in zip(budgets, budgets[1:])):
        raise ValueError(f"budgets must be strictly increasing, got {budgets}")
    return budgets


def parse_budgets(text: str) -> list[int]:
    """'256,512,1024' -> [256, 512, 1024], checked."""
    try:
        budgets = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"budgets must be comma-separated integers such as 256,512,1024, got {text!r}") from None
    return check_budgets(budgets)


def check_waves(wave: int, min_n: int, max_n: int) -> None:
    for name, value in (("wave", wave), ("min_n", min_n), ("max_n", max_n)):
        check_int(name, value)
    if max_n < min_n:
        raise ValueError(f"max_n must be >= min_n, got max_n={max_n}, min_n={min_n}")


def confidence_key(parts: Parts, confidence_from: str | None, top_logprobs: int = 20) -> str:
    """The vote whose confidence is compared with tau: the given one (any vote key the run's records carry),
    else the headline: weighted by the verifier's headline kind, or majority without a verifier."""
    if confidence_from is None:
        return headline_vote(parts.headline_kind)
    keys = aggregation_keys(record_kinds(parts, "adaptive-n", None, top_logprobs))
    if confidence_from not in keys:
        raise ValueError(f"confidence_from must be one of {keys}, got {confidence_from!r}")
    return confidence_from


@dataclass
class AdaptiveConfig:
    """Settings of the adaptive strategies (`tts solve --strategy adaptive-length|adaptive-n`)."""

    budgets: list[int] = field(default_factory=lambda: [256, 512, 1024, 2048])
    """adaptive-length: increasing token budgets (replaces --max-new-tokens)."""
    tau: float | None = None
    """Threshold in [0, 1] that stops a problem (default 0.9 with --stop-on p_correct; with --stop-on share 0.6 for
    adaptive-length, 0.8 for adaptive-n)."""
    stop_on: str = setting("p_correct", choices=STOP_ON)
    """What reaches tau: p_correct (the probability that the leading answer is right: a problem whose samples the
    verifier rejects keeps sampling) or share (the leading vote's share of the scores, `confidence`)."""
    confidence_from: str | None = None
    """Strategy key whose vote is compared with tau (default weighted:verifier_<score-norm> with a verifier, else
    majority)."""
    confidence_over: str = setting("answered", choices=CONFIDENCE_OVER)
    """With --stop-on share: the share of the scores of the samples with an answer, of all samples' scores (samples
    with no answer yet then count against stopping), or of the number of samples (a verifier's doubt counts against
    stopping: use it with a verifier's weighted vote)."""
    wave: int = 4
    """adaptive-n: samples per wave."""
    min_n: int = 4
    """adaptive-n: fewest samples before stopping."""
    max_n: int = 64
    """adaptive-n: most samples (replaces --n)."""
    futility: float = 0.1
    """adaptive-n: stop a problem as futile once the chance that its samples up to --max-n bring one the verifier
    accepts (headline score >= .5) falls below this (tts_engine.pipeline.futility; 0: never). Needs a verifier."""
    futility_min_n: int = 8
    """adaptive-n: fewest samples before a problem may stop as futile (four rejections in a row are too common on
    problems whose samples the verifier accepts one time in three to call it)."""
    plateau_waves: int = 4
    """adaptive-n: stop a problem that has a sample the verifier accepts once its p_correct, moving at its pace over
    its last plateau_waves waves, would not reach tau by max_n (reason plateau; 0: never). Needs a verifier."""

    def __post_init__(self) -> None:
        self.budgets = check_budgets(self.budgets)
        self.futility = check_probability("futility", self.futility)
        if self.tau is not None:
            self.tau = check_tau(self.tau)
        check_waves(self.wave, self.min_n, self.max_n)
        check_int("futility_min_n", self.futility_min_n)
        check_int("plateau_waves", self.plateau_waves, least=0)
        check_confidence_over(self.confidence_over)
        check_stop_on(self.stop_on)

    def tau_for(self, strategy: str) -> float:
        """tau, or the default of the strategy and its stop signal."""
        if self.tau is not None:
            return self.tau
        return DEFAULT_TAU[self.stop_on][strategy]


DEFAULT_TAU = {
    "p_correct": {"adaptive-length": 0.9, "adaptive-n": 0.9},
    "share": {"adaptive-length": 0.6, "adaptive-n": 0.8},
}


@dataclass(frozen=True)
class _Rule:
    """When a problem is confident enough to stop."""

    key: str
    tau: float
    over: str
    stop_on: str

    def block(self) -> dict[str, Any]:
        return {"confidence_from": self.key, "stop_on": self.stop_on, "confidence_over": self.over, "tau": self.tau}

    def signal(self, record: ProblemRecord) -> float:
        return stop_signal(record, self.key, self.stop_on, self.over)


def _rule(parts: Parts, params: SamplingParams, config: AdaptiveConfig, strategy: str) -> _Rule:
    """When a problem of `strategy` stops; a bad confidence key fails before any generation."""
    key = confidence_key(parts, config.confidence_from, params.top_logprobs)
    return _Rule(key, config.tau_for(strategy), config.confidence_over, config.stop_on)


def _progress(record: ProblemRecord, rule: _Rule) -> RoundProgress:
    """What an open problem's round says: its samples so far, the answer leading by the stopping rule's vote, that
    answer's p_correct and its vote share."""
    vote = record.aggregations[rule.key]
    return RoundProgress(record.id, len(record.samples), vote.answer, vote.p_correct, vote.confidence)


# --- adaptive length ---------------------------------------------------------------------------------------
def format_adaptive_summary(records: Sequence[dict[str, Any]]) -> list[str]:
    """What an adaptive run spent: budgets / N reached, why problems stopped and what each group cost, and the run's
    token budget against what it spent."""
    with_block = [r for r in records if "adaptive" in r]
    if not with_block:
        return []
    blocks = [r["adaptive"] for r in with_block]
    first = blocks[0]
    spent = sum(b["tokens_spent"] for b in blocks) / len(blocks)
    if "budget_reached" in first:
        reached = Counter(b["budget_reached"] for b in blocks)
        where = "budget reached: " + ", ".join(f"{k}: {v}" for k, v in sorted(reached.items()))
    else:
        where = f"mean N used: {sum(b['n_used'] for b in blocks) / len(blocks):.1f}{_n_by_verdict(records)}"
    over = "" if first.get("confidence_over", "answered") == "answered" else " over all samples"
    signal = f"{first.get('stop_on', 'share')} of "
    lines = [
        f"{strategy_of(with_block[0])} ({signal}{first['confidence_from']}{over}, tau={first['tau']}): {where}; "
        f"generated tokens / problem: {spent:.1f}",
        "  stopped: " + "; ".join(_stop_groups(blocks)),
    ]
    budget = with_block[0]["run"].get("budget_tokens")
    if budget is not None:
        total = sum(b["tokens_spent"] + b["verifier_tokens_spent"] for b in blocks)
        lines.append(f"  run budget: {budget:,} tokens (generated + verifier), spent {total:,}")
    return lines


def _stop_groups(blocks: Sequence[dict[str, Any]]) -> list[str]:
    """Per stop reason: how many problems, and their mean samples and tokens (generated + verifier)."""
    out = []
    for reason in sorted({b["stopped_because"] for b in blocks}):
        group = [b for b in blocks if b["stopped_because"] == reason]
        tokens = sum(b["tokens_spent"] + b["verifier_tokens_spent"] for b in group) / len(group)
        n = [b["n_used"] for b in group if "n_used" in b]
        samples = f", {sum(n) / len(n):.1f} samples" if n else ""
        out.append(f"{reason} {len(group)} ({tokens:.0f} tokens{samples} / problem)")
    return out


def _n_by_verdict(records: Sequence[dict[str, Any]]) -> str:
    """Mean N of the problems where the verifier accepted a sample (headline score >= .5) and of those where it
    rejected every one: a stop that trusts the verifier spends more on the second."""
    kind = next((r["run"].get("headline_kind") for r in records if "adaptive" in r), None)
    if kind is None:
        return ""
    groups: dict[bool, list[int]] = {True: [], False: []}
    for r in records:
        if "adaptive" in r:
            accepted = any(s["scores"].get(kind, 0.0) >= 0.5 for s in r["samples"])
            groups[accepted].append(r["adaptive"]["n_used"])
    text = {True: "where the verifier accepted a sample", False: "where it rejected every one"}
    parts = [f"{text[key]}: {sum(v) / len(v):.1f} ({len(v)} problems)" for key, v in groups.items() if v]
    return f" ({'; '.join(parts)})"


def _max_n(n: int, config: AdaptiveConfig) -> int:
    return config.max_n


CAPS = (("max_n", "samples"), ("budgets", "tokens"))
"""A request's max_n may not pass the server's most samples, nor its budgets the server's most new tokens."""


@register_strategy(
    "adaptive-length",
    config_type=AdaptiveConfig,
    help="Continue the cut samples of unconfident problems budget by budget.",
    summary_lines=format_adaptive_summary,
    request_caps=CAPS,
    view=BlockView("adaptive", "rounds", "Adaptive rounds", round_label="budget {budget}", threshold="tau"),
    calibration_family="adaptive",
)
class AdaptiveLengthPlan:
    """N samples per problem at budgets[0]; unconfident problems continue their cut samples budget by budget."""

    name = "adaptive-length"

    def __init__(self, parts: Parts, params: SamplingParams, config: AdaptiveConfig):
        self.parts, self.budgets = parts, config.budgets
        self.rule = _rule(parts, params, config, self.name)
        self.params = replace(params, max_new_tokens=self.budgets[0])
        self.rows_per_problem = params.n
        settings = {"budgets": self.budgets, **self.rule.block()}
        self.run_block = {**parts.run_info(replace(params, max_new_tokens=self.budgets[-1])), "adaptive": settings}
        self.verifier = cached(parts.verifier)

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord | RoundProgress]:
        """Rounds over one chunk of problems; yields each record as its problem finishes."""
        parts, params, rule, budgets = self.parts, self.params, self.rule, self.budgets
        clock, prompts, tracks = Clock(), parts.prompts.build(problems), [Track() for _ in problems]
        samples = generate(parts, problems, prompts, params)  # (P, N)
        open_rows = list(range(len(problems)))
        for round_index, budget in enumerate(budgets):
            if round_index > 0:
                continued = continue_samples(
                    parts.backend,
                    [prompts[i] for i in open_rows],
                    [samples[i] for i in open_rows],
                    budget=budget,
                    params=params,
                    round_index=round_index,
                )
                for i, row in zip(open_rows, continued):
                    samples[i] = row
            still_open = []
            for i, record in score_open(
                parts, problems, prompts, samples, open_rows, params, self.verifier, clock, tracks
            ):
                confidence = tracks[i].observe(record, rule.signal(record))
                next_budget = budgets[round_index + 1] if round_index + 1 < len(budgets) else None
                reason = _length_stop(confidence, rule.tau, next_budget, samples[i], parts.backend.max_model_len)
                if reason is None:
                    still_open.append(i)
                    yield _progress(record, rule)
                    continue
                yield _finish(
                    record, rule, tracks[i], confidence, reason, rounds=round_index + 1, budget_reached=budget
                )
            open_rows = still_open
            if not open_rows:
                return


@dataclass
class AdaptiveBlock(StrategyBlock):
    """A finished adaptive problem: the stopping rule, why and where it stopped, what it spent."""

    key = "adaptive"
    confidence_from: str
    stop_on: str
    confidence_over: str
    tau: float
    confidence: float
    """The stop signal when the problem stopped."""
    stopped_because: str
    where: dict[str, int]
    """adaptive-length: rounds and budget_reached; adaptive-n: n_used and waves."""
    confidences: list[float]
    """The stop signal after every round."""
    tokens_spent: int
    verifier_tokens_spent: int

    def to_json(self) -> dict[str, Any]:
        line = {k: v for k, v in vars(self).items() if k != "where"}
        head = {k: line.pop(k) for k in ("confidence_from", "stop_on", "confidence_over", "tau", "confidence")}
        return {**head, "stopped_because": line.pop("stopped_because"), **self.where, **line}


def _finish(record: ProblemRecord, rule: _Rule, track: Track, confidence: float, reason: str, **where: int):
    """A finished problem's record with its adaptive block (why it stopped, where, what it spent)."""
    record.block = AdaptiveBlock(
        **rule.block(),
        confidence=confidence,
        stopped_because=reason,
        where=where,
        confidences=track.confidences,
        tokens_spent=record.compute.generated_tokens,
        verifier_tokens_spent=track.verifier_tokens,
    )
    track.settle(record)
    return record


def _spent(record: ProblemRecord, track: Track) -> int:
    """A problem's tokens so far: what its samples generated and what every round's verifier computed."""
    return record.compute.generated_tokens + track.verifier_tokens


def _length_stop(
    confidence: float, tau: float, next_budget: int | None, samples: Sequence[Sample], max_model_len: int
) -> str | None:
    """Why a problem stops after this round, or None to continue it to `next_budget`."""
    if confidence >= tau:
        return "confident"
    if next_budget is None:
        return "last_budget"
    if not any(can_continue(s, next_budget, max_model_len) for s in samples):
        return "all_finished"
    return None


# --- adaptive N --------------------------------------------------------------------------------------------
def plateaued(confidences: Sequence[float], waves: int, wave: int, more: int, tau: float) -> bool:
    """Whether a stop signal that moved from `confidences[-1 - waves]` to `confidences[-1]` over its last `waves`
    waves of `wave` samples would stay below tau after `more` samples at that pace (a falling signal: flat);
    False before `waves` + 1 waves, or with `waves` 0."""
    if waves == 0 or len(confidences) <= waves:
        return False
    pace = (confidences[-1] - confidences[-1 - waves]) / (waves * wave)  # per sample
    return confidences[-1] + max(0.0, pace) * more < tau


@register_strategy(
    "adaptive-n",
    config_type=AdaptiveConfig,
    help="Sample in waves until the vote is confident, up to max_n.",
    samples=_max_n,
    summary_lines=format_adaptive_summary,
    request_caps=CAPS,
    view=BlockView("adaptive", "rounds", "Adaptive waves", threshold="tau", wave="wave"),
    allocates=True,
    calibration_family="adaptive",
)
class AdaptiveNPlan:
    """Samples in waves of `wave` per open problem until its p_correct reaches tau (>= min_n samples), more samples
    are unlikely to bring one the verifier accepts (futile), its p_correct stops rising short of tau (plateau), or
    max_n; with a token budget, each wave after the first goes to the open problems where it is expected to raise
    p_correct most per token."""

    name = "adaptive-n"

    def __init__(
        self, parts: Parts, params: SamplingParams, config: AdaptiveConfig, *, budget: TokenBudget | None = None
    ):
        self.parts, self.wave, self.min_n = parts, config.wave, config.min_n
        self.rule = _rule(parts, params, config, self.name)
        self.params = replace(params, n=config.max_n)
        # A budget is shared best over the whole run: the run loop then hands over up to ROWS_PER_CHUNK problems at
        # once (backends still decode their own batches), not ROWS_PER_CHUNK // wave, so that a first chunk of cheap
        # problems cannot spend what the first waves of later, costlier ones need.
        self.rows_per_problem = 1 if budget else config.wave
        self.futility = config.futility if parts.headline_kind is not None else 0.0
        self.futility_min_n = config.futility_min_n
        self.plateau_waves = config.plateau_waves if parts.headline_kind is not None else 0
        self.budget = budget
        settings = {"wave": config.wave, "min_n": config.min_n, "max_n": config.max_n, **self.rule.block()}
        settings |= {"futility": self.futility, "futility_min_n": self.futility_min_n}
        settings |= {"plateau_waves": self.plateau_waves} | ({"budget_tokens": budget.total} if budget else {})
        self.run_block = {**parts.run_info(self.params), "adaptive": settings}
        self.verifier = cached(parts.verifier)

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord | RoundProgress]:
        """Waves over one chunk of problems; yields each record as its problem finishes."""
        parts, params, rule = self.parts, self.params, self.rule
        clock, prompts, tracks = Clock(), parts.prompts.build(problems), [Track() for _ in problems]
        samples: list[list[Sample]] = [[] for _ in problems]  # (P, n so far)
        waves = [0] * len(problems)  # waves drawn per problem
        latest: list[ProblemRecord | None] = [None] * len(problems)
        allowance = self.budget.share(len(problems)) if self.budget else None
        open_rows, chosen = set(range(len(problems))), list(range(len(problems)))  # every problem's first wave
        while chosen:
            self._draw(problems, prompts, samples, waves, chosen)
            for i, record in score_open(
                parts, problems, prompts, samples, chosen, params, self.verifier, clock, tracks
            ):
                latest[i], confidence = record, tracks[i].observe(record, rule.signal(record))
                reason = self._stop(record, tracks[i].confidences, len(samples[i]))
                if reason is None:
                    yield _progress(record, rule)
                    continue
                open_rows.discard(i)
                yield _finish(record, rule, tracks[i], confidence, reason, n_used=len(samples[i]), waves=waves[i])
            if allowance is None:
                chosen = sorted(open_rows)
            else:
                spent = sum(_spent(r, t) for r, t in zip(latest, tracks) if r is not None)
                chosen = self._allocate(open_rows, latest, tracks, allowance - spent)
        for i in sorted(open_rows):  # the budget ran out with these still open
            confidence = tracks[i].confidences[-1]
            yield _finish(latest[i], rule, tracks[i], confidence, "budget", n_used=len(samples[i]), waves=waves[i])
        if self.budget is not None:
            self.budget.charge(sum(_spent(r, t) for r, t in zip(latest, tracks) if r is not None), len(problems))

    def _draw(self, problems, prompts, samples, waves, rows) -> None:
        """One wave for each of `rows`: its problem's next `wave` samples (fewer at max_n), drawn with the seed of
        that problem's wave number (so a problem's samples do not depend on which others shared the call)."""
        groups: dict[tuple[int, int], list[int]] = {}
        for i in rows:
            groups.setdefault((min(self.wave, self.params.n - len(samples[i])), waves[i]), []).append(i)
        for (size, wave_index), group in sorted(groups.items()):
            step = replace(self.params, n=size, seed=derive_seed(self.params.seed, "wave", wave_index))
            new = generate(self.parts, [problems[i] for i in group], [prompts[i] for i in group], step)
            for i, row in zip(group, new):
                samples[i].extend(row)
                waves[i] += 1

    def _stop(self, record: ProblemRecord, confidences: list[float], used: int) -> str | None:
        """Why a problem stops after this wave (its stop signal after each wave so far: `confidences`), or None to
        keep it open."""
        if used >= self.min_n and confidences[-1] >= self.rule.tau:
            return "confident"
        if used >= self.params.n:
            return "max_n"
        futile_now = self.futility > 0 and used >= self.futility_min_n
        if futile_now and self._chance(record, self.params.n - used) < self.futility:
            return "futile"
        if self._plateau(record, confidences, self.params.n - used):
            return "plateau"
        return None

    def _plateau(self, record: ProblemRecord, confidences: list[float], more: int) -> bool:
        """Whether a problem with an accepted sample would not reach tau by max_n at the pace its stop signal moved
        over the last `plateau_waves` waves (a problem whose every sample was rejected is the futility stop's)."""
        if not plateaued(confidences, self.plateau_waves, self.wave, more, self.rule.tau):
            return False
        return accepted_count(self._headline_scores(record)) > 0

    def _chance(self, record: ProblemRecord, more: int) -> float:
        """The chance that `more` samples bring one the verifier accepts (`tts_engine.pipeline.futility`)."""
        calibration = self.parts.pipeline.calibration
        return calibration.chance_of_acceptance(self.parts.headline_kind, self._headline_scores(record), more)

    def _headline_scores(self, record: ProblemRecord) -> list[float]:
        return [s.scores.get(self.parts.headline_kind, 0.0) for s in record.samples]

    def _allocate(self, open_rows: set[int], latest, tracks, left: int) -> list[int]:
        """The open problems that get the next wave: by expected gain in p_correct per token (the chance the wave
        brings an accepted sample times the p_correct still missing, over the wave's tokens), while `left` lasts;
        the last one chosen may pass it by at most its wave."""
        if left <= 0:
            return []
        value = {}
        for i in open_rows:
            record, used = latest[i], len(latest[i].samples)
            gain = self._chance(record, min(self.wave, self.params.n - used)) * (1.0 - tracks[i].confidences[-1])
            value[i] = (gain / max(1.0, self._wave_cost(record, tracks[i])), -i)
        chosen, cost = [], 0.0
        for i in sorted(open_rows, key=value.get, reverse=True):
            if cost >= left:
                break
            chosen.append(i)
            cost += self._wave_cost(latest[i], tracks[i])
        return sorted(chosen)

    def _wave_cost(self, record: ProblemRecord, track: Track) -> float:
        """A wave's expected tokens: `wave` samples at what this problem's samples have cost so far."""
        return self.wave * _spent(record, track) / max(1, len(record.samples))
