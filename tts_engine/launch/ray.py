"""`tts launch --ray`: one problem set over a Ray cluster, in the shape of verl and Ray Data.

Actors hold the model and pull work: each builds its Engine once and solves the chunks of problems the driver
hands it whenever it is idle, so a fast worker takes more chunks than a slow one. The driver holds the state: what
is done (the run loop's `Run`: the results file, its resume, the progress bar) and what is in flight; it is the one
writer of the one results file, writing each record as its actor yields it. A worker that dies (its process
killed, its node lost) loses nothing: the problems of its chunk that it had not yet returned go back to the queue,
each alone, and a replacement actor takes its place; a problem whose worker died twice while it was in flight is
recorded as failed. Records are equal to a single `tts solve` of the same options (texts, answers, votes; scores
to float rounding), since a sample's seed depends on its problem's prompt and index, not on its batch or worker.

Ray is an optional dependency (`pip install tts-engine[ray]`), imported only when a Ray launch runs.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import random
import socket
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

from ..config import Job
from ..inputs.problems import Problem
from ..running.loop import spent_tokens
from ..strategies.plan import TokenBudget

log = logging.getLogger(__name__)

MAX_WORKER_DEATHS = 2
"""A problem in flight when its worker died this many times is recorded as failed (status "failed"): it is taken
to be what kills workers (out of memory, a crash in native code). After one death a problem is only ever retried
alone, so its second death is its own, not a neighbour's."""

CHUNKS_PER_WORKER = 2
"""The default chunk size gives every worker about this many chunks (never more samples than the run loop's own
chunk holds): a fast worker takes more, a lost one costs little, and a chunk keeps the backend's batches full. On a
CPU a chunk pays a per-decode-step cost that does not shrink with its rows: the bundled set took 3x longer in
chunks of 3 problems than of 32, and a 32-problem adaptive-n set 57 s in 8 chunks against 39 s in 2."""

SHUFFLE_SEED = 0
"""Chunks are cut from the problems in one fixed shuffled order, so that a set sorted by difficulty does not end
on one chunk of only the hardest problems. Answers do not depend on it (seeds follow each problem)."""


class LaunchError(ValueError):
    """A Ray launch that cannot start or go on (no cluster at the address, an actor that cannot build its
    engine, an error raised while solving); shown as a one-line error. Written records are kept: rerun resumes."""


# --- what every actor solves with --------------------------------------------------------------------------
@dataclass
class Launch:
    """A parsed `tts launch --ray` command line: the job, the problems, and the driver's own settings."""

    job: Job
    """The pass-through `tts solve` options, parsed once at the driver (a bad option fails there, before any
    actor starts) and shipped to every actor."""
    problems: list[Problem]
    entry: Any
    """The strategy's registry entry (its summary lines)."""
    retry_failed: bool = False
    every_row: bool = False
    quiet: bool = False
    overwrite: bool = False


# --- the actor ---------------------------------------------------------------------------------------------
class SolveWorker:
    """One actor: builds its Engine once (the model loads once per actor) and solves the chunks it is handed,
    yielding each record as its problem finishes. Wrapped by `ray.remote` at launch time."""

    def __init__(self, job: Job, threads: int | None = None):
        drop_checkout_from_path()
        if threads:
            import torch

            torch.set_num_threads(threads)
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        from ..engine import Engine

        self.job = job
        self.engine = Engine(config=job.engine)

    def close(self) -> None:
        """Release the engine (a vLLM engine stops cleanly) before the driver ends this actor."""
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()

    def describe(self) -> dict[str, Any]:
        """Who this worker is: its process id and host (the driver names workers by them)."""
        return {"pid": os.getpid(), "host": socket.gethostname()}

    def solve(self, problems: list[Problem], budget_tokens: int | None = None) -> Iterator[dict[str, Any]]:
        """Records of `problems`, each yielded as it finishes (a Ray streaming generator: the driver writes a
        record before the chunk ends, so a worker that dies mid-chunk loses only what it had not yielded), within
        the chunk's share of the run's token budget where there is one."""
        run = replace(self.job.run, budget_tokens=budget_tokens) if budget_tokens is not None else self.job.run
        records: queue.Queue = queue.Queue()
        end = object()

        def work() -> None:
            try:
                self.job.solve(self.engine, problems, run=run, on_record=records.put, out=None, progress=False)
                records.put(end)
            except BaseException as err:  # noqa: BLE001 - re-raised in the actor's own thread below
                records.put(err)

        threading.Thread(target=work, name="solve", daemon=True).start()
        while (item := records.get()) is not end:
            if isinstance(item, BaseException):
                raise item
            yield item


