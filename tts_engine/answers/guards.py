"""Guards: answers that math-verify cannot check in reasonable time or memory are not sent to it.

They are still compared as written (exact string and canonical key), so a reference "10^{10^{10}}"
matches the answer "10^{10^{10}}"; they never reach a check worker, where they would only run into
the deadline. Each limit is far beyond what a real final answer needs.
"""

from __future__ import annotations

import math
import re

from .latex import CLOSERS, OPENERS, matching_brace

MAX_NESTING_DEPTH = 32
"""Deepest bracket nesting ((), [], {}) checked by math (MATH500 references nest at most 4 deep)."""

MAX_DIGITS = 100_000
"""Largest number of digits a numeric power, factorial or binomial may have to be checked by math
(sympy computes such numbers exactly: 10^{10^{10}} would need 10^10 digits)."""

_NUMBER = r"\d+(?:\.\d+)?"
_POWER = re.compile(r"(" + _NUMBER + r")\s*\^\s*(?:\{\s*(" + _NUMBER + r")\s*\}|(\d))")
_TOWER = re.compile(r"\d\s*\^\s*\{[\d\s.^{}+\-*]*\^[\d\s.^{}+\-*]*\}")
_FACTORIAL = re.compile(r"(\d+)\s*!")
_BINOMIAL = re.compile(r"\\binom\s*\{")
_INTEGER = re.compile(r"\d+")
_EXPONENT = re.compile(r"\^\s*\{?\s*(\d+)")


def nesting_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch in OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in CLOSERS:
            depth = max(depth - 1, 0)
    return deepest


def too_large(text: str) -> bool:
    """Does the answer hold a number with more than MAX_DIGITS digits (or an exponent that big)?"""
    if _TOWER.search(text):  # a numeric power tower: 10^{10^{10}}
        return True
    for match in _POWER.finditer(text):
        base, exponent = float(match.group(1)), float(match.group(2) or match.group(3))
        if base > 1 and exponent * math.log10(base) > MAX_DIGITS:
            return True
    if any(int(m.group(1)) > MAX_DIGITS for m in _EXPONENT.finditer(text) if len(m.group(1)) < 30):
        return True
    if any(len(m.group(1)) >= 30 for m in _EXPONENT.finditer(text)):
        return True
    if any(_big_integer(m.group(1)) for m in _FACTORIAL.finditer(text)):  # n! has about n log10(n) digits
        return True
    return any(_big_binomial(text, m.end() - 1) for m in _BINOMIAL.finditer(text))


def _big_integer(digits: str) -> bool:
    return len(digits) > 6 or int(digits) > MAX_DIGITS // 5


def _big_binomial(text: str, open_index: int) -> bool:
    """C(n, k) has up to n log10(2) digits: too large when n or k is a big integer or a power."""
    close = matching_brace(text, open_index)
    if close < 0:
        return False
    arguments = text[open_index : close + 1]
    if close + 1 < len(text) and text[close + 1] == "{":
        second_close = matching_brace(text, close + 1)
        arguments += text[close + 1 : second_close + 1] if second_close > 0 else ""
    return "^" in arguments or any(_big_integer(m.group(0)) for m in _INTEGER.finditer(arguments))


_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def not_text(text: str) -> bool:
    """Control characters or lone surrogates: bytes that decoded text never holds, not an answer."""
    return _NOT_TEXT.search(text) is not None


def uncheckable(text: str) -> bool:
    """True when math must not be tried on this (normalised) answer."""
    return not_text(text) or nesting_depth(text) > MAX_NESTING_DEPTH or too_large(text)
