"""Answer forms: what kind of answer a string is, its list items and their keys ("x=3").

Pure string code, used in the calling process for the cheap decisions (equal forms, text answers,
multiple-choice letters) and in the check workers to pick what math-verify compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from .guards import not_text, uncheckable
from .latex import split_top_level, top_level_depths
from .normalize import MAX_ANSWER_CHARS, key_of_normalized, normalize_answer

MATH, TEXT, CHOICE, EMPTY, UNCHECKABLE = "math", "text", "choice", "empty", "uncheckable"

_SIMPLE_VARIABLE = r"(?:[A-Za-z]|\\[a-zA-Z]+)(?:_(?:\{[^{}=]*\}|\w))?'*"
_KEY = re.compile(
    r"(?:" + _SIMPLE_VARIABLE + r"|[A-Za-z]{2,}\d*|[A-Za-z]\(\d+\)"  # x, x_1, \alpha, Minimum, T(10)
    r"|\(\s*" + _SIMPLE_VARIABLE + r"(?:\s*,\s*" + _SIMPLE_VARIABLE + r")+\s*\))"  # (x, y, z)
)
_TEXT = re.compile(r"[A-Za-z][A-Za-z'\- ]*")
_INTEGER_OR_RATIO = re.compile(r"(-?)(\d{1,50})(?:/(\d{1,50}))?")
_DECIMAL = re.compile(r"-?\d{0,50}\.\d{1,50}")
_FRAC_LITERAL = re.compile(r"(-?)\\frac\{(-?)(\d{1,50})\}\{(\d{1,50})\}")
_WORD = re.compile(r"[A-Za-z]{3,}")


@dataclass(frozen=True)
class AnswerForm:
    """One answer, normalised and taken apart for comparison."""

    normalized: str
    """Canonical LaTeX (normalize.normalize_answer)."""
    key: str
    """Bucket key: equal keys mean equal answers (normalize.canonical_key)."""
    kind: str
    """"math", "text" (words: "Monday"), "choice" (a letter A-J), "empty", or "uncheckable" (longer than
    MAX_ANSWER_CHARS, or too deep or too large for math: guards.py; compared as written only)."""
    keys: tuple[str | None, ...]
    """Per top-level item, the name assigned to ("x" in "x=3"), or None."""
    values: tuple[str, ...]
    """Per top-level item, the value (the right side when the item is keyed)."""

    @property
    def keyed(self) -> bool:
        return any(k is not None for k in self.keys)

    def unkeyed(self) -> str:
        """The answer with every key dropped: "a=2, b=-1" -> "-1,2" (items sorted)."""
        return ",".join(sorted(self.values)) if len(self.values) > 1 else self.values[0]


def answer_form(answer: str) -> AnswerForm:
    """Normalise and classify one answer string (forms of answers up to MAX_ANSWER_CHARS are cached)."""
    answer = answer.strip()
    if len(answer) > MAX_ANSWER_CHARS:  # not cached: the cache must not hold megabyte strings
        return AnswerForm(answer, answer, UNCHECKABLE, (None,), (answer,))
    if not_text(answer):  # compared as written; no rule sees control characters or lone surrogates
        return AnswerForm(answer, answer, UNCHECKABLE, (None,), (answer,))
    return _short_answer_form(answer)


@lru_cache(maxsize=65536)
def _short_answer_form(answer: str) -> AnswerForm:
    normalized = normalize_answer(answer)
    key = key_of_normalized(normalized)
    keys, values = _split_keys(normalized)
    return AnswerForm(normalized, key, _kind(normalized), keys, values)


def _kind(normalized: str) -> str:
    if not normalized:
        return EMPTY
    if re.fullmatch(r"[A-J]", normalized):
        return CHOICE
    if uncheckable(normalized):
        return UNCHECKABLE
    if _TEXT.fullmatch(normalized) and _WORD.search(normalized):
        return TEXT
    return MATH


def _split_keys(normalized: str) -> tuple[tuple[str | None, ...], tuple[str, ...]]:
    items = split_top_level(normalized)
    pairs = [_split_key(item) for item in items]
    if len(pairs) == 1 and pairs[0][0] is not None and pairs[0][0].startswith("("):
        expanded = _expand_tuple_key(*pairs[0])
        if expanded:
            pairs = expanded
    return tuple(k for k, _ in pairs), tuple(v for _, v in pairs)


def _split_key(item: str) -> tuple[str | None, str]:
    """"x=3" -> ("x", "3"); "f(x)=x+1" stays an equation (a function definition is the answer)."""
    depths = top_level_depths(item)
    equals = [i for i, ch in enumerate(item) if ch == "=" and depths[i] == 0]
    if len(equals) != 1:
        return None, item
    lhs, rhs = item[: equals[0]].strip(), item[equals[0] + 1 :].strip()
    if rhs and _KEY.fullmatch(lhs):
        return lhs, rhs
    return None, item


def _expand_tuple_key(key: str, value: str) -> list[tuple[str | None, str]] | None:
    """"(x,y,z)=(1,2,3)" -> x=1, y=2, z=3 (only when both tuples have the same length)."""
    names = split_top_level(key[1:-1])
    if not (value.startswith("(") and value.endswith(")")):
        return None
    parts = split_top_level(value[1:-1])
    if len(parts) != len(names):
        return None
    return list(zip(names, parts))


def text_key(form: AnswerForm) -> str:
    """How text answers compare: case and spacing do not matter ("Monday" = "monday")."""
    return re.sub(r"[^a-z0-9]", "", form.normalized.lower())


def comparison_pair(reference: AnswerForm, answer: AnswerForm) -> tuple[str, str]:
    """The two strings math-verify should compare, after the key rules.

    Both keyed with the same keys: compare as written (math-verify pairs the equations by key).
    One side keyed, the other not: drop the keys ("x=3" vs "3"; "a=2, h=-1" vs "2, -1").
    Otherwise as written.
    """
    if reference.keyed and answer.keyed:
        return reference.key, answer.key
    if reference.keyed or answer.keyed:
        return reference.unkeyed(), answer.unkeyed()
    return reference.key, answer.key


def quick_verdict(reference: AnswerForm, answer: AnswerForm) -> bool | None:
    """The verdict when no math is needed, else None.

    Equal keys are equal; number literals compare exactly ("1/2" = "\\frac{2}{4}" = "0.5", "3" != "4");
    text answers and choice letters compare by string only (math-verify reads
    "Monday" as a product of symbols, so "Mon" would equal "Nom"); a text or choice answer never
    equals a math answer.
    """
    if EMPTY in (reference.kind, answer.kind):
        return False
    if reference.key == answer.key:
        return True
    if UNCHECKABLE in (reference.kind, answer.kind):
        return None
    kinds = {reference.kind, answer.kind}
    if kinds == {TEXT}:
        return text_key(reference) == text_key(answer)
    if kinds & {TEXT, CHOICE}:
        return False
    left, right = comparison_pair(reference, answer)
    if left == right:
        return True
    return literal_verdict(left, right)


def rational_value(item: str) -> Fraction | None:
    """The exact value of a number literal ("12", "-3/4", "\\frac{3}{4}", "0.25"), else None."""
    match = _INTEGER_OR_RATIO.fullmatch(item)
    if match:
        sign, numerator, denominator = match.groups()
    elif _DECIMAL.fullmatch(item):
        return Fraction(item)
    else:
        match = _FRAC_LITERAL.fullmatch(item)
        if match is None:
            return None
        sign = "-" if (match.group(1) == "-") != (match.group(2) == "-") else ""
        numerator, denominator = match.group(3), match.group(4)
    if denominator is not None and int(denominator) == 0:
        return None
    value = Fraction(int(numerator), int(denominator or 1))
    return -value if sign else value


def literal_verdict(left: str, right: str) -> bool | None:
    """Number literals and lists of them, decided exactly where math-verify would agree; else None.

    Lists compare as sets (math-verify's reading of a list). Equal values are equal. Different
    values are different when only integers and fractions are involved; with a decimal, only when
    they differ by more than math-verify's rounding (1e-6) and the decimal cannot be a rounding of
    the other value (a fraction with no finite decimal form: rounded_decimal in mathcheck). A single
    number never equals a pair or interval "(a, b)".
    """
    left_items, right_items = split_top_level(left), split_top_level(right)
    left_values = [rational_value(item) for item in left_items]
    right_values = [rational_value(item) for item in right_items]
    if None in left_values or None in right_values:
        return _shape_verdict(left_values, right_items, right_values, left_items)
    if set(left_values) == set(right_values):
        return True
    if "." not in left + right:
        return False
    if len(left_values) == len(right_values) == 1:
        a, b = left_values[0], right_values[0]
        if abs(a - b) > Fraction(1, 10**6) and _finite_decimal(a) and _finite_decimal(b):
            return False
    return None


def _finite_decimal(value: Fraction) -> bool:
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


def _shape_verdict(left_values, right_items, right_values, left_items) -> bool | None:
    """A lone number against a bracketed pair/tuple/interval (either way round) is different."""
    for values, items in ((left_values, right_items), (right_values, left_items)):
        if len(values) == 1 and values[0] is not None and len(items) == 1 and _is_bracketed_tuple(items[0]):
            return False
    return None


def _is_bracketed_tuple(item: str) -> bool:
    return (item[:1] in "([" and item[-1:] in ")]" and len(item) > 2
            and len(split_top_level(item[1:-1])) > 1 and item[1:-1].count("(") == item[1:-1].count(")"))
