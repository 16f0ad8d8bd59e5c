"""Adaptive test-time compute: spend more only on the problems whose vote is not yet confident.

- **Adaptive length**: N samples at the first token budget; problems whose confidence is below tau get their
  samples that stopped on the length limit continued (the existing text is the prefix, never regenerated) to
  the next budget; stop at tau or at the last budget. A problem whose samples all stopped early is done.
- **Adaptive N**: samples in waves of W per open problem; a problem stops once its confidence reaches tau
  (after at least min_n samples) or at max_n.

Confidence is that of one strategy's vote (`confidence_from`, a key of a record's "strategies"; default the
headline: weighted by the verifier's `headline_kind` where it names one, else by `verifier_<score_norm>`;
`majority` without a verifier), as a share of the answered samples (the vote's own confidence) or of all
samples or of the number of samples (`confidence_over`, see CONFIDENCE_OVER). Records are the engine's
(`Engine.score_samples`, docs/results.md) plus an "adaptive" block, written as each problem finishes; a rerun
with the same `out` resumes. The problems still open in a round go to the backend in one generate call.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from .aggregate import aggregation_keys
from .backends.base import PromptFailedError, PromptTooLongError, Sample
from .engine import headline_kind
from .params import SamplingParams
from .problems import Problem
from .run import RoundProgress, generate_or_fail, register_strategy
from .settings import setting

log = logging.getLogger(__name__)

ADAPTIVE_STRATEGIES = ("adaptive-length", "adaptive-n")


# --- parameters --------------------------------------------------------------------------------------------
def check_budgets(budgets: Sequence[int]) -> list[int]:
    """Token budgets as a list of strictly increasing positive integers, or a clear error."""
    budgets = list(budgets)
    if not budgets:
        raise ValueError("budgets must list at least one token budget, got []")
    if any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
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


def check_tau(tau: float) -> float:
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    return float(tau)


def check_waves(wave: int, min_n: int, max_n: int) -> None:
    for name, value in (("wave", wave), ("min_n", min_n), ("max_n", max_n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if max_n < min_n:
        raise ValueError(f"max_n must be >= min_n, got max_n={max_n}, min_n={min_n}")


def strategy_keys(engine) -> list[str]:
    """Every vote key the engine's records carry (the choices of `confidence_from`)."""
    return aggregation_keys(["likelihood"] + (list(engine.verifier.kinds) if engine.verifier is not None else []))


def confidence_key(engine, confidence_from: str | None) -> str:
    """The strategy whose vote confidence is compared with tau: the given one, else the headline."""
    if confidence_from is None:
        return (
            "majority" if engine.verifier is None else f"weighted:{headline_kind(engine.verifier, engine.score_norm)}"
        )
    keys = strategy_keys(engine)
    if confidence_from not in keys:
        raise ValueError(f"confidence_from must be one of {keys}, got {confidence_from!r}")
    return confidence_from


CONFIDENCE_OVER = ("answered", "all", "samples")
"""What a confidence is a share of: the scores of the samples with an answer (the vote's own confidence); of all
samples, so that samples with no answer yet (cut short, unparsable) count against stopping; or of the number of
samples (each could give at most 1), so that a verifier's scores count as beliefs: two samples it rejects give
confidence near 0, not the 1.0 of a share among themselves."""


def record_confidence(record: dict[str, Any], key: str, over: str = "answered") -> float:
    """The confidence of strategy `key`'s vote in a record, as a share of the answered samples' scores, of all
    samples' scores, or of the number of samples (see CONFIDENCE_OVER)."""
    confidence = record["strategies"][key]["confidence"]
    if over == "answered":
        return confidence
    kind = key.split(":", 1)[1] if ":" in key else None  # majority weighs every sample 1
    weights = [s["scores"][kind] if kind else 1.0 for s in record["samples"]]
    answered = sum(w for w, s in zip(weights, record["samples"]) if s["answer_class"] >= 0)
    whole = len(weights) if over == "samples" else sum(weights)
    return round(confidence * answered / whole, 6) if whole > 0 else 0.0


def check_confidence_over(over: str) -> str:
    if over not in CONFIDENCE_OVER:
        raise ValueError(f"confidence_over must be one of {CONFIDENCE_OVER}, got {over!r}")
    return over


