"""The one run loop: resume, chunking, results writing, failures and progress, for every strategy.

A strategy is a *plan* (`tts_engine.strategies.plan.Plan`) that the loop drives: given a chunk of problems it yields
one typed record per problem as each finishes. Plans are registered by name
(`tts_engine.strategies.register_strategy`); `Engine.solve(strategy=...)` builds the plan and hands it to
`run_plan` with the run block, which the loop writes into every record once, with abstention, before the record
leaves as its results line (JSON: written, handed to `on_record`, returned).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..config import RunConfig
from ..inputs.problems import Problem
from ..pipeline.failures import ProblemFailedError
from ..pipeline.records import ProblemRecord, failure_record
from ..strategies.plan import Plan, RoundProgress
from .results import ResultsWriter, record_status, strategy_of

log = logging.getLogger(__name__)

ROWS_PER_CHUNK = 512
"""Samples in flight per chunk: results are written as each problem of a chunk finishes (the backend batches
inside a chunk)."""


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
        """Keep, write and count one results line."""
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


def results_line(record: ProblemRecord, run_block: dict[str, Any], settings: RunConfig | None = None) -> dict[str, Any]:
    """A record as it leaves for the results file: the one place it gets its run block and abstention."""
    record.run = run_block
    if settings is not None and settings.abstain_below is not None:
        record.mark_abstentions(settings.abstain_below)
    return record.to_json()


def chunks(items: Sequence[Problem], size: int) -> Iterator[Sequence[Problem]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def run_plan(
    plan: Plan,
    problems: Sequence[Problem],
    *,
    run_block: dict[str, Any],
    out: str | Path | None = None,
    progress: bool = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    on_progress: Callable[[RoundProgress], None] | None = None,
    screen: Callable[[Sequence[Problem]], list[ProblemFailedError]] | None = None,
    strict: bool = False,
    retry_failed: bool = False,
    settings: RunConfig | None = None,
) -> list[dict[str, Any]]:
    """Drive `plan` over the problems not yet in `out`, chunk by chunk; results lines in input order. `run_block` is
    every record's "run" block (it names the strategy).

    `on_record` sees each record as its problem finishes (after it is written); `on_progress` each round's word on
    the problems still open (strategies that work in rounds). A problem that fails (`screen` finds its prompt too
    long before any generation, or the plan raises `ProblemFailedError` for it) is recorded with its status and the
    rest of its chunk goes on; `strict` makes the first failure end the run instead (a ValueError). `retry_failed`
    solves again the problems `out` holds as failed; `settings` (the run's) say when a vote abstains."""
    run = Run(problems, out, progress, run_block["strategy"], retry_failed)

    def finish(record: ProblemRecord) -> None:
        line = results_line(record, run_block, settings)
        run.finish(line)
        if on_record is not None:
            on_record(line)

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
