"""Results JSONL: one line per problem, appended as each finishes; a rerun resumes (docs/results.md)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator

import orjson

log = logging.getLogger(__name__)


def read_results(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records of a results file; a torn last line (a killed run) is skipped, a bad middle line raises."""
    for _, record in numbered_results(path):
        yield record


def numbered_results(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, record in today's words) of every line of a results file; a torn last line (a killed run) is
    skipped with a warning, a line that is not JSON anywhere else raises naming the file and line."""
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            if lineno - 1 == last:
                log.warning("%s:%d: incomplete last line (interrupted run?), ignored", path, lineno)
                return
            raise ValueError(
                f"{path}:{lineno}: invalid results line, not JSON ({err}): is this a results file of `tts solve`?"
            ) from None
        yield lineno, check_line(path, lineno, upgrade_record(record) if isinstance(record, dict) else record)


RESULTS_KEYS = ("id", "samples")
"""What every results line holds, solved or failed (a problems file's lines have no samples)."""


def check_line(path: Path, lineno: int, record: Any) -> dict[str, Any]:
    """`record` when it is a results line; a ValueError naming the file and line otherwise."""
    missing = [key for key in RESULTS_KEYS if not isinstance(record, dict) or key not in record]
    if missing:
        hint = " (a problems file? results files are what `tts solve --out` writes)"
        raise ValueError(f"{path}:{lineno}: not a results line: it has no {', '.join(missing)}{hint}")
    return record


def upgrade_record(record: dict[str, Any]) -> dict[str, Any]:
    """A record of an earlier version in today's words: its votes under "aggregations" (they were "strategies")."""
    if "strategies" in record and "aggregations" not in record:
        record["aggregations"] = record.pop("strategies")
    return record


STATUSES = ("ok", "prompt_too_long", "failed")
"""How a record ended: solved (its samples were generated and scored), its prompt or verification prompt did not
fit the model's context, or its rows failed even alone (out of memory, a server error after retries)."""


def record_status(record: dict[str, Any]) -> str:
    """A record's status; records written before statuses existed were all solved."""
    return record.get("status", "ok")


class ResultsWriter:
    """Appends records and flushes each line, so a killed run loses only the problems in flight."""

    def __init__(self, path: str | Path, drop_failed: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.existing: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            self.existing = {str(r["id"]): r for r in read_results(self.path)}
            self._drop_torn_tail()
            if drop_failed:
                self._drop_failures()
        self._file = self.path.open("ab")

    def _drop_failures(self) -> None:
        """Rewrite the file without its failed records, so they are solved again and never appear twice."""
        failed = {i for i, r in self.existing.items() if record_status(r) != "ok"}
        if not failed:
            return
        kept = [line for line in self.path.read_bytes().splitlines(keepends=True) if line.strip()]
        kept = [line for line in kept if str(orjson.loads(line)["id"]) not in failed]
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_bytes(b"".join(kept))
        tmp.replace(self.path)
        self.existing = {i: r for i, r in self.existing.items() if i not in failed}

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
