"""Small LaTeX scanning helpers: matching braces, top-level splitting, command arguments.

Pure string code (no sympy), linear in the input, never raises on unbalanced input.
"""

from __future__ import annotations

import re
from typing import Callable

OPENERS = "({["
CLOSERS = ")}]"


def matching_brace(text: str, open_index: int) -> int:
    """Index of the `}` closing the `{` at `open_index`, or -1 when it never closes.

    `\\{`, `\\}` and other escaped characters are skipped: they are literal, not grouping.
    """
    depth = 0
    i = open_index
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split at `separator` characters outside any (), [], {} (mixed pairs allowed: "(0,1]").

    Unbalanced closers are ignored (depth never goes below zero). Items are stripped.
    """
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in OPENERS:
            depth += 1
        elif ch in CLOSERS:
            depth = max(depth - 1, 0)
        elif ch == separator and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return items


def top_level_depths(text: str) -> list[int]:
    """Bracket depth before each character (same counting as split_top_level)."""
    depths = []
    depth = 0
    for ch in text:
        depths.append(depth)
        if ch in OPENERS:
            depth += 1
        elif ch in CLOSERS:
            depth = max(depth - 1, 0)
    return depths


def encloses_whole(text: str, left: str, right: str) -> bool:
    """True when `text` is `left ... right` and the first `left` is closed only by the last `right`."""
    if not (text.startswith(left) and text.endswith(right)) or len(text) < len(left) + len(right):
        return False
    depth = 0
    for i, ch in enumerate(text):
        if ch in OPENERS:
            depth += 1
        elif ch in CLOSERS:
            depth -= 1
            if depth == 0 and i < len(text) - 1:
                return False
    return depth == 0


def rewrite_command_args(text: str, commands: tuple[str, ...], rewrite: Callable[[str, str, str, str], str]) -> str:
    """Replace every `\\command{arg}` (command in `commands`) by rewrite(command, arg, before, after).

    `before` and `after` are the text around the occurrence (for context-dependent rules). An
    occurrence whose brace never closes is left as it is. Scans left to right, once.
    """
    pattern = re.compile(r"\\(" + "|".join(re.escape(c) for c in commands) + r")\s*\{")
    out: list[str] = []
    pos = 0
    while True:
        match = pattern.search(text, pos)
        if match is None:
            break
        close = matching_brace(text, match.end() - 1)
        if close < 0:
            break
        out.append(text[pos : match.start()])
        before = "".join(out)
        after = text[close + 1 :]
        out = [before, rewrite(match.group(1), text[match.end() : close], before, after)]
        pos = close + 1
    out.append(text[pos:])
    return "".join(out)
