"""Gather concurrent requests into shared `Engine.solve` calls on one worker thread.

Engine.solve is synchronous and CPU/GPU-bound, so it runs on one thread fed by a bounded queue. The first
request of a batch waits a moment (`_gathering_window`) for others with the same settings (`SolveRequest.
batch_key`: strategy, token budget, sampling settings, strategy settings), up to `max_batch_rows`
samples; their problems go to the engine in one call, so N users cost about what one batch of their problems
costs. Requests with other settings wait, in order, for a later batch.

A full queue refuses with 429 (and a Retry-After from the recent batch times); a client that disconnects is
removed from the queue (its rows are freed before its batch starts; a batch already running finishes, and its
records are dropped). A batch that fails is rerun request by request, so a request that breaks the engine fails
alone. Results and progress reach the asyncio side through each job's `asyncio.Queue`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..config import RunConfig
from ..inputs.problems import Problem
from .schema import ApiError, SolveRequest

log = logging.getLogger(__name__)

_serials = itertools.count(1)

MAX_WAIT_S = 0.5
"""Longest gathering window, whatever the batch time (a request never waits longer than this for company)."""


@dataclass(eq=False)
class Job:
    """One request's problems on their way through the engine; events go to `events` on the server's loop."""

    request: SolveRequest
    loop: asyncio.AbstractEventLoop
    events: asyncio.Queue = field(default_factory=asyncio.Queue)
    serial: int = field(default_factory=lambda: next(_serials))
    records: dict[int, dict] = field(default_factory=dict)
    cancelled: bool = False
    finished: bool = False

    @property
    def problems(self) -> list[Problem]:
        """The request's problems, with ids unique across the server (a solve call keys records by id)."""
        return [Problem(id=f"{self.serial}.{k}", text=text) for k, text in enumerate(self.request.texts)]

    @property
    def rows(self) -> int:
        return len(self.request.texts) * self.request.rows_per_problem

    def emit(self, event: dict[str, Any]) -> None:
        """Hand an event to the request's coroutine (from any thread); a closed loop means nobody listens."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.events.put_nowait, event)

    def deliver(self, index: int, record: dict[str, Any]) -> None:
        if self.finished or index in self.records:
            return
        self.records[index] = record
        self.emit({"type": "record", "index": index, "record": record})
        if len(self.records) == len(self.request.texts):
            self.finished = True
            self.emit({"type": "done"})

    def fail(self, error: ApiError) -> None:
        if not self.finished:
            self.finished = True
            self.emit({"type": "error", "error": error})


def progress(job: Job, stage: str, **info: Any) -> None:
    """The one place progress reaches a request: `queued` (position), `generating` (batch size), `round` (after
    each round of a strategy that works in rounds: samples so far, the leading answer and its confidence),
    `record` (a problem finished)."""
    job.emit({"type": "progress", "stage": stage, **info})


class Batcher:
    """A bounded queue of jobs and the worker thread that solves them in batches."""

    def __init__(
        self,
        engine,
        *,
        max_queue: int = 256,
        max_batch_rows: int = 512,
        batch_wait_s: float = 0.01,
        batch_wait_share: float = 0.05,
    ):
        self.engine = engine
        self.max_queue, self.max_batch_rows = max_queue, max_batch_rows
        self.batch_wait_s, self.batch_wait_share = batch_wait_s, batch_wait_share
        self._cond = threading.Condition()
        self._pending: deque[Job] = deque()
        self._closed = False
        self._busy = False
        self._last_batch_jobs = 1
        self._batch_seconds = 1.0  # running mean of a batch's wall time (Retry-After)
        self.counts = {"batches": 0, "requests": 0, "problems": 0, "refused": 0, "cancelled": 0, "failed": 0}
        self._thread = threading.Thread(target=self._run, name="tts-serve-engine", daemon=True)

    # --- the asyncio side ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float | None = 30.0) -> None:
        """Refuse new jobs, fail the queued ones, let the running batch finish."""
        with self._cond:
            self._closed = True
            left, self._pending = list(self._pending), deque()
            self._cond.notify_all()
        for job in left:
            job.fail(ApiError("the server is shutting down", code=None, status=503, kind="server_error"))
        if self._thread.is_alive():
            self._thread.join(timeout)

    def submit(self, job: Job) -> None:
        """Queue a job, or raise the 429 (queue full) / 503 (closing) that refuses it."""
        with self._cond:
            if self._closed:
                raise ApiError("the server is shutting down", code=None, status=503, kind="server_error")
            if len(self._pending) >= self.max_queue:
                self.counts["refused"] += 1
                wait = self.retry_after()
                raise ApiError(
                    f"the server's queue is full ({self.max_queue} requests waiting); retry in {wait} s",
                    code="rate_limit_exceeded",
                    status=429,
                    kind="rate_limit_error",
                    headers={"Retry-After": str(wait)},
                )
            self._pending.append(job)
            position = len(self._pending)
            self._cond.notify_all()
        progress(job, "queued", position=position)

    def cancel(self, job: Job) -> None:
        """The client went away: free its place in the queue; a running batch drops its records."""
        job.cancelled = True
        with self._cond:
            with contextlib.suppress(ValueError):
                self._pending.remove(job)
                self.counts["cancelled"] += 1
            self._cond.notify_all()

    def retry_after(self) -> int:
        """Seconds until the queue has likely room again: the batches ahead of a new request, at the recent pace."""
        batches = 1 + sum(job.rows for job in self._pending) // max(1, self.max_batch_rows)
        return max(1, min(60, math.ceil(batches * self._batch_seconds)))

    def snapshot(self) -> dict[str, Any]:
        """Queue length, whether a batch is running and the counters (for /health)."""
        with self._cond:
            return {"queued": len(self._pending), "busy": self._busy, **self.counts}

    # --- the worker thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            started = time.perf_counter()
            try:
                self._solve(batch)
            finally:
                with self._cond:
                    self._busy = False
                    self._batch_seconds = 0.8 * self._batch_seconds + 0.2 * (time.perf_counter() - started)

    def _next_batch(self) -> list[Job] | None:
        """The oldest job and the queued jobs that can share its solve call, after the gathering window."""
        with self._cond:
            while True:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return None
                first = self._pending[0]
                deadline = time.monotonic() + self._gathering_window()
                while True:
                    batch = self._matching(first)
                    left = deadline - time.monotonic()
                    if sum(j.rows for j in batch) >= self.max_batch_rows or left <= 0 or first.cancelled:
                        break
                    self._cond.wait(left)
                if first.cancelled or self._closed:
                    continue
                for job in batch:
                    self._pending.remove(job)
                self._busy, self._last_batch_jobs = True, len(batch)
                return batch

    def _gathering_window(self) -> float:
        """How long a batch's first request waits for company. None for a lone client (the last batch held one
        request and one is queued): it would wait for nobody. Otherwise `batch_wait_s`, or `batch_wait_share`
        of the recent batch time if longer (at most MAX_WAIT_S): the clients of the batch that just finished
        send their next requests a moment later, and without the wait they would miss this batch and
        closed-loop clients would split into small batches for good."""
        if self._last_batch_jobs <= 1 and len(self._pending) <= 1:
            return 0.0
        return max(self.batch_wait_s, min(MAX_WAIT_S, self.batch_wait_share * self._batch_seconds))

    def _matching(self, first: Job) -> list[Job]:
        """`first` and, in queue order, the jobs with its batch key that fit in the row budget."""
        batch, rows, key = [first], first.rows, first.request.batch_key
        for job in self._pending:
            if job is first or job.request.batch_key != key:
                continue
            if rows + job.rows > self.max_batch_rows:
                break
            batch.append(job)
            rows += job.rows
        return batch

    def _solve(self, batch: list[Job]) -> None:
        """Solve a batch; if it fails, solve its requests one by one so only the one at fault fails."""
        batch = [job for job in batch if not job.cancelled]
        if not batch:
            return
        for job in batch:
            progress(
                job, "generating", batch_requests=len(batch), batch_problems=sum(len(j.request.texts) for j in batch)
            )
        try:
            self._solve_together(batch)
        except Exception as err:  # noqa: BLE001 - a client's request must never stop the worker
            if len(batch) > 1:
                log.warning("a batch of %d requests failed (%s); solving them one by one", len(batch), err)
                for job in batch:
                    if not job.finished:
                        self._solve([job])
                return
            with self._cond:
                self.counts["failed"] += 1
            batch[0].fail(engine_error(err))

    def _solve_together(self, batch: list[Job]) -> None:
        request = batch[0].request
        owners = {}
        problems = []
        for job in batch:
            for k, problem in enumerate(job.problems):
                owners[problem.id] = (job, k)
                problems.append(problem)

        def on_record(record: dict[str, Any]) -> None:
            job, k = owners[record["id"]]
            if not job.cancelled:
                job.deliver(k, record)

        def on_progress(update) -> None:  # a RoundProgress of a problem still open (strategies that work in rounds)
            job, k = owners[update.problem_id]
            if not job.cancelled:
                progress(
                    job,
                    "round",
                    problem=k,
                    samples_done=update.samples,
                    leader=update.leader,
                    p_correct=round(update.p_correct, 6),
                    confidence=round(update.confidence, 6),
                )

        budget = request.run.budget_tokens
        records = self.engine.solve(
            problems,
            request.params,
            run=RunConfig(request.run.strategy, budget_tokens=budget * len(batch) if budget is not None else None),
            config=request.config,
            progress=False,
            strict=True,  # a prompt that does not fit is the request's 400, never a record
            on_record=on_record,
            on_progress=on_progress,
        )
        for record in records:  # every record was reported as it finished; delivering again is a no-op
            on_record(record)
        with self._cond:
            self.counts["batches"] += 1
            self.counts["requests"] += len(batch)
            self.counts["problems"] += len(problems)


def engine_error(err: Exception) -> ApiError:
    """What a client is told when the engine fails on its request alone: a ValueError is the request's fault."""
    if isinstance(err, ValueError):
        return ApiError(f"the engine refused this request: {err}", code=None)
    log.exception("engine failure", exc_info=err)
    return ApiError(
        f"the engine failed on this request: {type(err).__name__}: {err}", code=None, status=500, kind="server_error"
    )
