"""A small pool of check workers with a deadline per request.

Why processes: math-verify's timeouts use signal.alarm, which raises only in the main thread and can
be swallowed by a bare `except` deep in sympy. Here each request goes to a worker process; when its
deadline passes the worker is killed (SIGKILL cannot be caught) and replaced, the request answers
"timeout", and the caller goes on. This works from any thread.

Workers are forked by a small server process that has already imported sympy and math-verify
(zygote.py), so a replacement costs milliseconds and nothing of the caller (CUDA, open models, its
__main__) is inherited.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from .zygote import ZygoteClient

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
"""Seconds one check may take (math-verify's own default per parse and per verify)."""

DEFAULT_MEMORY_LIMIT_MB = 2048
"""Address-space cap of each worker; a check that needs more fails as "error" (unparsable)."""

STARTUP_TIMEOUT = 120.0
"""Seconds a new worker may take to import sympy and math-verify (first start on a loaded machine)."""

OK, TIMEOUT, ERROR = "ok", "timeout", "error"


@dataclass
class PoolStats:
    """What the pool has seen since it was made."""

    requests: int = 0
    """Requests answered (any status)."""
    timeouts: int = 0
    """Requests that passed their deadline (the worker was killed and replaced)."""
    errors: int = 0
    """Requests that raised in the worker or whose worker died."""
    restarts: int = 0
    """Workers started again after a timeout or a crash."""
    peak_worker_rss_mb: float = 0.0
    """Largest peak RSS reported by a worker, MiB (workers killed on timeout included)."""
    max_request_seconds: float = 0.0
    """Longest wall time of one request, from sending it to its reply or to the kill after its deadline."""


_zygote: ZygoteClient | None = None
_zygote_lock = threading.Lock()


def _zygote_client() -> ZygoteClient:
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote.owner_pid != os.getpid():
            _zygote = ZygoteClient()
        return _zygote


def _function_spec(fn: Callable | None) -> str | None:
    if fn is None:
        return None
    spec = f"{fn.__module__}:{fn.__qualname__}"
    if "<" in spec or "." in fn.__qualname__:
        raise ValueError(f"check_fn must be a module-level function, got {spec}")
    return spec


class Worker:
    """One worker process and its pipe; used by one thread at a time (see CheckPool.acquire)."""

    def __init__(self, pool: "CheckPool"):
        self._pool = pool
        self._pid: int | None = None
        self._conn = None
        self._started_before = False

    def call(self, request: tuple, timeout: float, count: bool = True) -> tuple[str, object]:
        """Send one request; (status, value) with status "ok", "timeout" or "error". Never raises."""
        if not self.alive:
            started = self._start()
            if started is not None:
                return ERROR, started
        start = time.monotonic()
        try:
            self._conn.send(request)
            if not self._conn.poll(timeout):
                self._record_peak_rss()
                self._kill()
                self._pool._count(TIMEOUT, count, time.monotonic() - start)
                return TIMEOUT, None
            status, value = self._conn.recv()
        except (EOFError, OSError) as exc:  # the worker died (e.g. a C-level abort)
            self._kill()
            self._pool._count(ERROR, count, time.monotonic() - start)
            return ERROR, f"worker died: {type(exc).__name__}"
        self._pool._count(OK if status == OK else ERROR, count, time.monotonic() - start)
        return status, value

    def peak_rss_mb(self) -> float:
        if not self.alive:
            return 0.0
        status, value = self.call(("stats",), timeout=10.0, count=False)
        return float(value) if status == OK else 0.0

    def _start(self) -> str | None:
        limit = self._pool.memory_limit_mb * 1024 * 1024 if self._pool.memory_limit_mb else None
        try:
            self._pid, self._conn = _zygote_client().spawn(limit, self._pool.check_spec, STARTUP_TIMEOUT)
            if not self._conn.poll(STARTUP_TIMEOUT):
                raise OSError(f"no ready message within {STARTUP_TIMEOUT} s")
            self._conn.recv()  # ("ready", pid)
        except (OSError, EOFError, ValueError) as exc:
            self._kill()
            logger.error("a check worker failed to start: %s", exc)
            return f"worker failed to start: {exc}"
        self._pool._started(restart=self._started_before)
        self._started_before = True
        return None

    @property
    def alive(self) -> bool:
        return self._conn is not None

    def _record_peak_rss(self) -> None:
        """Before killing a worker: its peak RSS from /proc (it cannot answer a stats request)."""
        try:
            with open(f"/proc/{self._pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self._pool._note_rss(int(line.split()[1]) / 1024)
        except (OSError, ValueError, IndexError):
            pass

    def _kill(self) -> None:
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)  # the fork server reaps it
            except ProcessLookupError:
                pass
        if self._conn is not None:
            self._conn.close()
        self._pid = self._conn = None

    def close(self) -> None:
        if self.alive:
            self._pool._note_rss(self.peak_rss_mb())
        self._kill()


class CheckPool:
    """Worker processes that run answer checks with a deadline each.

    pool.check(gold, pred, symmetric=False, timeout=5.0) -> (status, verdict) from any thread;
    `with pool.acquire() as worker:` keeps one worker (and its parse cache) for a run of requests.
    """

    def __init__(
        self,
        processes: int = 2,
        *,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        check_fn: Callable | None = None,
    ):
        if not isinstance(processes, int) or processes < 1:
            raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
        if memory_limit_mb is not None and memory_limit_mb < 256:
            raise ValueError(f"memory_limit_mb must be >= 256 or None, got {memory_limit_mb}")
        self.processes = processes
        self.memory_limit_mb = memory_limit_mb
        self.check_spec = _function_spec(check_fn)
        """"module:function" that replaces mathcheck.check in the workers (for tests), or None."""
        self.stats = PoolStats()
        self._lock = threading.Lock()
        self._idle: queue.LifoQueue[Worker] = queue.LifoQueue()
        self._workers: list[Worker] = []
        self._closed = False
        self._owner_pid = os.getpid()

    @contextmanager
    def acquire(self) -> Iterator[Worker]:
        """Hold one worker for the duration of the block (waits while all are busy)."""
        if self._closed:
            raise RuntimeError("this CheckPool is closed; make a new one")
        worker = self._take()
        try:
            yield worker
        finally:
            self._idle.put(worker)

    def check(self, gold: str, pred: str, symmetric: bool = False, timeout: float = DEFAULT_TIMEOUT):
        """One check on any free worker: (status, verdict), verdict True/False/None (unparsable)."""
        with self.acquire() as worker:
            return worker.call(("check", gold, pred, symmetric), timeout)

    def warm(self) -> None:
        """Start every worker and run one small check on each (first parses load the LaTeX grammar):
        call before timing anything."""
        held = [self._take() for _ in range(self.processes)]
        try:
            for worker in held:
                worker.call(("check", "\\frac{1}{2}", "x^2+1", True), STARTUP_TIMEOUT, count=False)
        finally:
            for worker in held:
                self._idle.put(worker)

    def peak_worker_rss_mb(self) -> float:
        """Largest peak RSS of any worker so far (idle live workers are asked now), MiB."""
        idle = []
        while True:
            try:
                idle.append(self._idle.get_nowait())
            except queue.Empty:
                break
        for worker in idle:
            self._note_rss(worker.peak_rss_mb())
            self._idle.put(worker)
        return self.stats.peak_worker_rss_mb

    def close(self) -> None:
        """Stop all workers. The pool cannot be used afterwards."""
        self._closed = True
        for worker in self._workers:
            worker.close()
        self._workers.clear()

    def __enter__(self) -> "CheckPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _take(self) -> Worker:
        with self._lock:
            if self._idle.empty() and len(self._workers) < self.processes:
                worker = Worker(self)
                self._workers.append(worker)
                return worker
        return self._idle.get()

    def _started(self, restart: bool) -> None:
        if restart:
            with self._lock:
                self.stats.restarts += 1

    def _count(self, status: str, count: bool, seconds: float) -> None:
        if not count:
            return
        with self._lock:
            self.stats.requests += 1
            self.stats.max_request_seconds = max(self.stats.max_request_seconds, seconds)
            if status == TIMEOUT:
                self.stats.timeouts += 1
                logger.warning("an answer check passed its deadline; its worker was replaced")
            elif status == ERROR:
                self.stats.errors += 1

    def _note_rss(self, mb: float) -> None:
        with self._lock:
            self.stats.peak_worker_rss_mb = max(self.stats.peak_worker_rss_mb, mb)


_default_pool: CheckPool | None = None
_default_lock = threading.Lock()


def default_pool() -> CheckPool:
    """The process-wide pool used when no pool is passed (min(2, CPUs) workers, started lazily)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._owner_pid != os.getpid():
            _default_pool = CheckPool(processes=max(1, min(2, os.cpu_count() or 1)))
        return _default_pool


def set_default_pool(pool: CheckPool) -> None:
    """Use `pool` wherever no pool is passed (e.g. a larger one for a big evaluation)."""
    global _default_pool
    with _default_lock:
        pool._owner_pid = os.getpid()
        _default_pool = pool


@atexit.register
def _close_default_pool() -> None:
    if _default_pool is not None and _default_pool._owner_pid == os.getpid():
        _default_pool.close()
