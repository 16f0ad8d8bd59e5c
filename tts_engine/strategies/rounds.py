"""The round library: what the strategies that work in rounds share (adaptive-length, adaptive-n, deepconf,
search). Continuing samples, per-round seeds, the verifier cache that scores a text once across rounds, each open
problem's track of what it spent, the clock that shares a round's wall time, and the round step itself
(`score_open`: score the open problems, charge the clock)."""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..backends.base import PromptFailedError, PromptTooLongError, Sample
from ..inputs.problems import Problem
from ..params import SamplingParams
from ..pipeline.failures import generate_or_fail
from ..pipeline.records import ProblemRecord

log = logging.getLogger(__name__)


# --- stop rules ----------------------------------------------------------------------------------------------
def check_tau(tau: float) -> float:
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    return float(tau)


CONFIDENCE_OVER = ("answered", "all", "samples")
"""What a confidence is a share of: the scores of the samples with an answer (the vote's own confidence); of all
samples, so that samples with no answer yet (cut short, unparsable) count against stopping; or of the number of
samples (each could give at most 1), so that a verifier's scores count as beliefs: two samples it rejects give
confidence near 0, not the 1.0 of a share among themselves."""


def record_confidence(record: ProblemRecord, key: str, over: str = "answered", samples=None) -> float:
    """The confidence of vote `key` in a record, as a share of the answered samples' scores, of all samples'
    scores, or of the number of samples (see CONFIDENCE_OVER); `samples`: those that voted (default all)."""
    confidence = record.aggregations[key].confidence
    if over == "answered":
        return confidence
    samples = record.samples if samples is None else samples
    kind = key.split(":", 1)[1] if ":" in key else None  # majority weighs every sample 1
    weights = [s.scores[kind] if kind else 1.0 for s in samples]
    answered = sum(w for w, s in zip(weights, samples) if s.answer_class >= 0)
    whole = len(weights) if over == "samples" else sum(weights)
    return round(confidence * answered / whole, 6) if whole > 0 else 0.0


STOP_ON = ("p_correct", "share")
"""What a round's stop compares with its threshold: the leading answer's p_correct (the probability that it is right,
`tts_engine.pipeline.calibration`), or its vote share (`confidence`, as a share `over`, see CONFIDENCE_OVER): a share reaches
1.0 when the verifier rejects every sample but one class, p_correct does not."""


def stop_signal(record: ProblemRecord, key: str, stop_on: str, over: str = "answered", samples=None) -> float:
    """The value of vote `key` in a record that a stop compares with its threshold (see STOP_ON); `samples`: those
    that voted (default all)."""
    if stop_on == "p_correct":
        return record.aggregations[key].p_correct
    return record_confidence(record, key, over, samples)


def check_stop_on(stop_on: str) -> str:
    if stop_on not in STOP_ON:
        raise ValueError(f"stop_on must be one of {STOP_ON}, got {stop_on!r}")
    return stop_on


def check_confidence_over(over: str) -> str:
    if over not in CONFIDENCE_OVER:
        raise ValueError(f"confidence_over must be one of {CONFIDENCE_OVER}, got {over!r}")
    return over


# --- seeds ---------------------------------------------------------------------------------------------------
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
        for request, new in zip(group, generate_or_skip(backend, [r.prompt for r in group], step)):
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


def generate_or_skip(backend, prompts: list[str], params: SamplingParams) -> list[Sample | None]:
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
class CachedVerifier:
    """The engine's verifier, scoring each (problem, prompt, solution) once across rounds: a score kept from an
    earlier round comes back as a copy that computed nothing (tokens 0), so summing the rounds' verifier tokens
    counts each scoring once."""

    scores_by_text = True

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
class Track:
    """What one open problem has spent and seen so far."""

    confidences: list[float] = field(default_factory=list)
    verifier_tokens: int = 0
    """What every round's scoring computed (a sample scored in an earlier round is not scored again)."""
    time_s: float = 0.0
    """This problem's share of the wall time of every round it was open in (the shares add up to the run)."""

    def observe(self, record: ProblemRecord, signal: float) -> float:
        """Note a round's record: its stop signal (see `stop_signal`) and what its scoring computed; returns the
        signal."""
        self.confidences.append(signal)
        self.verifier_tokens += record.compute.verifier_tokens
        return signal

    def settle(self, record: ProblemRecord) -> None:
        """Give a finished problem's record what every round cost it: a round's record counts only the scoring
        that round computed, and the wall time of the rounds it was open in."""
        record.compute.verifier_tokens = self.verifier_tokens
        record.time_s = round(self.time_s, 4)


class Clock:
    """Splits the wall time of each round equally among the problems open in it."""

    def __init__(self):
        self.last = time.perf_counter()

    def charge(self, tracks: Sequence[Track], rows: Sequence[int]) -> None:
        now = time.perf_counter()
        for i in rows:
            tracks[i].time_s += (now - self.last) / len(rows)
        self.last = now


def generate(parts, problems: Sequence[Problem], prompts: Sequence[str], params: SamplingParams):
    """`params.n` samples of each prompt `# (P, n)`; a prompt that fails is its problem's failure."""
    return generate_or_fail(parts.backend, problems, prompts, params)


def cached(verifier) -> CachedVerifier | None:
    """The verifier behind a cache that scores each text once across rounds (None without a verifier)."""
    return CachedVerifier(verifier) if verifier is not None else None


def score_open(
    parts, problems, prompts, samples, open_rows: Sequence[int], params, verifier, clock, tracks, votes_from=None
):
    """One round's records of the open problems `# (open,)`, scored by `verifier` (`votes_from`: which samples
    vote, see `Pipeline.records`); the round's wall time charged to them. Returns (row, record) pairs."""
    records = parts.pipeline.records(
        [problems[i] for i in open_rows],
        [prompts[i] for i in open_rows],
        [samples[i] for i in open_rows],
        params,
        verifier=verifier,
        votes_from=votes_from,
    )
    clock.charge(tracks, open_rows)
    return list(zip(open_rows, records))