@dataclass
class AdaptiveConfig:
    """Settings of the adaptive strategies (`tts solve --strategy adaptive-length|adaptive-n`)."""

    budgets: list[int] = field(default_factory=lambda: [256, 512, 1024, 2048])
    """adaptive-length: increasing token budgets (replaces --max-new-tokens)."""
    tau: float | None = None
    """Confidence in [0, 1] that stops a problem (default 0.6 for adaptive-length, 0.8 for adaptive-n)."""
    confidence_from: str | None = None
    """Strategy key whose vote confidence is compared with tau (default weighted:verifier_<score-norm> with a
    verifier, else majority)."""
    confidence_over: str = setting("answered", choices=CONFIDENCE_OVER)
    """Confidence as a share of the scores of the samples with an answer, of all samples' scores (samples with
    no answer yet then count against stopping), or of the number of samples (a verifier's doubt counts against
    stopping: use it with a verifier's weighted vote)."""
    wave: int = 4
    """adaptive-n: samples per wave."""
    min_n: int = 4
    """adaptive-n: fewest samples before stopping."""
    max_n: int = 64
    """adaptive-n: most samples (replaces --n)."""

    def __post_init__(self) -> None:
        self.budgets = check_budgets(self.budgets)
        if self.tau is not None:
            self.tau = check_tau(self.tau)
        check_waves(self.wave, self.min_n, self.max_n)
        check_confidence_over(self.confidence_over)

    def tau_for(self, strategy: str) -> float:
        """tau, or the strategy's default."""
        if self.tau is not None:
            return self.tau
        return DEFAULT_TAU[strategy]


DEFAULT_TAU = {"adaptive-length": 0.6, "adaptive-n": 0.8}


@dataclass(frozen=True)
class _Rule:
    """When a problem is confident enough to stop."""

    key: str
    tau: float
    over: str

    def block(self) -> dict[str, Any]:
        return {"confidence_from": self.key, "confidence_over": self.over, "tau": self.tau}


def _rule(engine, config: AdaptiveConfig, strategy: str) -> _Rule:
    """When a problem of `strategy` stops; a bad confidence key fails before any generation."""
    return _Rule(confidence_key(engine, config.confidence_from), config.tau_for(strategy), config.confidence_over)


def _progress(record: dict[str, Any], rule: _Rule, confidence: float) -> RoundProgress:
    """What an open problem's round says: its samples so far and the answer leading by the stopping rule's vote."""
    return RoundProgress(record["id"], len(record["samples"]), record["strategies"][rule.key]["answer"], confidence)


def _cached(verifier):
    return _CachedVerifier(verifier) if verifier is not None else None


def derive_seed(seed: int | None, stream: str, index: int, rank: int = 0) -> int | None:
    """The seed of round/wave `index` (and duplicate `rank`): the run seed itself for index 0 and rank 0,
    so a first round draws the same samples as a fixed run; a distinct deterministic seed otherwise."""
    if seed is None:
        return None
    if index == 0 and rank == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}\x00{stream}\x00{index}\x00{rank}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


# --- continuation of samples -------------------------------------------------------------------------------
def join_continuation(old: Sample, new: Sample, stop: Sequence[str] = ()) -> Sample:
    """`old` extended by `new`: text, token ids and log-probs concatenated, the new finish reason.

    A stop string that straddles the join (begun in `old`, completed in `new`) ends the text there."""
    text, reason = old.text + new.text, new.finish_reason
    cuts = [text.find(s, max(0, len(old.text) - len(s) + 1)) for s in stop]
    cuts = [c for c in cuts if c >= 0]
    if cuts:
        text, reason = text[: min(cuts)], "stop"
    return Sample(
        text=text,
        token_ids=list(old.token_ids) + list(new.token_ids),
        finish_reason=reason,
        logprobs=list(old.logprobs) + list(new.logprobs),
        confidences=list(old.confidences) + list(new.confidences),
        num_prompt_tokens=old.num_prompt_tokens,
    )


def can_continue(sample: Sample, budget: int, max_model_len: int) -> bool:
    """Stopped on the length limit, below `budget`, with room left in the model's context."""
    return (
        sample.finish_reason == "length"
        and sample.num_tokens < budget
        and sample.num_prompt_tokens + sample.num_tokens < max_model_len
    )


