"""What a section records: figures beside their baselines, raw rows, errors; written after every change.

A section runs in its own process and may be killed at its time limit, so its results file is rewritten
(atomically) after each figure and each step: whatever finished before a crash or a kill is kept.
"""

from __future__ import annotations

import json
import math
import os
import time
import traceback
from contextlib import contextmanager
from pathlib import Path


def ratio(value: float | None, baseline: float | None) -> float | None:
    """value / baseline, or None when either is missing or the baseline is 0."""
    if value is None or baseline is None or baseline == 0:
        return None
    return value / baseline


class Recorder:
    """Results of one section, kept in a JSON file: {"info", "figures", "rows", "errors", "notes"}."""

    def __init__(self, path: str | Path, deadline: float):
        self.path = Path(path)
        self.deadline = deadline
        self.data: dict = {"info": {}, "figures": [], "rows": [], "errors": [], "notes": []}
        self.flush()

    def time_left(self) -> float:
        """Seconds until this section's limit."""
        return self.deadline - time.time()

    def info(self, **fields) -> None:
        """Facts that are not figures (versions, names, shapes)."""
        self.data["info"].update(fields)
        self.flush()

    def figure(
        self,
        name: str,
        value: float | None,
        unit: str,
        *,
        baseline: str | None = None,
        baseline_value: float | None = None,
        goal: str | None = None,
        met: bool | None = None,
        note: str | None = None,
    ) -> None:
        """One measured figure beside its baseline; `goal` and `met` when the issue sets a goal for it."""
        self.data["figures"].append(
            {
                "name": name,
                "value": _number(value),
                "unit": unit,
                "baseline": baseline,
                "baseline_value": _number(baseline_value),
                "ratio": _number(ratio(value, baseline_value)),
                "goal": goal,
                "met": met,
                "note": note,
            }
        )
        self.flush()

    def row(self, **fields) -> None:
        """One raw measurement (every number behind the figures)."""
        self.data["rows"].append({k: _number(v) if isinstance(v, float) else v for k, v in fields.items()})
        self.flush()

    def note(self, text: str) -> None:
        self.data["notes"].append(text)
        self.flush()

    def error(self, step: str, message: str) -> None:
        self.data["errors"].append({"step": step, "error": message})
        self.flush()

    @contextmanager
    def step(self, name: str):
        """Run one independent part of a section: an exception is recorded, and the section goes on."""
        try:
            yield
        except Exception as err:  # noqa: BLE001 - a failed step must not lose the others' figures
            tail = "".join(traceback.format_exception(err)[-3:])
            self.error(name, f"{type(err).__name__}: {err}\n{tail}"[-2000:])
            print(f"[{name}] failed: {type(err).__name__}: {err}", flush=True)

    def flush(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)


def _number(value):
    """JSON-safe float: None for missing, NaN or infinite values."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