def drop_checkout_from_path() -> None:
    """Ray puts the driver's working folder on every worker's import path; launched from a checkout of this
    repository, its card folder `kernels/` would shadow the `kernels` distribution that transformers probes for
    (the card folders install as tts_engine.kernels, ...). The package itself is imported as installed."""
    checkout = [p for p in sys.path if os.path.isfile(os.path.join(p or ".", "kernels", "__init__.py"))]
    checkout = [p for p in checkout if os.path.isdir(os.path.join(p or ".", "tts_engine"))]
    sys.path[:] = [p for p in sys.path if p not in checkout]
    module = sys.modules.get("kernels")
    if module is not None and any(
        str(getattr(module, "__file__", "")).startswith(os.path.abspath(p or ".")) for p in checkout
    ):
        del sys.modules["kernels"]


# --- chunks ------------------------------------------------------------------------------------------------
def chunk_size(todo: int, workers: int, most: int) -> int:
    """Problems per chunk: about CHUNKS_PER_WORKER chunks per worker, at most `most` (the run loop's chunk)."""
    return max(1, min(most, math.ceil(todo / (CHUNKS_PER_WORKER * max(1, workers)))))


def make_chunks(problems: Sequence[Problem], size: int) -> list[list[Problem]]:
    """Chunks of `size` problems cut from one fixed shuffle of `problems` (see SHUFFLE_SEED)."""
    order = list(problems)
    random.Random(SHUFFLE_SEED).shuffle(order)
    return [order[i : i + size] for i in range(0, len(order), size)]


# --- the driver --------------------------------------------------------------------------------------------
@dataclass
class WorkerStats:
    """One actor's share of the run, for the summary."""

    name: str
    problems: int = 0
    busy_s: float = 0.0
    """Seconds it held a chunk (from hand-out to its last record)."""
    died: bool = False

    def describe(self) -> str:
        rate = self.problems / self.busy_s if self.busy_s > 0 else 0.0
        tail = " (died; replaced)" if self.died else ""
        return f"{self.name}: {self.problems} problems in {self.busy_s:.1f} s busy, {rate:.2f} problems/s{tail}"


@dataclass
class Slot:
    """One worker's place: its actor (replaced when it dies) and, while the actor starts, its `describe` ref."""

    index: int
    actor: Any = None
    starting: Any = None
    stats: WorkerStats | None = None
    failed_starts: int = 0
    """Actors of this slot that died before they were ready, in a row."""


@dataclass
class Task:
    """A chunk in flight on one slot: the problems it has not yet returned."""

    slot: Slot
    stream: Any
    """The actor's `solve` ObjectRefGenerator."""
    pending: dict[str, Problem]
    started: float = field(default_factory=time.perf_counter)
    budget: int | None = None
    """The chunk's share of the run's token budget (reserved when it was handed out)."""
    spent: int = 0
    """What its returned records spent against the budget."""