@dataclass
class _Request:
    """One sample to continue: where it lives and what to send."""

    row: int
    column: int
    prompt: str
    max_new_tokens: int
    rank: int
    """How many earlier requests of the same row send this exact prompt (they get distinct seeds)."""


def continue_samples(
    backend,
    prompts: Sequence[str],
    samples: Sequence[Sequence[Sample]],
    *,
    budget: int,
    params: SamplingParams,
    round_index: int,
) -> list[list[Sample]]:
    """Continue every sample of `samples` `# (P, N)` that can (see `can_continue`) up to `budget` tokens.

    Each is sent as prompt + its text with n=1 and max_new_tokens = budget - its tokens; requests that share
    max_new_tokens go in one generate call (normally all of them). The seed comes from `params.seed` and
    `round_index`. A sample whose prompt no longer fits the context is kept as it is."""
    requests = _plan(backend, prompts, samples, budget)
    result = [list(row) for row in samples]
    groups: dict[tuple[int, int], list[_Request]] = defaultdict(list)
    for request in requests:
        groups[(request.max_new_tokens, request.rank)].append(request)
    for (max_new_tokens, rank), group in sorted(groups.items()):
        step = replace(
            params, n=1, max_new_tokens=max_new_tokens, seed=derive_seed(params.seed, "continue", round_index, rank)
        )
        for request, new in zip(group, _generate_or_skip(backend, [r.prompt for r in group], step)):
            if new is not None:
                old = result[request.row][request.column]
                result[request.row][request.column] = join_continuation(old, new, params.stop)
    return result


def _plan(backend, prompts, samples, budget) -> list[_Request]:
    requests = []
    for row, (prompt, row_samples) in enumerate(zip(prompts, samples)):
        seen: Counter[str] = Counter()
        for column, sample in enumerate(row_samples):
            if can_continue(sample, budget, backend.max_model_len):
                requests.append(
                    _Request(row, column, prompt + sample.text, budget - sample.num_tokens, seen[sample.text])
                )
                seen[sample.text] += 1
    return requests


def _generate_or_skip(backend, prompts: list[str], params: SamplingParams) -> list[Sample | None]:
    """One sample per prompt; a prompt too long for the context gets None instead of failing the batch."""
    keep = list(range(len(prompts)))
    while keep:
        try:
            rows = backend.generate([prompts[i] for i in keep], params)
        except (PromptTooLongError, PromptFailedError) as err:
            log.warning("not continuing a sample: %s", err)
            keep.pop(err.index)
            continue
        out: list[Sample | None] = [None] * len(prompts)
        for i, row in zip(keep, rows):
            out[i] = row[0]
        return out
    return [None] * len(prompts)


# --- what the rounds share -------------------------------------------------------------------------------
class _CachedVerifier:
    """The engine's verifier, scoring each (problem, prompt, solution) once across rounds: a score kept from an
    earlier round comes back as a copy that computed nothing (tokens 0), so summing the rounds' verifier tokens
    counts each scoring once."""

    def __init__(self, verifier):
        self.inner, self.name, self.kinds = verifier, verifier.name, verifier.kinds
        self.headline_kind = verifier.headline_kind
        self.cache: dict[tuple[str, str, str], Any] = {}

    def score(self, questions, prompts, outputs):
        missing: dict[tuple[str, str], list[str]] = defaultdict(list)
        for q, p, outs in zip(questions, prompts, outputs):
            for o in dict.fromkeys(outs):
                if (q, p, o) not in self.cache:
                    missing[(q, p)].append(o)
        fresh = {}
        if missing:
            keys = list(missing)
            scored = self.inner.score([q for q, _ in keys], [p for _, p in keys], [missing[k] for k in keys])
            for key, row in zip(keys, scored):
                for o, s in zip(missing[key], row):
                    self.cache[(*key, o)] = fresh[(*key, o)] = s
        return [[self._take(fresh, (q, p, o)) for o in outs] for q, p, outs in zip(questions, prompts, outputs)]

    def _take(self, fresh: dict, key: tuple[str, str, str]):
        """The score computed now (once), else the kept one as a copy that computed nothing."""
        return fresh.pop(key) if key in fresh else replace(self.cache[key], tokens=0)


