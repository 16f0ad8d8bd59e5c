"""The one run loop: resume, chunking, results writing, failures and progress, for every strategy.

A strategy is a *plan* (`Plan`) that the loop drives: given a chunk of problems it yields one record per problem
as each finishes. Plans are registered by name (`tts_engine.strategies.register_strategy`); `Engine.solve(strategy=
...)` builds the plan and hands it to `run_plan`, which names the strategy in every record (`run.strategy`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from .backends.base import PromptFailedError, PromptTooLongError
from .calibration import mark_abstentions
from .problems import Problem
from .results import ResultsWriter, failure_record, record_status, strategy_of

log = logging.getLogger(__name__)

ROWS_PER_CHUNK = 512
"""Samples in flight per chunk: results are written as each problem of a chunk finishes (the backend batches
inside a chunk)."""


class ProblemFailedError(Exception):
    """One problem that cannot be solved (its prompt does not fit, or its rows fail even alone): the run loop
    records it with `status` and `detail` and goes on with the others (raised as a ValueError under `strict`)."""

    def __init__(self, problem_id: str, status: str, detail: dict[str, Any]):
        self.problem_id, self.status, self.detail = problem_id, status, detail
        super().__init__(f"problem {problem_id!r}: {detail['reason']}")


def problem_failure(err: PromptTooLongError | PromptFailedError, problems: Sequence[Problem]) -> ProblemFailedError:
    """The failure of the problem behind a backend's prompt error (`err.index` is its position in `problems`)."""
    problem_id = problems[err.index].id
    if isinstance(err, PromptTooLongError):
        detail = {"reason": str(err), "num_tokens": err.num_tokens, "max_model_len": err.max_model_len}
        return ProblemFailedError(problem_id, "prompt_too_long", detail)
    return ProblemFailedError(problem_id, "failed", {"reason": err.reason})


def generate_or_fail(backend, problems: Sequence[Problem], prompts: Sequence[str], params) -> list:
    """`backend.generate(prompts, params)` `# (P, n)`, with a prompt error named as its problem's failure."""
    try:
        return backend.generate(prompts, params)
    except (PromptTooLongError, PromptFailedError) as err:
        raise problem_failure(err, problems) from err


@dataclass(frozen=True)
class RoundProgress:
    """A plan's word on a problem still open after a round (adaptive strategies): how many samples it has and
    which answer leads. Plans may yield these between records; the loop hands them to `on_progress`."""

    problem_id: str
    samples: int
    leader: str | None
    confidence: float


class Plan(Protocol):
    """One strategy's plan over a run: what it spends per problem and how it solves a chunk."""

    name: str
    rows_per_problem: int
    """Samples one problem holds in flight at most (sizes the chunks)."""
    run_block: dict[str, Any]
    """The results' "run" block (model, sampling settings, verifier, the strategy's own settings)."""

    def solve(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any] | RoundProgress]:
        """One record per problem of the chunk, yielded as each finishes (any order), with optional
        `RoundProgress` items for problems still open."""
        ...


class Run:
    """Resume from, write to and order the records of one run; draws its progress bar."""

    def __init__(
        self,
        problems: Sequence[Problem],
        out: str | Path | None,
        progress: bool,
        strategy: str,
        retry_failed: bool = False,
    ):
        from tqdm.auto import tqdm

        self.writer = ResultsWriter(out, drop_failed=retry_failed) if out is not None else None
        self.done: dict[str, dict[str, Any]] = dict(self.writer.existing) if self.writer else {}
        self.todo = [p for p in problems if p.id not in self.done]
        if self.done:
            log.info("resuming %s: %d of %d problems already done", out, len(problems) - len(self.todo), len(problems))
            failed = sum(record_status(r) != "ok" for r in self.done.values())
            if failed:
                log.info("%s: %d recorded failures count as done (--retry-failed redoes them)", out, failed)
            other = [i for i, r in self.done.items() if strategy_of(r) != strategy]
            if other:
                log.warning(
                    "%s: %d records (e.g. %r) were not written by %s; they are kept as they are",
                    out,
                    len(other),
                    other[0],
                    strategy,
                )
        self.bar = tqdm(
            total=len(problems),
            initial=len(problems) - len(self.todo),
            desc=strategy,
            unit="problem",
            disable=not progress,
        )

    def finish(self, record: dict[str, Any]) -> None:
        self.done[record["id"]] = record
        if self.writer:
            self.writer.write(record)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
        if self.writer:
            self.writer.close()

    def records(self, problems: Sequence[Problem]) -> list[dict[str, Any]]:
        """Records in input order (problems missing from the run left out)."""
        return [self.done[p.id] for p in problems if p.id in self.done]


def chunks(items: Sequence[Problem], size: int) -> Iterator[Sequence[Problem]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def run_plan(
    plan: Plan,
    problems: Sequence[Problem],
    *,
    out: str | Path | None = None,
    progress: bool = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    on_progress: Callable[[RoundProgress], None] | None = None,
    screen: Callable[[Sequence[Problem]], list[ProblemFailedError]] | None = None,
    strict: bool = False,
    retry_failed: bool = False,
    abstain_below: float | None = None,
) -> list[dict[str, Any]]:
    """Drive `plan` over the problems not yet in `out`, chunk by chunk; records in input order.

    `on_record` sees each record as its problem finishes (after it is written); `on_progress` each round's word
    on the problems still open (strategies that work in rounds). A problem that fails (`screen` finds its prompt
    too long before any generation, or the plan raises `ProblemFailedError` for it) is recorded with its status
    and the rest of its chunk goes on; `strict` makes the first failure end the run instead (a ValueError).
    `retry_failed` solves again the problems `out` holds as failed; with `abstain_below` every vote whose p_correct
    is below it is marked abstained."""
    run = Run(problems, out, progress, plan.name, retry_failed)

    def finish(record: dict[str, Any]) -> None:
        record.setdefault("status", "ok")
        record["run"] = {**plan.run_block, "strategy": plan.name}
        if abstain_below is not None:
            mark_abstentions(record, abstain_below)
        run.finish(record)
        if on_record is not None:
            on_record(record)

    def fail(failure: ProblemFailedError, by_id: dict[str, Problem]) -> None:
        if strict:
            raise ValueError(str(failure)) from failure
        log.warning("%s", failure)
        finish(failure_record(by_id[failure.problem_id], failure.status, failure.detail))

    try:
        for chunk in chunks(run.todo, max(1, ROWS_PER_CHUNK // plan.rows_per_problem)):
            by_id = {p.id: p for p in chunk}
            for failure in screen(chunk) if screen is not None else []:
                fail(failure, by_id)
            pending = [p for p in chunk if p.id not in run.done]
            while pending:
                try:
                    for record in plan.solve(pending):
                        if isinstance(record, RoundProgress):
                            if on_progress is not None:
                                on_progress(record)
                            continue
                        finish(record)
                    pending = []
                except ProblemFailedError as failure:  # the others of the chunk are solved again without it
                    fail(failure, by_id)
                    pending = [p for p in pending if p.id not in run.done]
    finally:
        run.close()
    return run.records(problems)
