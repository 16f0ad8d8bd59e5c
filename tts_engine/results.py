"""Results JSONL: one line per problem, appended as each finishes; a rerun resumes (docs/results.md)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator

import orjson

log = logging.getLogger(__name__)


def read_results(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records of a results file; a torn last line (a killed run) is skipped, a bad middle line raises."""
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield orjson.loads(line)
        except orjson.JSONDecodeError as err:
            if lineno - 1 == last:
                log.warning("%s:%d: incomplete last line (interrupted run?), ignored", path, lineno)
                return
            raise ValueError(f"{path}:{lineno}: invalid results line: {err}") from None


class ResultsWriter:
    """Appends records and flushes each line, so a killed run loses only the problems in flight."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.existing: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            self.existing = {str(r["id"]): r for r in read_results(self.path)}
            self._drop_torn_tail()
        self._file = self.path.open("ab")

    def _drop_torn_tail(self) -> None:
        """Cut a partial last line left by a killed run, so appended lines stay valid."""
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
