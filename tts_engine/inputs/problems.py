"""Problem sets: JSONL or JSON files with a problem text field and an optional reference answer."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
TEXT_FIELDS = ("problem", "question")
REFERENCE_FIELDS = ("answer", "ground_truth")
ID_FIELDS = ("id", "unique_id")
_GSM8K_ANSWER = re.compile(r"####\s*(.+?)\s*$", re.DOTALL)
_MAX_FIELD_CHARS = 64


@dataclass
class Problem:
    """One problem: its text, its reference answer if known, and short fields for breakdowns."""

    id: str
    """The `id` or `unique_id` field, else the 1-based line (or list) number."""
    text: str
    """Problem statement shown to the model."""
    reference: str | None = None
    """Reference final answer (GSM8K: the number after '####'), or None."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Other short scalar fields (level, subject, ...), kept for per-group breakdowns."""


def load_problems(path: str | Path, *, limit: int | None = None) -> list[Problem]:
    """Problems from a JSONL file (one object a line) or a JSON file (a list of objects)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"problem file {str(path)!r} does not exist")
    records = list(_read_records(path))
    if not records:
        raise ValueError(
            f"{path}: no problems in the file (it is empty): each line should be a JSON object with a 'problem' or 'question' field"
        )
    problems = [_to_problem(record, where, number) for number, (where, record) in enumerate(records, 1)]
    _make_ids_unique(problems, [where for where, _ in records])
    return problems[:limit] if limit is not None else problems


def _make_ids_unique(problems: list[Problem], locations: list[str]) -> None:
    """Results are keyed by id: a repeated id gets '#<number>' appended, with a warning."""
    seen: set[str] = set()
    for number, (problem, where) in enumerate(zip(problems, locations), 1):
        if problem.id in seen:
            new_id = f"{problem.id}#{number}"
            log.warning("%s: duplicate problem id %r, using %r", where, problem.id, new_id)
            problem.id = new_id
        seen.add(problem.id)


def _read_records(path: Path):
    """(location, object) pairs; a malformed line names its file and line number."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" or text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None
        if isinstance(data, dict) and isinstance(data.get("problems"), list):
            data = data["problems"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of problems, got {type(data).__name__}")
        for index, record in enumerate(data):
            yield f"{path}[{index}]", record
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
        yield f"{path}:{lineno}", record


def _to_problem(record: Any, where: str, number: int) -> Problem:
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    text = next((record[k] for k in TEXT_FIELDS if isinstance(record.get(k), str)), None)
    if text is None:
        raise ValueError(
            f"{where}: no problem text: expected a string field {' or '.join(map(repr, TEXT_FIELDS))}, "
            f"found fields {sorted(record)}"
        )
    raw_id = next((record[k] for k in ID_FIELDS if record.get(k) is not None), number)
    reference = next((record[k] for k in REFERENCE_FIELDS if record.get(k) is not None), None)
    used = set(TEXT_FIELDS) | set(REFERENCE_FIELDS) | set(ID_FIELDS)
    fields = {k: v for k, v in record.items() if k not in used and _is_short_scalar(v)}
    return Problem(id=str(raw_id), text=text, reference=_reference_text(reference), fields=fields)


def _reference_text(value: Any) -> str | None:
    """Reference answer as text: GSM8K's '#### N' tail, 27.0 -> '27'."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (int, list)):
        return str(value) if not isinstance(value, list) else ", ".join(map(str, value))
    text = str(value)
    match = _GSM8K_ANSWER.search(text)
    if match:
        return match.group(1).replace(",", "").strip()
    return text.strip()


def _is_short_scalar(value: Any) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, str) and len(value) <= _MAX_FIELD_CHARS
