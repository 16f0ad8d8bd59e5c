"""docs/runs holds what README.md and docs/*.md cite, and little else.

A citation is a path `docs/runs/NAME`, where NAME may use shell braces (`log_{a,b}.jsonl`) and globs
(`eval_*_n16.txt`): every expansion must match a file. A merged file's part is cited as
`docs/runs/FILE`, part `## NAME` (or parts `## PATTERN`): that heading must be in FILE. Paths after
`git show REV:` name a file in git's history and are not checked here.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "docs" / "runs"
MAX_FILES = 30

CITATION = re.compile(r"(?<![\w:/.-])docs/runs/([\w.*{},-]+)")
PART = re.compile(r"docs/runs/([\w.-]+)`?,? parts? `## ([^`]+)`")


def cited_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def expand_braces(pattern: str) -> list[str]:
    """`a{b,c}d` -> [`abd`, `acd`] (no nesting)."""
    pieces = re.split(r"\{([^{}]*)\}", pattern)
    choices = [[piece] if k % 2 == 0 else piece.split(",") for k, piece in enumerate(pieces)]
    return ["".join(combo) for combo in itertools.product(*choices)]


def citations(text: str) -> list[str]:
    names = []
    for match in CITATION.finditer(text):
        name = match.group(1).rstrip(".,")
        if name and name != "FILE":
            names.append(name)
    return names


def test_expand_braces_and_citations():
    assert expand_braces("log_tango_l8{,_sft}.jsonl") == ["log_tango_l8.jsonl", "log_tango_l8_sft.jsonl"]
    assert expand_braces("plain.txt") == ["plain.txt"]
    text = "see `docs/runs/a.txt`, docs/runs/b_{x,y}.txt. and `git show abc^:docs/runs/gone.txt`, `docs/runs/`"
    assert citations(text) == ["a.txt", "b_{x,y}.txt"]


def test_every_cited_docs_runs_file_exists():
    present = sorted(p.name for p in RUNS.iterdir())
    missing = []
    for doc in cited_docs():
        text = doc.read_text()
        for name in citations(text):
            for expanded in expand_braces(name):
                if not fnmatch.filter(present, expanded):
                    missing.append(f"{doc.relative_to(ROOT)}: docs/runs/{expanded}")
        for match in PART.finditer(text):
            target = RUNS / match.group(1)
            if not target.is_file():
                continue  # reported above
            headings = [line[3:].strip() for line in target.read_text().splitlines() if line.startswith("## ")]
            for part in expand_braces(match.group(2).strip()):
                if not fnmatch.filter(headings, part):
                    missing.append(f"{doc.relative_to(ROOT)}: docs/runs/{match.group(1)}, part ## {part}")
    assert not missing, (
        "cited but not in docs/runs (point at `git show REV:docs/runs/FILE` if it is gone):\n" + "\n".join(missing)
    )


def test_docs_runs_stays_small():
    files = sorted(p.name for p in RUNS.iterdir())
    assert len(files) <= MAX_FILES, f"docs/runs holds {len(files)} files (at most {MAX_FILES}): {files}"