@dataclass
class _Track:
    """What one open problem has spent and seen so far."""

    confidences: list[float] = field(default_factory=list)
    verifier_tokens: int = 0
    """What every round's scoring computed (a sample scored in an earlier round is not scored again)."""
    time_s: float = 0.0
    """This problem's share of the wall time of every round it was open in (the shares add up to the run)."""

    def observe(self, record: dict[str, Any], rule: _Rule) -> float:
        confidence = record_confidence(record, rule.key, rule.over)
        self.confidences.append(confidence)
        self.verifier_tokens += sum(sample["verifier_tokens"] for sample in record["samples"])
        return confidence


class _Clock:
    """Splits the wall time of each round equally among the problems open in it."""

    def __init__(self):
        self.last = time.perf_counter()

    def charge(self, tracks: Sequence[_Track], rows: Sequence[int]) -> None:
        now = time.perf_counter()
        for i in rows:
            tracks[i].time_s += (now - self.last) / len(rows)
        self.last = now


def _generate(engine, problems: Sequence[Problem], prompts: Sequence[str], params: SamplingParams):
    return generate_or_fail(engine.backend, problems, prompts, params)  # (P, n)


# --- adaptive length ---------------------------------------------------------------------------------------
@register_strategy(
    "adaptive-length",
    config_type=AdaptiveConfig,
    summary="Continue the cut samples of unconfident problems budget by budget.",
)
class AdaptiveLengthPlan:
    """N samples per problem at budgets[0]; unconfident problems continue their cut samples budget by budget."""

    name = "adaptive-length"

    def __init__(self, engine, params: SamplingParams, config: AdaptiveConfig):
        self.engine, self.budgets = engine, config.budgets
        self.rule = _rule(engine, config, self.name)
        self.params = replace(params, max_new_tokens=self.budgets[0])
        self.rows_per_problem = params.n
        settings = {"strategy": self.name, "budgets": self.budgets, **self.rule.block()}
        self.run_block = {**engine.run_info(replace(params, max_new_tokens=self.budgets[-1])), "adaptive": settings}
        self.verifier = _cached(engine.verifier)

    def solve(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any] | RoundProgress]:
        yield from _length_rounds(self.engine, problems, self.params, self.budgets, self.rule, self.verifier)


def _length_rounds(
    engine, problems, params, budgets, rule: _Rule, verifier
) -> Iterator[dict[str, Any] | RoundProgress]:
    """Rounds over one chunk of problems; yields each record as its problem finishes."""
    clock, prompts = _Clock(), engine.prompts(problems)
    samples = _generate(engine, problems, prompts, params)  # (P, N)
    tracks = [_Track() for _ in problems]
    open_rows = list(range(len(problems)))
    for round_index, budget in enumerate(budgets):
        if round_index > 0:
            continued = continue_samples(
                engine.backend,
                [prompts[i] for i in open_rows],
                [samples[i] for i in open_rows],
                budget=budget,
                params=params,
                round_index=round_index,
            )
            for i, row in zip(open_rows, continued):
                samples[i] = row
        records = engine.score_samples(
            [problems[i] for i in open_rows],
            [prompts[i] for i in open_rows],
            [samples[i] for i in open_rows],
            params,
            verifier=verifier,
        )
        clock.charge(tracks, open_rows)
        still_open = []
        for i, record in zip(open_rows, records):
            confidence = tracks[i].observe(record, rule)
            next_budget = budgets[round_index + 1] if round_index + 1 < len(budgets) else None
            reason = _length_stop(confidence, rule.tau, next_budget, samples[i], engine.backend.max_model_len)
            if reason is None:
                still_open.append(i)
                yield _progress(record, rule, confidence)
                continue
            record["adaptive"] = {
                "strategy": "adaptive-length",
                **rule.block(),
                "confidence": confidence,
                "stopped_because": reason,
                "rounds": round_index + 1,
                "budget_reached": budget,
                "confidences": tracks[i].confidences,
                "tokens_spent": record["compute"]["generated_tokens"],
                "verifier_tokens_spent": tracks[i].verifier_tokens,
            }
            record["time_s"] = round(tracks[i].time_s, 4)
            yield record
        open_rows = still_open
        if not open_rows:
            return


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
@register_strategy(
    "adaptive-n", config_type=AdaptiveConfig, summary="Sample in waves until the vote is confident, up to max_n."
)
class AdaptiveNPlan:
    """Samples in waves of `wave` per open problem until its confidence reaches tau (>= min_n samples) or max_n."""

    name = "adaptive-n"

    def __init__(self, engine, params: SamplingParams, config: AdaptiveConfig):
        self.engine, self.wave, self.min_n = engine, config.wave, config.min_n
        self.rule = _rule(engine, config, self.name)
        self.params = replace(params, n=config.max_n)
        self.rows_per_problem = config.wave
        settings = {
            "strategy": self.name,
            "wave": config.wave,
            "min_n": config.min_n,
            "max_n": config.max_n,
            **self.rule.block(),
        }
        self.run_block = {**engine.run_info(self.params), "adaptive": settings}
        self.verifier = _cached(engine.verifier)

    def solve(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any] | RoundProgress]:
        yield from _waves(self.engine, problems, self.params, self.wave, self.min_n, self.rule, self.verifier)