class Driver:
    """Hands chunks to idle actors, writes every record it receives (once), and retries the chunks of dead ones."""

    def __init__(self, ray, make_actor: Callable[[], Any], job: Job, run, chunks, workers: int, echo):
        self.ray, self.make_actor, self.job, self.run, self.echo = ray, make_actor, job, run, echo
        self.fresh = list(reversed(chunks))  # popped from the end: first chunk first
        self.retry: list[list[Problem]] = []
        self.deaths: dict[str, int] = {}
        self.tasks: list[Task] = []
        self.run_block: dict[str, Any] = {"strategy": job.run.strategy}
        self.budget = TokenBudget(job.run.budget_tokens) if job.run.budget_tokens is not None else None
        if self.budget is not None:  # the driver allocates: each chunk its share of what is left
            self.budget.start(sum(len(c) for c in chunks), sum(spent_tokens(r) for r in run.done.values()))
        self.slots = [Slot(i) for i in range(workers)]
        self.retired: list[WorkerStats] = []
        for slot in self.slots:
            self._start(slot)

    # --- actors ---
    def _start(self, slot: Slot) -> None:
        slot.actor = self.make_actor()
        slot.starting = slot.actor.describe.remote()

    def _started(self, slot: Slot) -> None:
        try:
            info = self.ray.get(slot.starting)
        except self.ray.exceptions.RayActorError as err:
            if err.actor_init_failed:
                raise LaunchError(f"worker {slot.index} could not build its engine: {error_line(err)}") from None
            slot.failed_starts += 1
            if slot.failed_starts < MAX_WORKER_DEATHS:
                self.echo(f"worker {slot.index} died while starting ({error_line(err)}); starting another")
                self._replace(slot)
                return
            self.echo(f"worker {slot.index} died {slot.failed_starts} times while starting; going on without it")
            self.slots.remove(slot)
            if not self.slots:
                raise LaunchError(f"no worker could start: {error_line(err)}")
            return
        slot.starting, slot.failed_starts = None, 0
        slot.stats = WorkerStats(f"worker {slot.index} (pid {info['pid']} on {info['host']})")
        self.echo(f"{slot.stats.name} ready")

    def _replace(self, slot: Slot) -> None:
        if slot.stats is not None:
            slot.stats.died = True
            self.retired.append(slot.stats)
            slot.stats = None
        self.ray.kill(slot.actor, no_restart=True)
        self._start(slot)

    # --- work ---
    def _next_chunk(self) -> list[Problem] | None:
        while self.retry or self.fresh:
            chunk = self.retry.pop(0) if self.retry else self.fresh.pop()
            chunk = [p for p in chunk if p.id not in self.run.done]
            if chunk:
                return chunk
        return None

    def _assign(self) -> None:
        busy = {id(t.slot) for t in self.tasks}
        for slot in self.slots:
            if slot.starting is not None or id(slot) in busy:
                continue
            chunk = self._next_chunk()
            if chunk is None:
                return
            share = self.budget.share(len(chunk)) if self.budget is not None else None
            if self.budget is not None:
                self.budget.charge(share, len(chunk))  # reserved; trued up when the chunk ends
            stream = slot.actor.solve.remote(chunk, share)
            self.tasks.append(Task(slot, stream, {p.id: p for p in chunk}, budget=share))

    def loop(self) -> None:
        """Until every chunk is done: hand out chunks, then wait for the next record, chunk end or started actor."""
        while True:
            self._assign()
            waiting = [t.stream for t in self.tasks] + [s.starting for s in self.slots if s.starting is not None]
            if not self.tasks and not self.retry and not self.fresh:
                return
            ready, _ = self.ray.wait(waiting, num_returns=1)
            for ref in ready:
                task = next((t for t in self.tasks if t.stream is ref), None)
                if task is not None:
                    self._advance(task)
                else:
                    self._started(next(s for s in self.slots if s.starting is ref))

    def _advance(self, task: Task) -> None:
        ray = self.ray
        try:
            record = ray.get(next(task.stream))
        except StopIteration:
            self._close(task)
            return
        except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as err:
            self._lost(task, err)
            return
        except ray.exceptions.RayTaskError as err:
            raise LaunchError(f"{task.slot.stats.name} failed: {error_line(err)}") from None
        self._write(record, task)

    def _write(self, record: dict[str, Any], task: Task) -> None:
        task.pending.pop(record["id"], None)
        task.spent += spent_tokens(record)
        if record["id"] in self.run.done:  # a retried problem that its first worker also returned
            return
        if record.get("status", "ok") == "ok" and self.run_block.keys() == {"strategy"}:
            self.run.same_experiment(record["run"])  # the file's earlier records were made the same way
            self.run_block = record["run"]
        self.run.finish(record)
        task.slot.stats.problems += 1

    def _close(self, task: Task) -> None:
        task.slot.stats.busy_s += time.perf_counter() - task.started
        self.tasks.remove(task)
        if self.budget is not None and task.budget is not None:
            self.budget.spent += task.spent - task.budget  # what the chunk spent, in place of its reservation
        if task.pending:  # an actor that ends a chunk without a record of each problem is a bug, not a loss
            raise LaunchError(f"{task.slot.stats.name} returned no record for {sorted(task.pending)}")

    def _lost(self, task: Task, err: Exception) -> None:
        """The worker of `task` died: its unreturned problems go back to the queue alone (or fail, the second
        time), and a replacement actor takes its slot."""
        from ..pipeline.records import failure_record
        from ..running.loop import results_line

        slot = task.slot
        slot.stats.busy_s += time.perf_counter() - task.started
        self.tasks.remove(task)
        self.echo(
            f"{slot.stats.name} died with {len(task.pending)} problems in flight ({error_line(err)}); "
            "retrying them one by one on the other workers"
        )
        for problem in task.pending.values():
            self.deaths[problem.id] = self.deaths.get(problem.id, 0) + 1
            if self.deaths[problem.id] < MAX_WORKER_DEATHS:
                self.retry.append([problem])
                continue
            reason = f"its worker died {self.deaths[problem.id]} times while solving it (last: {error_line(err)})"
            self.run.finish(results_line(failure_record(problem, "failed", {"reason": reason}), self.run_block))
        self._replace(slot)

    def stats(self) -> list[WorkerStats]:
        return self.retired + [s.stats for s in self.slots if s.stats is not None]

    def shutdown(self, timeout: float = 30.0) -> None:
        """End every actor; the idle ones first release their engine (a bounded wait; a busy one, after an
        error or Ctrl-C, is ended at once)."""
        busy = {id(t.slot) for t in self.tasks}
        idle = [s.actor for s in self.slots if s.actor is not None and s.starting is None and id(s) not in busy]
        if idle:
            self.ray.wait([a.close.remote() for a in idle], num_returns=len(idle), timeout=timeout)
        for slot in self.slots:
            if slot.actor is not None:
                self.ray.kill(slot.actor, no_restart=True)


