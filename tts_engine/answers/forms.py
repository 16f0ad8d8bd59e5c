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
_TUPLE_NAME = r"(?:" + _SIMPLE_VARIABLE + r"(?:\(\s*[A-Za-z]\s*\))?)"
_KEY = re.compile(
    r"(?:" + _SIMPLE_VARIABLE + r"|[A-Za-z]{2,}\d*|[A-Za-z]\(\d+\)"  # x, x_1, \alpha, Minimum, T(10)
    r"|\(\s*" + _TUPLE_NAME + r"(?:\s*,\s*" + _TUPLE_NAME + r")+\s*\))"  # (x, y, z), (f(n), g(n))
)
_TEXT = re.compile(r"[A-Za-z][A-Za-z'\- ]*")
_INTEGER_OR_RATIO = re.compile(r"(-?)(\d{1,50})(?:/(\d{1,50}))?")
_DECIMAL = re.compile(r"-?\d{0,50}\.\d{1,50}")
_FRAC_LITERAL = re.compile(r"(-?)\\frac\{(-?)(\d{1,50})\}\{(\d{1,50})\}")
_WORD = re.compile(r"[A-Za-z]{3,}")
_PROSE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}(?![A-Za-z])")
_MATH_WORDS = frozenset(
    {
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "log",
        "exp",
        "max",
        "min",
        "gcd",
        "lcm",
        "det",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "mod",
        "infty",
    }
)
_DEGREE_MARK = re.compile(r"\\circ(?![a-zA-Z])|°|\\degree(?![a-zA-Z])|\bdegrees?\b")
_FUNCTION_VALUE = re.compile(r"[A-Za-z](?:_\{?\w+\}?)?\(\s*[A-Za-z]\s*\)\s*=(?!=)(.+)", re.DOTALL)
_FUNCTION_NAME = re.compile(r"[A-Za-z](?:_\{?\w+\}?)?\(\s*[A-Za-z]\s*\)")


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
    degrees: bool = False
    """The answer as written carries a degree mark (45^\\circ, 45°, 45 degrees): an angle in degrees."""

    @property
    def prose(self) -> bool:
        """Words of a sentence around or instead of the math ("Alice wins", "the 7 week"): the rules
        cannot read it, so a difference is undecided, not wrong."""
        if self.kind == TEXT:
            return len(self.normalized.split()) > 1
        words = [w for w in _PROSE_WORD.findall(self.normalized) if w.lower() not in _MATH_WORDS]
        return len(words) >= 1 and self.kind == MATH

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
    if len(values) > len(split_top_level(normalized)) and not any(keys):  # (f(n), g(n)) = (n, 1)
        key = ",".join(sorted(values))
    return AnswerForm(normalized, key, _kind(normalized), keys, values, _DEGREE_MARK.search(answer) is not None)


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
    """ "x=3" -> ("x", "3"); "f(x)=x+1" stays an equation (a function definition is the answer)."""
    depths = top_level_depths(item)
    equals = [i for i, ch in enumerate(item) if ch == "=" and depths[i] == 0]
    if len(equals) != 1:
        return None, item
    lhs, rhs = item[: equals[0]].strip(), item[equals[0] + 1 :].strip()
    if rhs and _KEY.fullmatch(lhs):
        return lhs, rhs
    return None, item


def _expand_tuple_key(key: str, value: str) -> list[tuple[str | None, str]] | None:
    """ "(x,y,z)=(1,2,3)" -> x=1, y=2, z=3 (only when both tuples have the same length)."""
    names = split_top_level(key[1:-1])
    if not (value.startswith("(") and value.endswith(")")):
        return None
    parts = split_top_level(value[1:-1])
    if len(parts) != len(names):
        return None
    return [
        (None, f"{name}={part}") if _FUNCTION_NAME.fullmatch(name) else (name, part) for name, part in zip(names, parts)
    ]


def text_key(form: AnswerForm) -> str:
    """How text answers compare: case and spacing do not matter ("Monday" = "monday")."""
    return re.sub(r"[^a-z0-9]", "", form.normalized.lower())


