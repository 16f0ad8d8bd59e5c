"""Results JSONL -> arrays: answer classes, correctness, scores and token counts of every sample.

Curves need no text, so only the numeric parts of each record are kept (docs/results.md is the format).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

log = logging.getLogger(__name__)

MAX_GROUP_VALUES = 12
"""A problem field with 2 to this many distinct short values (level, subject, ...) is a breakdown field."""


@dataclass
class ResultsTable:
    """P problems x N samples of one results file, as arrays."""

    ids: list[str]
    """Problem ids, in file order."""
    fields: list[dict[str, Any]]
    """Each problem's short fields (level, subject, ...) for breakdowns."""
    class_ids: np.ndarray
    """(P, N) int64 answer class of every sample, -1 for no answer."""
    class_correct: np.ndarray
    """(P, C) bool: answer class c of problem p is correct (padding and undecided classes: False)."""
    has_reference: np.ndarray
    """(P,) bool: the problem has a reference, so its accuracy is defined."""
    sample_correct: np.ndarray
    """(P, N) float: each sample's own `correct` flag, 1.0 / 0.0, NaN where null (no reference, undecided)."""
    scores: dict[str, np.ndarray]
    """Score kind -> (P, N) float64 in [0, 1]; NaN where a sample lacks that kind."""
    num_tokens: np.ndarray
    """(P, N) float64 generated tokens per sample."""
    verifier_tokens: np.ndarray
    """(P, N) float64 tokens the verifier read per sample (0 where not recorded)."""
    run: dict[str, Any]
    """The `run` block of the first record (model, num_parameters, n, ...)."""
    notes: list[str] = field(default_factory=list)
    """What was adjusted while reading (truncated samples, dropped problems, missing scores)."""
    text_ids: np.ndarray | None = None
    """(P, N) int: samples of a problem with the same text share an id (the engine verifies a text once)."""

    @property
    def num_problems(self) -> int:
        return self.class_ids.shape[0]

    @property
    def num_samples(self) -> int:
        return self.class_ids.shape[1]

    @property
    def num_parameters(self) -> int | None:
        value = self.run.get("num_parameters")
        return int(value) if isinstance(value, (int, float)) and value > 0 else None

    def group_masks(self) -> dict[str, dict[str, np.ndarray]]:
        """Breakdown field -> value -> (P,) bool mask of its problems, for fields with 2..MAX_GROUP_VALUES values."""
        out: dict[str, dict[str, np.ndarray]] = {}
        for name in sorted({key for fields in self.fields for key in fields}):
            values = [fields.get(name) for fields in self.fields]
            distinct = sorted({v for v in values if isinstance(v, (str, int, float, bool))}, key=str)
            if 1 < len(distinct) <= MAX_GROUP_VALUES:
                out[name] = {str(value): np.array([v == value for v in values]) for value in distinct}
        return out

    def select(self, rows: np.ndarray) -> "ResultsTable":
        """The problems at `rows` (a boolean mask or indices), everything else unchanged."""
        idx = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows)
        return ResultsTable(
            ids=[self.ids[i] for i in idx],
            fields=[self.fields[i] for i in idx],
            class_ids=self.class_ids[idx],
            class_correct=self.class_correct[idx],
            has_reference=self.has_reference[idx],
            sample_correct=self.sample_correct[idx],
            scores={kind: values[idx] for kind, values in self.scores.items()},
            num_tokens=self.num_tokens[idx],
            verifier_tokens=self.verifier_tokens[idx],
            run=self.run,
            notes=list(self.notes),
            text_ids=None if self.text_ids is None else self.text_ids[idx],
        )


def load_results(path: str | Path) -> ResultsTable:
    """Read a results JSONL file (one problem a line) through the one results reader
    (`tts_engine.running.results.read_results`: a line that is not a results line is an error naming the file and
    line; a torn last line, from a killed run, is skipped)."""
    from tts_engine.running.results import read_results

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"results file {str(path)!r} does not exist")
    records = list(read_results(path))
    if not records:
        raise ValueError(f"results file {str(path)!r} holds no problem records")
    return table_from_records(records)