def error_line(err: BaseException) -> str:
    """The line of a Ray error that says what went wrong: the raised exception's `Type: message`, else the first."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    raised = [line for line in lines if ": " in line and line.split(": ", 1)[0].rsplit(".", 1)[-1].endswith("Error")]
    return (raised[-1] if raised else lines[0] if lines else type(err).__name__)[:300]


# --- connecting ------------------------------------------------------------------------------------------
def import_ray():
    """Ray, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise LaunchError("--ray needs Ray: pip install 'tts-engine[ray]'") from None
    return ray


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A HOST:PORT address must accept a connection: Ray itself retries a wrong one for minutes."""
    if address in ("auto", "local") or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise LaunchError(f"--ray must be auto, local or HOST:PORT of a Ray head node, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise LaunchError(
            f"no Ray cluster answers at {address} ({err.strerror or err}); start one with `ray start --head` "
            "or pass --ray local"
        ) from None


def connect(ray, address: str) -> bool:
    """Join the cluster at `address` (auto: the running one; local: start one here). True when this call
    connected (and so must disconnect); False when the process already was (a test's cluster)."""
    check_reachable(address)
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False} if address == "local" else {"address": address}
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise LaunchError(f"cannot join a Ray cluster at {address!r}: {error_line(err)}") from None
    return True