def comparison_pair(reference: AnswerForm, answer: AnswerForm) -> tuple[str, str]:
    """The two strings math-verify should compare, after the key rules.

    Both keyed with the same keys: compare as written (math-verify pairs the equations by key).
    One side keyed, the other not: drop the keys ("x=3" vs "3"; "a=2, h=-1" vs "2, -1"); against one
    tuple of as many entries, the keyed values as a tuple: in the alphabetical order of single-letter
    names, the convention of (x, y) and (P, Q) ("Q=2, P=1" vs "(1, 2)"), else as written.
    A function definition against a bare expression: its right side ("f(x)=2x+1" vs "2x+1").
    Otherwise as written.
    """
    if reference.keyed and answer.keyed:
        return reference.key, answer.key
    if reference.keyed or answer.keyed:
        keyed, other = (reference, answer) if reference.keyed else (answer, reference)
        tupled = _as_tuple(keyed, other)
        if tupled is not None:
            return (tupled, other.key) if keyed is reference else (other.key, tupled)
        return reference.unkeyed(), answer.unkeyed()
    left, right = _function_value(reference, answer), _function_value(answer, reference)
    return left, right


def _as_tuple(keyed: AnswerForm, other: AnswerForm) -> str | None:
    """The keyed values as one tuple when the other side is one tuple with as many entries."""
    if len(keyed.values) < 2 or None in keyed.keys or len(other.values) != 1 or not _is_bracketed_tuple(other.key):
        return None
    if len(split_top_level(other.key[1:-1])) != len(keyed.values):
        return None
    values = keyed.values
    if all(re.fullmatch(r"[a-z]", k) for k in keyed.keys) or all(re.fullmatch(r"[A-Z]", k) for k in keyed.keys):
        values = tuple(v for _, v in sorted(zip(keyed.keys, keyed.values)))  # (a, b), (x, y), (P, Q): in order
    return other.key[0] + ",".join(values) + other.key[-1]


