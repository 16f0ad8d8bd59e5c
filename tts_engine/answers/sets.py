"""Sets of real numbers written as conditions: inequality text and set-builder notation to a union of
intervals and points, in the notation references use.

    "2 < t \\leq 5 or 7 \\leq t < 9"       -> "(2, 5] \\cup [7, 9)"
    "\\{x \\mid 0 < x \\le 4\\}"             -> "(0, 4]"
    "x \\le -1 \\text{ or } x = 3"          -> "(-\\infty, -1] \\cup \\{3\\}"
    "x > 1 \\text{ and } x \\leq 4"          -> "(1, 4]"

Pure string code on normalised LaTeX (after normalize.unify_commands: "\\leq", "\\geq", "\\neq", no
\\left/\\right). An answer is rewritten only when every piece of it is a condition on one and the same
variable and at least one is an inequality; anything else comes back unchanged ("x=1 or x=2" stays a
list of solutions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .latex import encloses_whole, split_top_level, top_level_depths

_VARIABLE = re.compile(
    r"(?:[A-Za-z]|\\(?:alpha|beta|gamma|theta|lambda|mu|omega|varphi|phi|sigma|tau|rho))(?:_\{?\w+\}?)?"
)
_RELATION = re.compile(r"\\leq|\\geq|\\neq|<|>|=")
_OR = re.compile(r"\\text\{\s*or\s*\}|\\(?:lor|vee|cup)(?![a-zA-Z])|(?<![A-Za-z\\])or(?![A-Za-z])")
_AND = re.compile(r"\\text\{\s*and\s*\}|\\(?:land|wedge)(?![a-zA-Z])|(?<![A-Za-z\\])and(?![A-Za-z])")
_SET_BUILDER = re.compile(
    r"\\\{\s*(" + _VARIABLE.pattern + r")\s*(?:\\in\s*\\mathbb\{R\}\s*)?(?:\||:)\s*(.+)\\\}", re.DOTALL
)
_INTERVAL = re.compile(r"[(\[][^()\[\]]*,[^()\[\]]*[)\]]|\\\{[^{}]*\\\}|\\emptyset|\\mathbb\{R\}")


@dataclass
class _Bounds:
    """One piece of a set: lower and upper bounds (None: unbounded), or a single point."""

    lower: str | None = None
    lower_closed: bool = False
    upper: str | None = None
    upper_closed: bool = False
    point: str | None = None
    excluded: str | None = None

    def latex(self) -> str:
        if self.point is not None:
            return "\\{" + self.point + "\\}"
        if self.excluded is not None:
            return f"(-\\infty,{self.excluded})\\cup({self.excluded},\\infty)"
        left = ("[" if self.lower_closed else "(") + (self.lower if self.lower is not None else "-\\infty")
        right = (self.upper if self.upper is not None else "\\infty") + ("]" if self.upper_closed else ")")
        return left + "," + right


def conditions_to_sets(answer: str) -> str:
    """A condition on one variable as a union of intervals and points; other answers unchanged."""
    if not _RELATION.search(answer) or len(answer) > 300:
        return answer
    variable = None
    builder = _SET_BUILDER.fullmatch(answer.strip())
    if builder and encloses_whole(answer.strip(), "\\{", "\\}"):
        variable, answer = builder.group(1), builder.group(2)
    pieces = _split(answer, _OR)
    if len(pieces) == 1:
        pieces = split_top_level(answer)
    sets: list[str] = []
    inequality = False
    for piece in pieces:
        if _INTERVAL.fullmatch(piece.strip()):
            sets.append(piece.strip())
            continue
        parsed = _conjunction(piece, variable)
        if parsed is None:
            return answer if builder is None else "\\{" + builder.group(1) + "|" + answer + "\\}"
        variable, bounds = parsed
        inequality |= bounds.point is None
        sets.append(bounds.latex())
    if not inequality:
        return answer if builder is None else "\\{" + builder.group(1) + "|" + answer + "\\}"
    return "\\cup".join(sets)


def _split(text: str, separator: re.Pattern) -> list[str]:
    """Split at top-level matches of `separator`."""
    depths = top_level_depths(text)
    pieces, start = [], 0
    for match in separator.finditer(text):
        if depths[match.start()] == 0:
            pieces.append(text[start : match.start()])
            start = match.end()
    pieces.append(text[start:])
    return [p.strip(" ,") for p in pieces if p.strip(" ,")]


def _conjunction(piece: str, variable: str | None) -> tuple[str, _Bounds] | None:
    """ "x > 1 and x \\leq 4" -> (x, (1, 4]); None when it is not a condition on one variable."""
    bounds = _Bounds()
    for atom in _split(piece, _AND):
        parsed = _chain(atom, variable)
        if parsed is None:
            return None
        variable, atom_bounds = parsed
        if not _merge(bounds, atom_bounds):
            return None
    return (variable, bounds) if variable is not None else None


def _merge(into: _Bounds, other: _Bounds) -> bool:
    """Intersect two pieces when that needs no comparison of bounds (one lower, one upper at most)."""
    if other.point is not None or other.excluded is not None:
        if any(v is not None for v in (into.lower, into.upper, into.point, into.excluded)):
            return False
        into.point, into.excluded = other.point, other.excluded
        return True
    if into.point is not None or into.excluded is not None:
        return False
    if other.lower is not None:
        if into.lower is not None:
            return False
        into.lower, into.lower_closed = other.lower, other.lower_closed
    if other.upper is not None:
        if into.upper is not None:
            return False
        into.upper, into.upper_closed = other.upper, other.upper_closed
    return True


def _chain(atom: str, variable: str | None) -> tuple[str, _Bounds] | None:
    """ "a < x \\leq b", "x > a", "b \\geq x", "x = c", "x \\neq c" -> (variable, bounds)."""
    depths = top_level_depths(atom)
    relations = [m for m in _RELATION.finditer(atom) if depths[m.start()] == 0]
    if not relations or len(relations) > 2:
        return None
    terms, start = [], 0
    for match in relations:
        terms.append(atom[start : match.start()].strip())
        start = match.end()
    terms.append(atom[start:].strip())
    ops = [m.group(0) for m in relations]
    if any(not term for term in terms):
        return None
    positions = [i for i, t in enumerate(terms) if _VARIABLE.fullmatch(t) and (variable is None or t == variable)]
    if len(positions) != 1:
        return None
    at = positions[0]
    variable = terms[at]
    others = [t for i, t in enumerate(terms) if i != at]
    if any(_mentions(t, variable) for t in others):
        return None
    if len(ops) == 2:
        if at != 1 or _direction(ops[0]) is None or _direction(ops[0]) != _direction(ops[1]):
            return None
        first = _one_side(ops[0], terms[0], variable_on_right=True)
        second = _one_side(ops[1], terms[2], variable_on_right=False)
        bounds = _Bounds()
        return (variable, bounds) if _merge(bounds, first) and _merge(bounds, second) else None
    return variable, _one_side(ops[0], others[0], variable_on_right=at == 1)


def _direction(op: str) -> str | None:
    return {"<": "<", "\\leq": "<", ">": ">", "\\geq": ">"}.get(op)


def _one_side(op: str, value: str, variable_on_right: bool) -> _Bounds:
    """The bound that "value OP variable" (or "variable OP value") puts on the variable."""
    if op == "=":
        return _Bounds(point=value)
    if op == "\\neq":
        return _Bounds(excluded=value)
    closed = op in ("\\leq", "\\geq")
    upper = (op in ("<", "\\leq")) != variable_on_right  # "x < a" and "a > x" bound x from above
    if upper:
        return _Bounds(upper=value, upper_closed=closed)
    return _Bounds(lower=value, lower_closed=closed)


def _mentions(text: str, variable: str) -> bool:
    if variable.startswith("\\"):
        return re.search(re.escape(variable) + r"(?![a-zA-Z])", text) is not None
    return re.search(r"(?<![\\A-Za-z])" + re.escape(variable) + r"(?![A-Za-z])", text) is not None
