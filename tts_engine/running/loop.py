"""The one run loop: resume, chunking, results writing, failures and progress, for every strategy.

A strategy is a *plan* (`tts_engine.strategies.plan.Plan`) that the loop drives: given a chunk of problems it yields
one typed record per problem as each finishes. Plans are registered by name
(`tts_engine.strategies.register_strategy`); `Engine.solve(strategy=...)` builds the plan and hands it to
`run_plan` with the run block, which the loop writes into every record once, with abstention, before the record
leaves as its results line (JSON: written, handed to `on_record`, returned).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..config import RunConfig
from ..inputs.problems import Problem
from ..pipeline.failures import ProblemFailedError
from ..pipeline.records import ProblemRecord, failure_record, strategy_of
from ..strategies.plan import Plan, RoundProgress, TokenBudget
from .results import ResultsWriter, record_status

log = logging.getLogger(__name__)

ROWS_PER_CHUNK = 512
"""Samples in flight per chunk: results are written as each problem of a chunk finishes (the backend batches
inside a chunk)."""


class Run:
    """Resume from, write to and order the records of one run; draws its progress bar. A results file holds one
    experiment: resuming it with other settings is refused (`same_experiment`)."""

    def __init__(
        self,
        problems: Sequence[Problem],
        out: str | Path | None,
        progress: bool,
        run_block: dict[str, Any],
        retry_failed: bool = False,
        overwrite: bool = False,
    ):
        from tqdm.auto import tqdm

        if overwrite and out is not None and Path(out).exists():
            Path(out).unlink()
        self.out = out
        self.writer = ResultsWriter(out, drop_failed=retry_failed) if out is not None else None
        self.done: dict[str, dict[str, Any]] = dict(self.writer.existing) if self.writer else {}
        self.todo = [p for p in problems if p.id not in self.done]
        if self.done:
            self.same_experiment(run_block)
            log.info("resuming %s: %d of %d problems already done", out, len(problems) - len(self.todo), len(problems))
            failed = sum(record_status(r) != "ok" for r in self.done.values())
            if failed:
                log.info("%s: %d recorded failures count as done (--retry-failed redoes them)", out, failed)
        self.bar = tqdm(
            total=len(problems),
            initial=len(problems) - len(self.todo),
            desc=run_block["strategy"],
            unit="problem",
            disable=not progress,
        )

    def same_experiment(self, run_block: dict[str, Any]) -> None:
        """A ValueError naming the settings that differ when the file's records were written with other settings
        than `run_block` (sampling, model, backend, verifier, grading, strategy and its settings)."""
        for record in self.done.values():
            differ = settings_that_differ(record.get("run") or {"strategy": strategy_of(record)}, run_block)
            if differ:
                raise ValueError(
                    f"{self.out} holds a run with other settings ({', '.join(differ)}): a results file is one "
                    "experiment; write to another --out, or pass --overwrite to replace it"
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


NOT_THE_EXPERIMENT = ("calibration", "abstain_below", "headline_kind")
"""Run-block entries a resumed run may change: how answers are calibrated and marked, not how they were made."""


def settings_that_differ(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """ "name old -> new" for every run-block setting both blocks hold with different values (a block of an earlier
    version may lack a setting: it is not compared)."""
    keys = [k for k in now if k in before and k not in NOT_THE_EXPERIMENT]
    return [f"{k} {_shown(before[k])} -> {_shown(now[k])}" for k in keys if before[k] != now[k]]


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def results_line(record: ProblemRecord, run_block: dict[str, Any], settings: RunConfig | None = None) -> dict[str, Any]:
    """A record as it leaves for the results file: the one place it gets its run block and abstention."""
    record.run = run_block
    if settings is not None and settings.abstain_below is not None:
        record.mark_abstentions(settings.abstain_below)
    return record.to_json()


def spent_tokens(record: dict[str, Any]) -> int:
    """What a results line's problem cost against a run's budget: generated and verifier tokens."""
    compute = record.get("compute") or {}
    return compute.get("generated_tokens", 0) + compute.get("verifier_tokens", 0)


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
    overwrite: bool = False,
    settings: RunConfig | None = None,
    budget: TokenBudget | None = None,
) -> list[dict[str, Any]]:
    """Drive `plan` over the problems not yet in `out`, chunk by chunk; results lines in input order. `run_block` is
    every record's "run" block (it names the strategy).

    `on_record` sees each record as its problem finishes (after it is written); `on_progress` each round's word on
    the problems still open (strategies that work in rounds). A problem that fails (`screen` finds its prompt too
    long before any generation, or the plan raises `ProblemFailedError` for it) is recorded with its status and the
    rest of its chunk goes on; `strict` makes the first failure end the run instead (a ValueError). `retry_failed`
    solves again the problems `out` holds as failed; a file written with other settings is refused, unless
    `overwrite` replaces it; `settings` (the run's) say when a vote abstains; a `budget` starts with what the file
    already spent."""
    run = Run(problems, out, progress, run_block, retry_failed, overwrite)
    if budget is not None:
        budget.start(len(run.todo), sum(spent_tokens(r) for r in run.done.values()))

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