def _function_value(form: AnswerForm, other: AnswerForm) -> str:
    """ "f(x)=E" -> "E" when the other side is one item with no "=" at top level; else the key."""
    if len(form.values) != 1 or len(other.values) != 1 or "=" in other.key:
        return form.key
    match = _FUNCTION_VALUE.fullmatch(form.key)
    return match.group(1).strip() if match else form.key


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
        if text_key(reference) == text_key(answer):
            return True
        return None if reference.prose or answer.prose else False
    if kinds & {TEXT, CHOICE}:
        return None if reference.prose or answer.prose else False
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

    `left` is the reference. Lists compare as sets (math-verify's reading of a list). A single number
    against a single number is decided here, with rounding (rounded_equal): a decimal reference
    equals any value that rounds to it as written ("12.33" = "\\frac{37}{3}"), and a decimal answer
    with 2 or more digits equals a reference with no finite decimal form that rounds to it ("0.33"
    for "\\frac{1}{3}", never "0.13" for "\\frac{1}{8}"). A percentage also reads as its number
    ("50\\%" = "0.5" = "50"). A single number never equals a pair or interval "(a, b)".
    """
    left_items, right_items = split_top_level(left), split_top_level(right)
    if len(left_items) == len(right_items) == 1:
        left_readings, right_readings = _readings(left), _readings(right)
        if left_readings and right_readings:
            if len(left_readings) == len(right_readings) == 2:  # both percentages: compare as written
                left_readings, right_readings = left_readings[1:], right_readings[1:]
            verdicts = {rounded_equal(a, b) for a in left_readings for b in right_readings}
            return True if True in verdicts else None if None in verdicts else False
    left_values = [rational_value(item) for item in left_items]
    right_values = [rational_value(item) for item in right_items]
    if None in left_values or None in right_values:
        return _shape_verdict(left_values, right_items, right_values, left_items)
    if set(left_values) == set(right_values):
        return True
    if "." not in left + right:
        return False
    return None


_PERCENT_ITEM = re.compile(r"(.+?)\\%")


def _readings(item: str) -> list[tuple[Fraction, int | None]]:
    """(value, decimal places as written or None when exact) of a number literal; a percentage
    gives its fraction and its number. Empty when the item is not a number literal."""
    percent = _PERCENT_ITEM.fullmatch(item)
    inner = percent.group(1) if percent else item
    value = rational_value(inner)
    if value is None:
        return []
    digits = len(inner.split(".")[1]) if _DECIMAL.fullmatch(inner) else None
    if not percent:
        return [(value, digits)]
    return [(value / 100, None if digits is None else digits + 2), (value, digits)]


def rounded_equal(reference: tuple[Fraction, int | None], answer: tuple[Fraction, int | None]) -> bool | None:
    """Equal values, or one value rounded to a decimal as written (never looser than half a unit in
    its last place). A decimal reference accepts any more precise value; a decimal answer (2+ digits)
    stands for a reference only when the reference has no finite decimal form. A decimal answer less
    precise than a decimal reference within math-verify's rounding (1e-6) is left to math (None)."""
    (ref_value, ref_digits), (ans_value, ans_digits) = reference, answer
    if ref_value == ans_value:
        return True
    if ref_digits is not None and (ans_digits is None or ans_digits > ref_digits):
        return abs(ans_value - ref_value) <= Fraction(1, 2 * 10**ref_digits)
    if ans_digits is not None and ans_digits >= 2 and ref_digits is None and not _finite_decimal(ref_value):
        return abs(ans_value - ref_value) <= Fraction(1, 2 * 10**ans_digits)
    if ref_digits is not None and ans_digits is not None and abs(ans_value - ref_value) <= Fraction(1, 10**6):
        return None
    return False


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
    return (
        item[:1] in "(["
        and item[-1:] in ")]"
        and len(item) > 2
        and len(split_top_level(item[1:-1])) > 1
        and item[1:-1].count("(") == item[1:-1].count(")")
    )


_ANGLE_QUESTION = re.compile(
    r"\bangles?\b|\\angle|∠|\bdegrees?\b|\bradians?\b|\binclination\b|\btriangle\b|\\triangle|\\theta|\\alpha"
    r"|\\beta|\\gamma|\\varphi|\\phi|\bargument\b|\barg\b",
    re.IGNORECASE,
)


def asks_for_angle(question: str | None) -> bool:
    """Does the question talk about an angle (so that a bare number in the reference may be degrees)?"""
    return isinstance(question, str) and _ANGLE_QUESTION.search(question[:4000]) is not None


def angle_forms(reference: AnswerForm, answer: AnswerForm, angle_question: bool) -> tuple[AnswerForm, AnswerForm]:
    """Degrees against radians: the degree side rewritten in radians ("45^\\circ" vs "\\frac{\\pi}{4}").

    A side is in degrees when it carries a degree mark, or, when the question asks for an angle, when it
    is a plain number and the other side is a multiple of pi. Otherwise the forms come back unchanged
    ("45" vs "\\frac{\\pi}{4}" for "find x" stays two different numbers).
    """
    for degree_side, radian_side in ((reference, answer), (answer, reference)):
        if (
            "\\pi" in radian_side.normalized
            and "\\pi" not in degree_side.normalized
            and not radian_side.degrees
            and (degree_side.degrees or angle_question)
        ):
            converted = _in_radians(degree_side)
            if converted is not None:
                return (converted, radian_side) if degree_side is reference else (radian_side, converted)
    return reference, answer


def _in_radians(form: AnswerForm) -> AnswerForm | None:
    items = []
    for value in form.values:
        degrees = rational_value(value)
        if degrees is None:
            return None
        ratio = degrees / 180
        sign = "-" if ratio < 0 else ""
        items.append(f"{sign}\\frac{{{abs(ratio.numerator)}\\pi}}{{{ratio.denominator}}}")
    return answer_form(",".join(items))
