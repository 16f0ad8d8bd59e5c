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

import re

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
