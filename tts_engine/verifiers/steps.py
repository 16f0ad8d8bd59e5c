"""Splitting a solution into steps: what a process verifier judges one by one.

Two forms, one function:
- explicit tags: when the solution contains `<step>...</step>`, each tagged span is a step (text outside the
  tags is ignored);
- otherwise the task's delimiter: every non-blank line is a step.

The final `\\boxed{...}` line counts as a step. In the arithmetic task it is where the answer is copied out of
the last line, and a wrong copy is an error a step-level verifier should be able to point at; counting it
also means a solution of L + 1 operations has L + 2 steps, whatever its answer.
"""

from __future__ import annotations

import math
import re

from .registry import register_score_kind

_TAGGED = re.compile(r"<step>(.*?)</step>", re.DOTALL)


def step_spans(solution: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each step's text in `solution` (end exclusive, stripped of spaces)."""
    if "<step>" in solution:
        spans = [(m.start(1), m.end(1)) for m in _TAGGED.finditer(solution)]
    else:
        spans, offset = [], 0
        for line in solution.split("\n"):
            spans.append((offset, offset + len(line)))
            offset += len(line) + 1
    stripped = []
    for start, end in spans:
        text = solution[start:end]
        if not text.strip():
            continue  # blank lines and empty tags are not steps
        lead = len(text) - len(text.lstrip())
        trail = len(text) - len(text.rstrip())
        stripped.append((start + lead, end - trail))
    return stripped


def split_steps(solution: str) -> list[str]:
    """The steps of `solution`: `<step>` tags when present, else its non-blank lines (stripped)."""
    return [solution[start:end] for start, end in step_spans(solution)]


def token_char_ends(token_texts: list[str]) -> list[int]:
    """Character offset just past each token, given each token's decoded text `# (T,)`."""
    ends, offset = [], 0
    for text in token_texts:
        offset += len(text)
        ends.append(offset)
    return ends


def step_end_tokens(solution: str, token_texts: list[str]) -> list[int]:
    """Index of the token holding the last character of each step (the token a step reward lands on).

    `token_texts` are the decoded texts of the solution's tokens, in order; they must concatenate to
    `solution` (as a character tokenizer's do). A step whose end lies past the last token maps to the last token.
    """
    ends = token_char_ends(token_texts)
    result = []
    for _, end in step_spans(solution):
        last_char = end - 1
        index = next((t for t, e in enumerate(ends) if e > last_char), len(ends) - 1)
        result.append(index)
    return result


# --- one score from step scores ------------------------------------------------------------------------------
STEP_REDUCTIONS = ("last", "min", "prod", "mean")
"""How step scores become one solution score (a search ranks partial solutions by one; every step kind is
recorded)."""


def reduce_steps(step_scores: list[float], how: str) -> float:
    """One solution score from step scores: last, min, prod or mean."""
    if not step_scores:
        raise ValueError("step_scores must not be empty")
    if how == "min":
        return min(step_scores)
    if how == "prod":
        return math.prod(step_scores)
    if how == "mean":
        return sum(step_scores) / len(step_scores)
    if how == "last":
        return step_scores[-1]
    raise ValueError(f"step reduction must be one of {STEP_REDUCTIONS}, got {how!r}")


STEP_KINDS = tuple(f"step_{how}" for how in STEP_REDUCTIONS)
"""The score kinds of a search's records: its beams' own step scores, reduced."""
for _how in STEP_REDUCTIONS:
    register_score_kind(
        f"step_{_how}", f"a search beam's own step scores reduced by {_how}", "search (beam, dvts, particle)"
    )
