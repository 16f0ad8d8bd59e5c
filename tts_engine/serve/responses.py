"""The engine's records (docs/results.md) -> OpenAI responses and stream chunks.

A problem's choices are its top answer classes under the request's vote (`vote_classes`, the engine's own
aggregation): choices[0] is the vote's winner, the rest follow by class score. A choice's text is the full text
of its class's highest-scored sample (by `pick_kind`); it also carries the answer, the probability that it is
right (`p_correct`, `tts_engine.pipeline.calibration`), the class's share of the vote (`confidence`), its sample count and,
with return_candidates, every sample's answer, scores and class. Where the request sets an abstention threshold, a
choice whose p_correct is below it says `abstained: true` (its answer and text are kept: what it would have
answered).
Usage counts tokens as `tts solve` does (each record's "compute"): prompt, generated (completion_tokens) and
verifier tokens (completion_tokens_details.verifier_tokens).
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Sequence

from ..pipeline.aggregate import NO_ANSWER, vote_classes
from ..pipeline.records import RECORD_KEYS
from .schema import ApiError, SolveRequest


def ranked_classes(record: dict[str, Any], vote: str) -> tuple[list[int], list[float], list[int]]:
    """(class ids, winner first then by score, count and first sample; per-class totals; per-class counts)."""
    samples = record["samples"]
    rule, _, kind = vote.partition(":")
    class_ids = [s["answer_class"] for s in samples]
    scores = None
    if kind:
        if samples and not any(kind in s["scores"] for s in samples):
            raise ApiError(
                f"tts.score_kind: this strategy's samples carry no score {kind!r}; they carry {sorted(samples[0]['scores'])}",
                param="tts.score_kind",
            )
        scores = [float(s["scores"].get(kind, 0.0)) for s in samples]
    result = vote_classes(rule, class_ids, scores, [s["answer"] for s in samples])
    first = {c: class_ids.index(c) for c in set(class_ids) if c != NO_ANSWER}
    order = sorted(first, key=lambda c: (-result.class_totals[c], -result.class_counts[c], first[c]))
    if result.answer_class != NO_ANSWER:
        order.remove(result.answer_class)
        order.insert(0, result.answer_class)
    return order, result.class_totals, result.class_counts


def pick_sample(samples: Sequence[dict[str, Any]], answer_class: int | None, kind: str) -> int:
    """Index of the highest-scored sample of a class (of all samples when None); ties: the earliest."""
    members = [j for j, s in enumerate(samples) if answer_class is None or s["answer_class"] == answer_class]
    return max(members, key=lambda j: (samples[j]["scores"].get(kind, 0.0), -j))


def candidates(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every sample's answer, class, scores, tokens and text."""
    keys = ("answer", "answer_class", "scores", "num_tokens", "finish_reason", "text")
    return [{"index": j, **{k: s.get(k) for k in keys}} for j, s in enumerate(record["samples"])]


def problem_choices(record: dict[str, Any], request: SolveRequest) -> list[dict[str, Any]]:
    """The request's `answers` top classes of one problem, as choice bodies without index or text field name."""
    samples = record["samples"]
    order, totals, counts = ranked_classes(record, request.vote)
    total = sum(totals)
    extra = {"candidates": candidates(record)} if request.return_candidates else {}
    if not order:  # no sample gave an answer: the best sample's text, with no answer
        j = pick_sample(samples, None, request.pick_kind) if samples else None
        text = samples[j]["text"] if j is not None else ""
        reason = samples[j]["finish_reason"] if j is not None else "length"
        base = {
            "answer": None,
            "answer_class": None,
            "p_correct": 0.0,
            "confidence": 0.0,
            "votes": 0,
            "sample_index": j,
        }
        return [{"text": text, "finish_reason": reason, **base, **_abstention(0.0, request), **extra}]
    choices = []
    for c in order[: request.answers]:
        j = pick_sample(samples, c, request.pick_kind)
        p_correct = record["classes"][c].get("p_correct", 0.0)
        choices.append(
            {
                "text": samples[j]["text"],
                "finish_reason": samples[j]["finish_reason"],
                "answer": samples[j]["answer"] if samples[j]["answer"] is not None else record["classes"][c]["answer"],
                "answer_class": c,
                "p_correct": p_correct,
                "confidence": round(totals[c] / total, 6) if total > 0 else 0.0,
                "votes": counts[c],
                "sample_index": j,
                **_abstention(p_correct, request),
                **extra,
            }
        )
    return choices


