"""A fork server for check workers: one clean process that has imported sympy and math-verify and
forks a ready worker on request (milliseconds, against ~1.5 s for a fresh interpreter).

Why not multiprocessing's forkserver or spawn: both re-import the caller's __main__ in every worker
(a script that imports torch would do so in each one, and `python - <<EOF` scripts cannot start
workers at all). This server is a plain Python subprocess; it inherits nothing from the caller.

Protocol: the caller listens on a Unix socket in a private directory and starts a Python process
running `main(SOCKET_PATH)`. For each worker it writes one JSON line to the
server's stdin ({"memory_limit": bytes or null, "check_fn": "module:name" or null}); the server forks,
answers the child's pid on stdout, and the child connects to the socket and serves requests
(worker.serve). The server exits when its stdin closes (the caller has exited).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from multiprocessing.connection import Connection

from ..interpreter import PYTHON


def _load(spec: str | None):
    if not spec:
        return None
    module_name, _, name = spec.partition(":")
    return getattr(importlib.import_module(module_name), name)


def _child(socket_path: str, request: dict) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints must not reach the server's reply pipe
    from .worker import serve

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    conn = Connection(sock.detach())
    serve(conn, request.get("memory_limit"), _load(request.get("check_fn")))


def main(socket_path: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished workers
    from . import worker  # noqa: F401  (imports sympy and math-verify once, before any fork)

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _child(socket_path, request)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()


class ZygoteClient:
    """The calling side: starts the server lazily and asks it for workers. Thread-safe."""

    def __init__(self):
        self.owner_pid = os.getpid()
        """The process that made this client (a forked child must make its own)."""
        self._lock = threading.Lock()
        self._server: subprocess.Popen | None = None
        self._listener: socket.socket | None = None
        self._directory: str | None = None

    def spawn(self, memory_limit: int | None, check_fn: str | None, timeout: float) -> tuple[int, Connection]:
        """A new worker: (pid, connection). Raises OSError when it cannot be started in `timeout` s."""
        with self._lock:
            if self._server is None or self._server.poll() is not None:
                self._start_server()
            request = json.dumps({"memory_limit": memory_limit, "check_fn": check_fn})
            self._server.stdin.write(request + "\n")
            self._server.stdin.flush()
            ready, _, _ = select.select([self._server.stdout], [], [], timeout)
            pid = int(self._server.stdout.readline() or -1) if ready else -1
            if pid <= 0:
                self._server.kill()
                raise OSError(f"the check-worker server did not fork a worker within {timeout} s")
            self._listener.settimeout(timeout)
            sock, _ = self._listener.accept()
            sock.setblocking(True)
            return pid, Connection(sock.detach())

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.stdin.close()
                try:
                    self._server.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._server.kill()
            if self._listener is not None:
                self._listener.close()
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
            self._server = self._listener = self._directory = None

    def _start_server(self) -> None:
        self.close_listener()
        self._directory = tempfile.mkdtemp(prefix="tts-answers-")  # mode 0700: only this user connects
        path = os.path.join(self._directory, "workers.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(8)
        self._server = subprocess.Popen(
            [*PYTHON, "-c", "import sys; from tts_engine.answers.zygote import main; main(sys.argv[1])", path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},  # the caller's modules
            start_new_session=True,  # Ctrl-C in a terminal reaches the caller only
        )

    def close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
        self._listener = self._directory = None
