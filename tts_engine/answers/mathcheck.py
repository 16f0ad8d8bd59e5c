"""The math part of a check: math-verify parse + verify, plus structural rules on the parsed objects.

Runs inside check workers (it imports sympy and math-verify; the calling process never needs to).
Only math-verify's LaTeX parser sees answer text (ANTLR grammar -> sympy objects); its expression
parser, which hands text to sympy's `parse_expr`, is not enabled, and nothing here calls eval, exec,
sympify or parse_expr on answer text. Timeouts are the caller's job: math-verify's own signal-based
timeouts are switched off (they only work in a main thread and can be swallowed by a bare except).
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict

import sympy
from math_verify import LatexExtractionConfig, parse, verify
from sympy.core.function import AppliedUndef

logging.getLogger("math_verify").setLevel(logging.ERROR)  # silence "timeout is disabled" on every call

_EXTRACTION = [LatexExtractionConfig(boxed_match_priority=0)]
_DECIMAL = re.compile(r"-?\d+\.(\d+)")
_PARSE_CACHE_SIZE = 4096
_parse_cache: OrderedDict[str, list | None] = OrderedDict()


def parse_answer(latex: str) -> list | None:
    """math-verify's parse of a normalised answer ([sympy object, text]), or None when unparsable.

    A parse with no math object (math-verify keeps just the text when its grammar fails) counts as
    unparsable: comparing such texts is what the canonical keys already did. Parsed answers are cached
    (a problem's N answers are compared with the same representatives).
    """
    if latex in _parse_cache:
        _parse_cache.move_to_end(latex)
        return _parse_cache[latex]
    parsed = parse(
        "\\boxed{" + protect_trailing_letters(latex) + "}", extraction_config=_EXTRACTION, parsing_timeout=None
    )
    if not any(not isinstance(item, str) for item in parsed):
        parsed = None
    _parse_cache[latex] = parsed
    if len(_parse_cache) > _PARSE_CACHE_SIZE:
        _parse_cache.popitem(last=False)
    return parsed


_TRAILING_LETTERS = re.compile(r"(?<=[\d}\s])\s*([A-Za-z]{1,2})\s*$")
_OTHER_VARIABLE = re.compile(r"(?<![\\A-Za-z])[A-Za-z](?![A-Za-z])")


def protect_trailing_letters(latex: str) -> str:
    """Braces around a trailing variable that math-verify would drop as a unit.

    math-verify removes a unit word at the end of an answer after a digit or "}" ("5 m", "3 h"), so
    "\\frac{5}{4}k - \\frac{1}{4}t" parses as 5k/4 - 1/4. In an expression (the text before it holds
    another variable or a + or - after its first character), the letters are variables: "{t}" keeps them.
    A lone "5 m" stays a number with a unit.
    """
    match = _TRAILING_LETTERS.search(latex)
    if match is None:
        return latex
    head = latex[: match.start()]
    if not (_OTHER_VARIABLE.search(head) or re.search(r"[+\-]", head[1:])):
        return latex
    return head + "{" + match.group(1) + "}"


def check(gold: str, pred: str, symmetric: bool = False) -> bool | None:
    """Is `pred` equivalent to `gold` (both normalised LaTeX)? None when either does not parse.

    symmetric=True also tries the one-directional rule (rounded decimals) with the roles swapped, for
    answer classes, where neither answer is the reference.
    """
    gold_parsed, pred_parsed = parse_answer(gold), parse_answer(pred)
    if gold_parsed is None or pred_parsed is None:
        return None
    if _equivalent(gold_parsed, pred_parsed, pred, gold):
        return True
    return symmetric and rounded_decimal(pred_parsed[0], gold_parsed[0], gold)


def _equivalent(gold: list, pred: list, pred_text: str, gold_text: str = "") -> bool:
    if not _equation_against_value(gold[0], pred[0]) and verify(gold, pred, timeout_seconds=None):
        return True
    if any(rule(gold[0], pred[0], pred_text) for rule in STRUCTURAL_RULES):
        return True
    return rounded_reference(gold[0], pred[0], gold_text) or solved_equation(gold[0], pred[0])


def _same(a, b) -> bool:
    return bool(verify([a], [b], timeout_seconds=None))


# Structural rules: each gets the parsed gold and prediction (sympy objects) and the prediction's text.


def inequality_as_interval(gold, pred, pred_text: str) -> bool:
    """ "k < -5" equals "(-\\infty, -5)"; "3 < \\lambda \\leq 4" equals "(3, 4]".

    A condition on one variable describes the set of its values; references give the interval.
    """
    for condition, interval in ((pred, gold), (gold, pred)):
        if isinstance(interval, sympy.Set) and _is_condition(condition) and len(condition.free_symbols) == 1:
            try:
                as_set = condition.as_set()
            except Exception:  # sympy cannot solve it: not this rule's case
                continue
            if _same(interval, as_set):
                return True
    return False


def _is_condition(expr) -> bool:
    return isinstance(expr, (sympy.core.relational.Relational, sympy.And, sympy.Or)) and not isinstance(expr, sympy.Eq)


def rounded_decimal(gold, pred, pred_text: str) -> bool:
    """ "85.71" for 600/7: a decimal with d >= 2 digits equals an exact value that has no finite
    decimal form when it is that value rounded to d digits.

    Only values with no exact decimal form (1/7, \\sqrt{2}) qualify: for 1/8 = 0.125 the exact
    decimal exists, and "0.13" stays wrong.
    """
    match = _DECIMAL.fullmatch(pred_text)
    if match is None or len(match.group(1)) < 2:
        return False
    if not isinstance(gold, sympy.Expr) or gold.free_symbols or _has_finite_decimal(gold):
        return False
    try:
        exact = sympy.N(gold, 30)
        if not exact.is_real:
            return False
        digits = len(match.group(1))
        return bool(abs(exact - sympy.Float(pred_text, 30)) <= sympy.Rational(1, 2) * sympy.Rational(10) ** -digits)
    except Exception:  # not a number after all
        return False


_DECIMAL_OR_PERCENT = re.compile(r"-?\d*\.(\d+)(\\%)?")


def rounded_reference(gold, pred, gold_text: str) -> bool:
    """A decimal reference "1.41" (or "14.29\\%") equals an exact answer that rounds to it as written
    ("\\sqrt{2}"): the reference says to how many places it was rounded. (Rational answers are settled
    before any check, by forms.rounded_equal.)"""
    match = _DECIMAL_OR_PERCENT.fullmatch(gold_text)
    if match is None or not isinstance(pred, sympy.Expr) or not isinstance(gold, sympy.Expr) or pred.free_symbols:
        return False
    digits = len(match.group(1)) + (2 if match.group(2) else 0)
    try:
        exact, written = sympy.N(pred.doit(), 30), sympy.N(gold.doit(), 30)  # parsed products are unevaluated
        if not (exact.is_real and written.is_real):
            return False
        return bool(abs(exact - written) <= sympy.Rational(1, 2) * sympy.Rational(10) ** -digits)
    except Exception:  # not a number after all
        return False


def solved_equation(gold, pred) -> bool:
    """ "y - 2 = 3(x-1)^2" equals "3x^2 - 6x + 5" and "y = 3x^2 - 6x + 5": an equation with one unknown
    that the other side does not use (or both equations in the same unknown), solved for it, when
    the solution is unique. A function definition "f(x) = E" is its right side."""
    for equation, other in ((gold, pred), (pred, gold)):
        if not isinstance(equation, sympy.Eq):
            continue
        solved = _solve_unique(equation, other)
        if solved is None:
            continue
        unknown, value = solved
        if isinstance(other, sympy.Eq):
            other_solved = _solve_unique(other, equation, unknown)
            if other_solved is not None and _same(value, other_solved[1]):
                return True
        elif isinstance(other, sympy.Expr) and _same(value, other):
            return True
    return False


def _equation_against_value(gold, pred) -> bool:
    """An equation whose left side is not a lone name ("y - 1 = 3(x+1)^2 + 1") against a bare value:
    math-verify would compare the value with the right side only; solved_equation decides instead."""
    for equation, other in ((gold, pred), (pred, gold)):
        if (
            isinstance(equation, sympy.Eq)
            and not isinstance(other, sympy.Eq)
            and not isinstance(equation.lhs, (sympy.Symbol, AppliedUndef))
        ):
            return True
    return False


def _solve_unique(equation, other, unknown=None):
    """(unknown, its value) for an equation in one unknown not used by `other`, or None."""
    if isinstance(equation.lhs, AppliedUndef):
        return equation.lhs, equation.rhs
    symbols = _free_symbols(equation)
    other_symbols = _free_symbols(other) if not isinstance(other, sympy.Eq) else set()
    if unknown is None and isinstance(equation.lhs, sympy.Symbol):
        unknown = equation.lhs
    candidates = [unknown] if unknown is not None else sorted(symbols - other_symbols, key=str)
    if len(candidates) != 1 or candidates[0] not in symbols:
        return None
    try:
        solutions = sympy.solve(equation, candidates[0], dict=False)
    except Exception:  # sympy cannot solve it: not this rule's case
        return None
    if len(solutions) != 1:
        return None
    return candidates[0], solutions[0]


def _has_finite_decimal(value) -> bool:
    if value.is_Rational:
        factors = set(sympy.factorint(value.q))
        return factors <= {2, 5}
    return bool(value.is_Float)


def renamed_bound_variable(gold, pred, pred_text: str) -> bool:
    """ "f(z)=z" equals "f(x)=x"; "\\frac{\\pi}{6}+k\\pi" equals "\\frac{\\pi}{6}+n\\pi".

    The argument of a function definition and the integer parameter of a family of periodic
    solutions are bound names: when each side has exactly one free symbol and they differ, rename.
    """
    gold_symbols, pred_symbols = _free_symbols(gold), _free_symbols(pred)
    if len(gold_symbols) != 1 or len(pred_symbols) != 1 or gold_symbols == pred_symbols:
        return False
    if not (_both_define_same_function(gold, pred) or (gold.has(sympy.pi) and pred.has(sympy.pi))):
        return False
    (old,), (new,) = pred_symbols, gold_symbols
    try:
        return _same(gold, pred.xreplace({old: new}))
    except Exception:  # an object that cannot be rebuilt with the new symbol
        return False


def _free_symbols(expr) -> set:
    try:
        return {s for s in expr.free_symbols if isinstance(s, sympy.Symbol)}
    except AttributeError:
        return set()


def _both_define_same_function(gold, pred) -> bool:
    def defined(expr):
        if isinstance(expr, sympy.Eq) and isinstance(expr.lhs, AppliedUndef) and len(expr.lhs.args) == 1:
            return expr.lhs.func
        return None

    return defined(gold) is not None and defined(gold) == defined(pred)


STRUCTURAL_RULES = (inequality_as_interval, rounded_decimal, renamed_bound_variable)
"""Tried in order after plain math-verify says "not equal"."""
