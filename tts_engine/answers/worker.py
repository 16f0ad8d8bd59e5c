"""The check worker: a process that parses and compares answers, one request at a time.

The calling process enforces each request's deadline and kills the worker when it passes (see
pool.py); nothing here needs to be interruptible. The worker's address space is capped so that a
pathological answer (10^{10^{10^{10}}}) fails with MemoryError here instead of exhausting the machine.
"""

from __future__ import annotations

import os
import resource
import signal
from typing import Callable

# Imported at module level so that a forkserver preloading this module forks workers that already
# have sympy and math-verify loaded (a replacement worker then starts in milliseconds).
from . import mathcheck


def limit_memory(limit_bytes: int | None) -> None:
    """Cap this process's address space (RLIMIT_AS); None leaves it as it is."""
    if not limit_bytes:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit_bytes = min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, hard))


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def serve(conn, memory_limit_bytes: int | None, check_fn: Callable | None = None) -> None:
    """Answer requests on `conn` until it closes.

    Requests: ("check", gold, pred, symmetric) -> verdict; ("parse", latex) -> parsed or not;
    ("stats",) -> peak RSS in MiB. Replies: ("ok", value) or ("error", message).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the calling process's to handle
    limit_memory(memory_limit_bytes)
    check = check_fn or mathcheck.check
    conn.send(("ready", os.getpid()))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", _handle(request, check))
        except MemoryError:
            reply = ("error", "MemoryError")
        except Exception as exc:  # a bad answer must not end the worker
            reply = ("error", f"{type(exc).__name__}: {str(exc)[:200]}")
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return


def _handle(request: tuple, check: Callable):
    op = request[0]
    if op == "check":
        return check(*request[1:])
    if op == "parse":
        return mathcheck.parse_answer(request[1]) is not None
    if op == "stats":
        return peak_rss_mb()
    raise ValueError(f"unknown request {op!r}")
