"""Typed records: a problem's samples, answer classes, votes and compute, as the pipeline builds them and the
strategies read them; `to_json` turns one into its results line (docs/results.md) at the edge, `from_json` reads
one back (eval, calibration fits, tests).

Each field has one writer: the pipeline writes everything a record of samples holds (p_correct included), a
strategy its own block (`StrategyBlock`) and what its rounds spent (`time_s`), and the run loop the run block and
abstention, once, as the record leaves for the results file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Sequence

from ..inputs.problems import Problem

RECORD_KEYS = (
    *("id", "problem", "reference", "fields", "status", "failure", "prompt", "samples", "classes", "aggregations"),
    *("compute", "run", "time_s", "verify_time_s", "judged_pairs"),
)
"""What a results line holds (docs/results.md), in the order it is written; any other key of a line is its
strategy's own block (adaptive, deepconf, search, ...)."""


@dataclass
class SampleRecord:
    """One sample: its text, answer and answer class, grade, tokens and scores."""

    text: str
    answer: str | None
    answer_class: int
    """Equivalence class id within the problem (-1: no answer)."""
    answer_status: str
    correct: bool | None
    num_tokens: int
    finish_reason: str
    scores: dict[str, float]
    verifier_tokens: int = 0
    verifier_status: str | None = None
    """Written when the verifier could not score the sample (None: it did)."""
    verifier_text: str | None = None
    """What a generative verifier wrote of it."""
    step_scores: list[float] | None = None
    """P(step correct) per step: a generative verifier's, or a search beam's own."""
    steps: list[str] | None = None
    """A search beam's steps."""
    node: int | None = None
    """A search beam's node id in its tree."""
    votes: bool = True
    """False: the sample votes for nothing (a strategy stopped it early); its answer stays in the record."""
    thinking_tokens: int | None = None
    """A thinking model's sample: the tokens of its trace (the rest of num_tokens are its answer's)."""

    def to_json(self) -> dict[str, Any]:
        line = asdict(self)
        for key in ("verifier_status", "verifier_text", "steps", "node", "thinking_tokens"):
            if line[key] is None:
                del line[key]
        if self.votes:
            del line["votes"]
        if self.verifier_text is None and self.step_scores is None:
            del line["step_scores"]
        return line

    @classmethod
    def from_json(cls, line: dict[str, Any]) -> "SampleRecord":
        given = {k: line[k] for k in _FIELDS[cls] if k in line}
        required = {k: line.get(k) for k in ("text", "answer", "answer_class", "answer_status", "correct")}
        counts = {"num_tokens": line.get("num_tokens", 0), "finish_reason": line.get("finish_reason", "stop")}
        return cls(**{**required, **counts, **given, "scores": dict(line.get("scores", {}))})


def voting_samples(samples: Sequence[SampleRecord]) -> list[SampleRecord]:
    """The samples as they vote: one that does not vote (`votes` False) votes for nothing."""
    return [s if s.votes else replace(s, answer=None, answer_class=-1) for s in samples]


@dataclass
class AnswerClass:
    """One class of equivalent answers among a problem's samples."""

    answer: str
    size: int
    correct: bool | None
    p_correct: float = 0.0
    """The probability that the class's answer is right (`tts_engine.pipeline.calibration`)."""
    undecided_because: str | None = None
    """Why grading could not decide (a timeout, an unparsable reference)."""
    abstained: bool | None = None
    """p_correct below the run's abstention threshold (None: the run sets none)."""

    def to_json(self) -> dict[str, Any]:
        return _without_none(asdict(self), ("undecided_because", "abstained"))


@dataclass
class VoteRecord:
    """What one aggregation (majority, weighted:<kind>, ...) predicts for a problem."""

    answer: str | None
    answer_class: int
    confidence: float
    """The winning class's share of the vote's scores."""
    correct: bool | None
    p_correct: float = 0.0
    abstained: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_none(asdict(self), ("abstained",))


@dataclass
class Compute:
    """Tokens a problem cost: its prompt, what was generated, what the verifier computed."""

    prompt_tokens: int = 0
    generated_tokens: int = 0
    verifier_tokens: int = 0
    final_tokens: int | None = None
    """A search: the tokens of the beams it returned (generated_tokens counts every node it grew)."""

    def to_json(self) -> dict[str, Any]:
        return _without_none(asdict(self), ("final_tokens",))


class StrategyBlock:
    """A strategy's own part of a record (adaptive, deepconf, search): a dataclass that names its key."""

    key: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProblemRecord:
    """Everything one problem's solve produced."""

    problem: Problem
    prompt: str | None = None
    samples: list[SampleRecord] = field(default_factory=list)
    classes: list[AnswerClass] = field(default_factory=list)
    aggregations: dict[str, VoteRecord] = field(default_factory=dict)
    compute: Compute = field(default_factory=Compute)
    time_s: float = 0.0
    verify_time_s: float | None = None
    judged_pairs: int | None = None
    status: str = "ok"
    failure: dict[str, Any] | None = None
    block: StrategyBlock | None = None
    run: dict[str, Any] | None = None
    """The run block: written once, by the run loop."""

    @property
    def id(self) -> str:
        return self.problem.id

    def to_json(self) -> dict[str, Any]:
        """The results line (docs/results.md)."""
        p = self.problem
        parts = {
            "id": p.id,
            "problem": p.text,
            "reference": p.reference,
            "fields": p.fields,
            "status": self.status,
            "failure": self.failure,
            "prompt": self.prompt,
            "samples": [s.to_json() for s in self.samples],
            "classes": [c.to_json() for c in self.classes],
            "aggregations": {key: vote.to_json() for key, vote in self.aggregations.items()},
            "compute": self.compute.to_json(),
            "run": self.run,
            "time_s": self.time_s,
            "verify_time_s": self.verify_time_s,
            "judged_pairs": self.judged_pairs,
        }
        line = _without_none(parts, ("failure", "prompt", "run", "verify_time_s", "judged_pairs"))
        if self.block is not None:
            line[self.block.key] = self.block.to_json()
        return line

    def mark_abstentions(self, threshold: float) -> None:
        """Mark every vote and class that abstains at `threshold` (`abstains`)."""
        for entry in (*self.aggregations.values(), *self.classes):
            entry.abstained = abstains(entry.p_correct, threshold)


def abstains(p_correct: float, threshold: float) -> bool:
    """The one abstention rule: an answer whose p_correct is below the threshold abstains; it keeps the answer it
    would have given and its p_correct, and counts as not answered."""
    return p_correct < threshold


def _without_none(line: dict[str, Any], optional: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if not (k in optional and v is None)}


_FIELDS = {SampleRecord: tuple(SampleRecord.__dataclass_fields__)}


def failure_record(problem: Problem, status: str, detail: dict[str, Any]) -> ProblemRecord:
    """The record of a problem that was not solved: no samples, no answer, counted as not solved."""
    return ProblemRecord(problem, status=status, failure=detail)


def strategy_of(record: dict[str, Any]) -> str:
    """The strategy that wrote a results line: `run.strategy`; lines of earlier versions named it in their
    adaptive / search block, or nowhere (fixed)."""
    named = record.get("run", {}).get("strategy")
    if named:
        return named
    if "adaptive" in record:  # which adaptive strategy wrote it: adaptive-length records where budgets stopped
        block = record["adaptive"]
        return block.get("strategy") or ("adaptive-length" if "budget_reached" in block else "adaptive-n")
    if "search" in record:
        return record["search"].get("strategy", "beam")
    return "fixed"