def table_from_records(records: Iterable[dict[str, Any]]) -> ResultsTable:
    """Arrays from results records (dicts in the results format)."""
    records = list(records)
    failed = [r for r in records if r.get("status", "ok") != "ok" and not r.get("samples")]
    empty = sum(1 for r in records if not r.get("samples") and r.get("status", "ok") == "ok")
    records = [r for r in records if r.get("samples")]
    if not records:
        raise ValueError("no results record has any samples")
    notes = [f"{empty} problems without samples left out"] if empty else []
    if failed:
        statuses = Counter(str(r["status"]) for r in failed)
        notes.append(
            f"{len(failed)} problems failed ({', '.join(f'{k}: {v}' for k, v in sorted(statuses.items()))}): "
            "each counts as not solved, with no answer and no compute"
        )
    sizes = [len(r["samples"]) for r in records]
    n = min(sizes)
    if max(sizes) != n:
        notes.append(f"problems have {n} to {max(sizes)} samples; curves use the first {n} of each")
    kinds = sorted({kind for r in records for s in r["samples"][:n] for kind in (s.get("scores") or {})})
    p = len(records)
    class_ids = np.full((p, n), -1, dtype=np.int64)
    sample_correct = np.full((p, n), np.nan)
    scores = {kind: np.full((p, n), np.nan) for kind in kinds}
    num_tokens = np.zeros((p, n))
    verifier_tokens = np.zeros((p, n))
    text_ids = np.zeros((p, n), dtype=np.int64)
    has_reference = np.zeros(p, dtype=bool)
    correct_lists = []
    for i, record in enumerate(records):
        arrays = (class_ids, sample_correct, scores, num_tokens, verifier_tokens)
        correct_lists.append(_read_problem(record, n, i, *arrays))
        texts: dict[str, int] = {}
        text_ids[i] = [texts.setdefault(str(s.get("text")), len(texts)) for s in record["samples"][:n]]
        has_reference[i] = record.get("reference") is not None
    table_records = records + failed
    if failed:  # rows with no answer: every vote and pass@k miss them, the accuracy's denominator keeps them
        class_ids = np.vstack([class_ids, np.full((len(failed), n), -1, dtype=np.int64)])
        sample_correct = np.vstack([sample_correct, np.full((len(failed), n), np.nan)])  # no sample to judge
        scores = {kind: np.vstack([values, np.zeros((len(failed), n))]) for kind, values in scores.items()}
        num_tokens, verifier_tokens = (
            np.vstack([a, np.zeros((len(failed), n))]) for a in (num_tokens, verifier_tokens)
        )
        text_ids = np.vstack([text_ids, np.zeros((len(failed), n), dtype=np.int64)])
        has_reference = np.concatenate([has_reference, _referenced(failed)])
        correct_lists += [[] for _ in failed]
    class_correct = _pad_classes(correct_lists, class_ids)
    _note_missing_scores(scores, notes)
    if not has_reference.any():
        notes.append("no problem has a reference: accuracy is undefined; only compute figures are meaningful")
    return ResultsTable(
        ids=[str(r.get("id", i + 1)) for i, r in enumerate(table_records)],
        fields=[dict(r.get("fields") or {}) for r in table_records],
        class_ids=class_ids,
        class_correct=class_correct,
        has_reference=has_reference,
        sample_correct=sample_correct,
        scores=scores,
        num_tokens=num_tokens,
        verifier_tokens=verifier_tokens,
        run=dict(records[0].get("run") or {}),
        notes=notes,
        text_ids=text_ids,
    )


def _referenced(records: list[dict[str, Any]]) -> np.ndarray:
    """(R,) bool: each record has a reference answer."""
    return np.array([r.get("reference") is not None for r in records], dtype=bool)


def _read_problem(record, n, i, class_ids, sample_correct, scores, num_tokens, verifier_tokens) -> list[bool]:
    """Fill row i of the arrays from one record; return the correctness of each answer class."""
    samples = record["samples"][:n]
    sample_flags: dict[int, bool] = {}
    for j, sample in enumerate(samples):
        cls = sample.get("answer_class")
        cls = cls if isinstance(cls, int) and cls >= 0 else -1
        class_ids[i, j] = cls
        correct = sample.get("correct")
        if isinstance(correct, bool):
            sample_correct[i, j] = float(correct)
        if cls >= 0 and correct is True:
            sample_flags[cls] = True
        num_tokens[i, j] = _number(sample.get("num_tokens"))
        verifier_tokens[i, j] = _number(sample.get("verifier_tokens"))
        for kind, value in (sample.get("scores") or {}).items():
            if isinstance(value, (int, float)):
                scores[kind][i, j] = value
    classes = record.get("classes")
    num_classes = int(class_ids[i].max()) + 1
    if isinstance(classes, list) and len(classes) >= num_classes:
        return [isinstance(c, dict) and c.get("correct") is True for c in classes]
    return [sample_flags.get(c, False) for c in range(num_classes)]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _pad_classes(correct_lists: list[list[bool]], class_ids: np.ndarray) -> np.ndarray:
    """(P, C) bool with C the most classes any problem has (at least 1)."""
    width = max(1, max(len(c) for c in correct_lists), int(class_ids.max()) + 1)
    out = np.zeros((len(correct_lists), width), dtype=bool)
    for i, flags in enumerate(correct_lists):
        out[i, : len(flags)] = flags
    return out


def _note_missing_scores(scores: dict[str, np.ndarray], notes: list[str]) -> None:
    """Note scores that are missing (NaN, voting as 0) and clip, with a note, those outside [0, 1]."""
    for kind, values in scores.items():
        missing = int(np.isnan(values).sum())
        if missing:
            notes.append(f"score {kind!r} missing on {missing} of {values.size} samples (counted as 0 in votes)")
        outside = int(((values < 0) | (values > 1)).sum())
        if outside:
            np.clip(values, 0.0, 1.0, out=values)
            notes.append(f"score {kind!r} outside [0, 1] on {outside} samples; clipped")