def _waves(engine, problems, params, wave, min_n, rule: _Rule, verifier) -> Iterator[dict[str, Any] | RoundProgress]:
    """Waves over one chunk of problems; yields each record as its problem finishes."""
    max_n = params.n
    clock, prompts = _Clock(), engine.prompts(problems)
    samples: list[list[Sample]] = [[] for _ in problems]  # (P, n so far)
    tracks = [_Track() for _ in problems]
    open_rows = list(range(len(problems)))
    wave_index = 0
    while open_rows:
        size = min(wave, max_n - len(samples[open_rows[0]]))  # every open problem has as many samples
        step = replace(params, n=size, seed=derive_seed(params.seed, "wave", wave_index))
        new = _generate(engine, [problems[i] for i in open_rows], [prompts[i] for i in open_rows], step)
        for i, row in zip(open_rows, new):
            samples[i].extend(row)
        records = engine.score_samples(
            [problems[i] for i in open_rows],
            [prompts[i] for i in open_rows],
            [samples[i] for i in open_rows],
            params,
            verifier=verifier,
        )
        clock.charge(tracks, open_rows)
        wave_index += 1
        still_open = []
        for i, record in zip(open_rows, records):
            confidence, used = tracks[i].observe(record, rule), len(samples[i])
            reason = "confident" if used >= min_n and confidence >= rule.tau else "max_n" if used >= max_n else None
            if reason is None:
                still_open.append(i)
                yield _progress(record, rule, confidence)
                continue
            record["adaptive"] = {
                "strategy": "adaptive-n",
                **rule.block(),
                "confidence": confidence,
                "stopped_because": reason,
                "n_used": used,
                "waves": wave_index,
                "confidences": tracks[i].confidences,
                "tokens_spent": record["compute"]["generated_tokens"],
                "verifier_tokens_spent": tracks[i].verifier_tokens,
            }
            record["time_s"] = round(tracks[i].time_s, 4)
            yield record
        open_rows = still_open


# --- summary -----------------------------------------------------------------------------------------------
def format_adaptive_summary(records: Sequence[dict[str, Any]]) -> str:
    """One line on what the adaptive run spent: budgets / N reached and why problems stopped."""
    blocks = [r["adaptive"] for r in records if "adaptive" in r]
    if not blocks:
        return "no adaptive records"
    reasons = Counter(b["stopped_because"] for b in blocks)
    spent = sum(b["tokens_spent"] for b in blocks) / len(blocks)
    if blocks[0]["strategy"] == "adaptive-length":
        reached = Counter(b["budget_reached"] for b in blocks)
        where = "budget reached: " + ", ".join(f"{k}: {v}" for k, v in sorted(reached.items()))
    else:
        where = f"mean N used: {sum(b['n_used'] for b in blocks) / len(blocks):.1f}"
    why = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
    over = "" if blocks[0].get("confidence_over", "answered") == "answered" else " over all samples"
    return (
        f"{blocks[0]['strategy']} ({blocks[0]['confidence_from']}{over}, tau={blocks[0]['tau']}): {where}; "
        f"stopped: {why}; generated tokens / problem: {spent:.1f}"
    )