def _abstention(p_correct: float, request: SolveRequest) -> dict[str, bool]:
    """{"abstained": ...} when the request sets a threshold (p_correct below it), else nothing."""
    return request.run.abstention(p_correct)


def usage(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Token counts summed over the request's problems; total_tokens counts all three."""
    prompt = sum(r["compute"]["prompt_tokens"] for r in records)
    generated = sum(r["compute"]["generated_tokens"] for r in records)
    verifier = sum(r["compute"]["verifier_tokens"] for r in records)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": generated,
        "total_tokens": prompt + generated + verifier,
        "completion_tokens_details": {"verifier_tokens": verifier},
    }


def as_choice(body: dict[str, Any], index: int, kind: str, *, stream: bool = False) -> dict[str, Any]:
    """A choice body -> the chat or completions choice (or stream delta) at `index`."""
    body = dict(body)
    text = body.pop("text")
    if kind == "completion":
        return {"index": index, "text": text, "logprobs": None, **body}
    message = {"role": "assistant", "content": text}
    return {"index": index, ("delta" if stream else "message"): message, "logprobs": None, **body}


ENGINE_RECORD_KEYS = frozenset(RECORD_KEYS)
"""What every results record holds; any other key is its strategy's own block."""


def tts_block(request: SolveRequest, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the response says of the scaling itself: strategy, samples, vote, and each problem's compute."""
    problems = []
    for record in records:
        entry = {"compute": record["compute"], "samples": len(record["samples"])}
        entry.update({k: v for k, v in record.items() if k not in ENGINE_RECORD_KEYS})  # the strategy's own block
        problems.append(entry)
    return {
        "strategy": request.run.strategy,
        "n": request.params.n,
        "aggregation": request.vote,
        "score_kind": request.pick_kind,
        "seed": request.params.seed,
        "problems": problems,
    }


class ResponseIds:
    """The id, object names and creation time shared by a response and all its chunks."""

    def __init__(self, request: SolveRequest):
        self.request = request
        self.id = ("chatcmpl-" if request.kind == "chat" else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())

    def head(self, *, chunk: bool = False) -> dict[str, Any]:
        kind = self.request.kind
        obj = "text_completion" if kind == "completion" else "chat.completion.chunk" if chunk else "chat.completion"
        return {"id": self.id, "object": obj, "created": self.created, "model": self.request.model}


def full_response(ids: ResponseIds, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The non-streaming response to a request whose records are all in (input order)."""
    request, choices = ids.request, []
    for p, record in enumerate(records):
        for i, body in enumerate(problem_choices(record, request)):
            choices.append(as_choice(body, p * request.answers + i, request.kind))
    return {
        **ids.head(),
        "choices": choices,
        "usage": usage(records),
        "system_fingerprint": None,
        "tts": tts_block(request, records),
    }


def progress_chunk(ids: ResponseIds, event: dict[str, Any]) -> dict[str, Any]:
    """A stream chunk with no choices that carries one progress event under `tts`."""
    info = {k: v for k, v in event.items() if k != "type"}
    return {**ids.head(chunk=True), "choices": [], "tts": {"event": "progress", **info}}


def record_progress(problem: int, record: dict[str, Any], request: SolveRequest) -> dict[str, Any]:
    """The progress event of a finished problem: samples done, the leader, its p_correct (the probability that it
    is right) and its confidence (its share of the vote), as the `round` events say them."""
    order, totals, _ = ranked_classes(record, request.vote)
    total = sum(totals)
    leader = order[0] if order else None
    return {
        "type": "progress",
        "stage": "answered",
        "problem": problem,
        "samples_done": len(record["samples"]),
        "leader": record["classes"][leader]["answer"] if leader is not None else None,
        "p_correct": record["classes"][leader].get("p_correct", 0.0) if leader is not None else 0.0,
        "confidence": round(totals[leader] / total, 6) if leader is not None and total > 0 else 0.0,
    }


def answer_chunk(ids: ResponseIds, problem: int, record: dict[str, Any]) -> dict[str, Any]:
    """The stream chunk holding a finished problem's choices (full text, answer, confidence, candidates)."""
    request = ids.request
    bodies = problem_choices(record, request)
    choices = [as_choice(b, problem * request.answers + i, request.kind, stream=True) for i, b in enumerate(bodies)]
    return {**ids.head(chunk=True), "choices": choices}


def usage_chunk(ids: ResponseIds, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The last chunk when stream_options.include_usage: no choices, the usage and the tts block."""
    return {**ids.head(chunk=True), "choices": [], "usage": usage(records), "tts": tts_block(ids.request, records)}
