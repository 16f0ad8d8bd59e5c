"""A `tts serve` process on loopback for tests, benchmarks and the fuzz script: a free port on 127.0.0.1, wait
until /health answers, stop it on exit (one definition of how they all start a real server)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from typing import Sequence

from ..interpreter import PYTHON

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on loopback."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class ServerProcess:
    """`with ServerProcess(["--n", "4"]) as server: server.url` runs `tts serve ARGS` on 127.0.0.1."""

    def __init__(self, args: Sequence[str] = (), *, startup_timeout: float = 180.0, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.args, self.startup_timeout = list(args), startup_timeout
        self.env = {**os.environ, "TTS_API_KEY": "", **(env or {})}
        self.process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile(mode="w+")

    def __enter__(self) -> "ServerProcess":
        command = [*PYTHON, "-c", "from tts_engine.cli import main; main()", "serve"]
        command += ["--host", HOST, "--port", str(self.port), *self.args]
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + self.startup_timeout
        while not self._healthy():
            if self.process.poll() is not None:
                raise RuntimeError(f"tts serve exited with {self.process.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"tts serve did not answer /health within {self.startup_timeout} s:\n{self.output()}"
                )
            time.sleep(0.2)
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def health(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/health", timeout=10) as response:
            return json.loads(response.read())

    def rss_bytes(self) -> int:
        """The server's resident memory (Linux /proc), for the fuzz script's memory check."""
        with open(f"/proc/{self.process.pid}/status") as status:
            line = next(line for line in status if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read()[-5000:]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