@dataclass
class RayConfig:
    """The launch's Ray settings (`tts launch --ray ADDRESS ...`)."""

    address: str
    """auto (a running cluster), local (start one on this machine) or HOST:PORT of a head node."""
    workers: int | None = None
    """Actors; default one per GPU group of the cluster (or per cpus_per_worker CPUs without GPUs)."""
    gpus_per_worker: float = 1
    """Each actor's GPU request (0 on a cluster without GPUs)."""
    cpus_per_worker: float = 1
    """Each actor's CPU request (and its torch threads on a CPU)."""
    chunk_size: int | None = None
    """Problems per chunk; default: see `chunk_size`."""

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.gpus_per_worker < 0 or self.cpus_per_worker <= 0:
            raise ValueError(
                f"gpus_per_worker must be >= 0 and cpus_per_worker > 0, got {self.gpus_per_worker} and "
                f"{self.cpus_per_worker}"
            )
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size}")

    def actor_resources(self, cluster: dict[str, float]) -> tuple[int, dict[str, float]]:
        """(number of actors, each one's resource request) on a cluster with these resources."""
        gpus = self.gpus_per_worker if cluster.get("GPU", 0) > 0 else 0
        request = {"num_cpus": self.cpus_per_worker, "num_gpus": gpus}
        if self.workers is not None:
            workers = self.workers
        elif gpus:
            workers = int(cluster["GPU"] // gpus)
        else:
            workers = int(cluster.get("CPU", 1) // self.cpus_per_worker)
        if workers < 1:
            raise LaunchError(f"the cluster ({cluster_text(cluster)}) has no room for one worker of {request}")
        fits = min(
            cluster.get("CPU", 0) // self.cpus_per_worker, cluster.get("GPU", 0) // gpus if gpus else float("inf")
        )
        if workers > fits:
            log.warning("%d workers of %s do not all fit the cluster (%s) now", workers, request, cluster_text(cluster))
        return workers, request


def cluster_text(cluster: dict[str, float]) -> str:
    return ", ".join(f"{cluster.get(k, 0):g} {k}" for k in ("CPU", "GPU"))


# --- the command -------------------------------------------------------------------------------------------
def launch_on_ray(
    launch: Launch,
    out: str,
    settings: RayConfig,
    echo: Callable[[str], None] = print,
    show: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """`tts launch PROBLEMS --ray ADDRESS --out OUT [solve options]` (parsed: `tts_engine.cli.parallel.parse_launch`):
    solve on the cluster's actors, write OUT at
    the driver (resuming it); `show` gets the summary (as `tts solve` prints it), `echo` the notes on workers and
    each worker's throughput. Records in problem order."""
    from ..running.loop import Run

    ray = import_ray()
    connected = connect(ray, settings.address)
    try:
        run_block = {"strategy": launch.job.run.strategy}  # the rest comes with the actors' first record
        run = Run(launch.problems, out, not launch.quiet, run_block, launch.retry_failed, launch.overwrite)

        def note(line: str) -> None:  # beside the progress bar, not through it
            with run.bar.external_write_mode():
                echo(line)

        try:
            stats, wall = drive(ray, launch, run, settings, note)
        finally:
            run.close()
    finally:
        if connected:
            ray.shutdown()
    return report(launch, run, stats, wall, out, echo, show)


def drive(ray, launch: Launch, run, settings: RayConfig, note) -> tuple[list[WorkerStats], float]:
    """Start the actors, hand out every chunk, write every record; (each worker's stats, wall seconds)."""
    from ..running.loop import ROWS_PER_CHUNK

    cluster = ray.cluster_resources()
    workers, request = settings.actor_resources(cluster)
    most = max(1, ROWS_PER_CHUNK // launch.entry.samples(launch.job.params.n, launch.job.strategy_config))
    size = settings.chunk_size or chunk_size(len(run.todo), workers, most)
    chunks = make_chunks(run.todo, size)
    note(
        f"ray cluster: {cluster_text(cluster)}; {workers} workers of {request}; "
        f"{len(run.todo)} of {len(launch.problems)} problems to solve in {len(chunks)} chunks of <= {size}"
    )
    if not chunks:
        return [], 0.0
    threads = int(settings.cpus_per_worker) if not request["num_gpus"] else None
    actor_class = ray.remote(**request, max_restarts=0)(SolveWorker)
    started = time.perf_counter()
    driver = Driver(ray, lambda: actor_class.remote(launch.job, threads), launch.job, run, chunks, workers, note)
    try:
        driver.loop()
    finally:
        driver.shutdown()
    return driver.stats(), time.perf_counter() - started


def report(launch: Launch, run, stats: list[WorkerStats], wall: float, out: str, echo, show) -> list[dict[str, Any]]:
    """The summary of the whole file (as `tts solve` prints it), then each worker's throughput."""
    from ..running.summary import format_summary, summarize

    records = run.records(launch.problems)
    lines = launch.entry.summary_lines(records)
    show(format_summary(summarize(records), every_row=launch.every_row, lines=lines))
    for worker in stats:
        echo(worker.describe())
    solved = sum(w.problems for w in stats)
    rate = solved / wall if wall else 0.0
    echo(f"{solved} problems solved in {wall:.1f} s by {len(stats)} workers ({rate:.2f} problems/s); results: {out}")
    return records
