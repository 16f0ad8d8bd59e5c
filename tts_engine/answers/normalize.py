"""Normalisation rules: rewrite an answer into a canonical LaTeX form before any math is done.

Each rule is a small function `str -> str` that removes one class of harmless differences between
answers written by models and by references. Every rule must preserve meaning (two answers that a
rule makes equal are equal), because answers with equal canonical keys share a class without any
math check. Rules run in the order of `RULES`.

`normalize_answer` gives the canonical LaTeX that math-verify parses; `canonical_key` adds the
order of unordered lists and is what answers are bucketed by.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .latex import encloses_whole, matching_brace, rewrite_command_args, split_top_level, top_level_depths
from .sets import conditions_to_sets

MAX_ANSWER_CHARS = 1000
"""Answers longer than this (after stripping) are not normalised nor parsed: they are compared by
exact string only and reported "unparsable". It bounds the time and memory of every rule and check;
real final answers are far shorter (the longest reference in MATH500 has 60 characters)."""

TEXT_COMMANDS = (
    "text",
    "textrm",
    "textbf",
    "textit",
    "textnormal",
    "textsf",
    "texttt",
    "mbox",
    "mathrm",
    "mathit",
    "mathbf",
    "mathsf",
    "operatorname",
    "textup",
)
WORD_TEXT_COMMANDS = ("text", "textrm", "textbf", "textit", "textnormal", "textsf", "texttt", "mbox", "textup")


# 0. Characters: unicode symbols, HTML superscripts, doubled backslashes, brace-less arguments --------

_SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_RUN = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")
_SUBSCRIPT_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_SUBSCRIPT_RUN = re.compile(r"[₀₁₂₃₄₅₆₇₈₉]+")
_HTML_SCRIPT = re.compile(r"<(sup|sub)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_UNICODE_SYMBOLS = {
    "∈": r"\in ",
    "∉": r"\notin ",
    "∪": r"\cup ",
    "∩": r"\cap ",
    "±": r"\pm ",
    "∓": r"\mp ",
    "∀": r"\forall ",
    "ℝ": r"\mathbb{R}",
    "ℤ": r"\mathbb{Z}",
    "ℕ": r"\mathbb{N}",
    "ℚ": r"\mathbb{Q}",
    "ℂ": r"\mathbb{C}",
    "α": r"\alpha ",
    "β": r"\beta ",
    "γ": r"\gamma ",
    "θ": r"\theta ",
    "φ": r"\varphi ",
    "λ": r"\lambda ",
    "μ": r"\mu ",
    "σ": r"\sigma ",
    "ω": r"\omega ",
    "Δ": r"\Delta ",
    "′": "'",
    "″": "''",
    "⩽": r"\leq ",
    "⩾": r"\geq ",
    "÷": r"\div ",
    "∣": "|",
    "：": ":",
    "　": " ",
}
_UNICODE_SYMBOL = re.compile("|".join(map(re.escape, _UNICODE_SYMBOLS)))


def unicode_symbols(answer: str) -> str:
    """Unicode and HTML spellings of LaTeX: full-width "＞", "x²", "x<sup>2</sup>", "∈", "ℤ", "θ" ->
    ">", "x^{2}", "x^{2}", "\\in", "\\mathbb{Z}", "\\theta".

    Full-width forms (U+FF01-FF5E) are the ASCII characters in another width; a superscript run is a
    power (not a digit: NFKC would turn "x²" into "x2").
    """
    if "<" in answer:
        answer = _HTML_SCRIPT.sub(lambda m: ("^{" if m.group(1).lower() == "sup" else "_{") + m.group(2) + "}", answer)
    if answer.isascii():
        return answer
    answer = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + m.group(0).translate(_SUPERSCRIPT_DIGITS) + "}", answer)
    answer = _SUBSCRIPT_RUN.sub(lambda m: "_{" + m.group(0).translate(_SUBSCRIPT_DIGITS) + "}", answer)
    answer = "".join(chr(ord(ch) - 0xFEE0) if "\uff01" <= ch <= "\uff5e" else ch for ch in answer)
    return _UNICODE_SYMBOL.sub(lambda m: _UNICODE_SYMBOLS[m.group(0)], answer)


_DOUBLED_BACKSLASH = re.compile(r"\\\\(?=[a-zA-Z{}()\[\]$%])")


def single_backslashes(answer: str) -> str:
    """Doubled backslashes from escaped strings: "\\\\frac{1}{2}" -> "\\frac{1}{2}" (not in a matrix or
    an aligned block, where "\\\\" ends a row)."""
    if "\\begin" in answer or not _DOUBLED_BACKSLASH.search(answer):
        return answer
    return _DOUBLED_BACKSLASH.sub(r"\\", answer)


_BRACELESS = re.compile(r"\\([dt]?frac|[dt]?binom|sqrt)(?![a-zA-Z])")
_TOKEN = re.compile(r"\s*(\\[a-zA-Z]+|[^\s{}\\])")


def braced_arguments(answer: str) -> str:
    """TeX's one-token arguments: "\\frac34", "\\frac{x+1}y", "\\frac 3 4", "\\sqrt2" -> "\\frac{3}{4}",
    "\\frac{x+1}{y}", "\\frac{3}{4}", "\\sqrt{2}" (an argument without braces is one character or one
    command, as TeX reads it)."""
    if not _BRACELESS.search(answer):
        return answer
    out: list[str] = []
    pos = 0
    for match in _BRACELESS.finditer(answer):
        if match.start() < pos:
            continue
        out.append(answer[pos : match.end()])
        pos = match.end()
        arguments = 1 if match.group(1) == "sqrt" else 2
        if match.group(1) == "sqrt":
            optional = re.match(r"\s*\[[^\[\]]*\]", answer[pos:])  # \sqrt[3]{x}
            if optional:
                out.append(optional.group(0))
                pos += optional.end()
        for _ in range(arguments):
            stripped = len(answer[pos:]) - len(answer[pos:].lstrip())
            if answer[pos + stripped : pos + stripped + 1] == "{":
                close = matching_brace(answer, pos + stripped)
                if close < 0:
                    break
                out.append(answer[pos : close + 1])
                pos = close + 1
                continue
            token = _TOKEN.match(answer, pos)
            if token is None:
                break
            out.append("{" + token.group(1) + "}")
            pos = token.end()
    out.append(answer[pos:])
    return "".join(out)


# 1. Delimiters and wrappers -------------------------------------------------------------------

_DELIMITERS = re.compile(r"(?<!\\)\$|\\\(|\\\)|\\\[|\\\]|\\displaystyle|\\textstyle")


def strip_delimiters(answer: str) -> str:
    """Math-mode delimiters and whole-answer boxes: "$f(x)=2x$", "\\(5\\)", "\\boxed{5}" -> the inside.

    References are often stored with `$...$` (HardVerify-Math, Olympiad sets); model answers are not.
    """
    answer = _DELIMITERS.sub(" ", answer).strip()
    while True:
        match = re.match(r"\\(?:boxed|fbox)\s*\{", answer)
        if match is None or matching_brace(answer, match.end() - 1) != len(answer) - 1:
            break
        answer = answer[match.end() : -1].strip()
    answer = re.sub(r"^(?:\\q?quad\s*)+", "", answer)
    return re.sub(r"(?:\s|\\[,;:! ]|\\q?quad)*\.?\s*$", "", answer).strip()


# 2. Thousands separators ----------------------------------------------------------------------

_GROUPED = re.compile(r"(?<![\d.])(\d{1,3})((?:(?:\{,\}|\\,|\\!|\\ )\d{3})+)(?![\d])")
_PLAIN_GROUPED = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def join_thousands(answer: str) -> str:
    """Digit groups: "12{,}000", "12\\,000", and a whole answer "1,234,567" -> "1234567".

    `{,}` and `\\,` between groups of three digits are LaTeX's thousands separators anywhere. A plain
    comma is one only when the whole answer is a single grouped number (otherwise "(1,234)" is a pair).
    """
    answer = _GROUPED.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), answer)
    if _PLAIN_GROUPED.fullmatch(answer):
        answer = answer.replace(",", "")
    return answer


# 3. Command spellings -------------------------------------------------------------------------

_COMMAND_SPELLINGS = [
    (re.compile(r"\\[dt]frac(?![a-zA-Z])"), r"\\frac"),
    (re.compile(r"\\[dt]binom(?![a-zA-Z])"), r"\\binom"),
    (re.compile(r"\\left\.|\\right\.|\\[mb]?(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])[lr]?"), ""),
    (re.compile(r"\\(?:leqslant|leqq|le)(?![a-zA-Z])|≤"), r"\\leq "),
    (re.compile(r"\\(?:geqslant|geqq|ge)(?![a-zA-Z])|≥"), r"\\geq "),
    (re.compile(r"\\neq?(?![a-zA-Z])|≠"), r"\\neq "),
    (re.compile(r"\\(?:varnothing|emptyset)(?![a-zA-Z])|\\\{\s*\\\}|∅"), r"\\emptyset "),
    (re.compile(r"\\(?:lbrace)(?![a-zA-Z])"), r"\\{"),
    (re.compile(r"\\(?:rbrace)(?![a-zA-Z])"), r"\\}"),
    (re.compile(r"(?<!\\)\\[,;:! ]|\\q?quad(?![a-zA-Z])|~"), " "),
    (re.compile(r"[−–]"), "-"),
    (re.compile(r"×"), r"\\times "),
    (re.compile(r"[·⋅]"), r"\\cdot "),
    (re.compile(r"π"), r"\\pi "),
    (re.compile(r"∞"), r"\\infty "),
    (re.compile(r"√"), r"\\sqrt "),
    (re.compile(r"\\mid(?![a-zA-Z])"), "|"),
]


def unify_commands(answer: str) -> str:
    """One spelling per command: \\dfrac/\\tfrac -> \\frac, \\le -> \\leq, \\left( -> (, unicode
    symbols -> LaTeX, spacing commands (\\, \\; \\quad ~) -> a space.

    Display variants and spacing carry no meaning; models use them freely.
    """
    for pattern, replacement in _COMMAND_SPELLINGS:
        answer = pattern.sub(replacement, answer)
    return answer


_TEXT_FUNCTION = re.compile(
    r"\\(?:text|textrm|mathrm|operatorname|textit|mbox)\s*\{\s*"
    r"(sin|cos|tan|cot|sec|csc|log|ln|exp|lg|arcsin|arccos|arctan|sinh|cosh|tanh|max|min|gcd|lcm|det)\s*\}"
)


def text_functions(answer: str) -> str:
    """Function names written as text: "\\text{cos}x", "\\mathrm{ln}(2)" -> "\\cos x", "\\ln(2)"."""
    return _TEXT_FUNCTION.sub(lambda m: "\\" + m.group(1) + " ", answer)


# 4. Multiple-choice letters -------------------------------------------------------------------

_CHOICE = re.compile(
    r"(?:\\text(?:bf|rm)?\{\s*)?(?:(?:option|choice|answer)\s*:?\s*)?"
    r"(?:\(([A-J])\)|([A-J])(?:[).:]|\s*$))"
    r"(?:\s*\})?(?=\s|$|\\|[^\w])",
    re.IGNORECASE,
)


def choice_letter(answer: str) -> str:
    """A multiple-choice answer: "(B)", "B)", "\\textbf{(B)}", "Option B", "(B) 12" -> "B".

    Only capital letters A-J count ("(b)" may be a variable); text after "(B)" is the option's content.
    """
    match = _CHOICE.match(answer)
    if match is None:
        return answer
    letter = match.group(1) or match.group(2)
    if not letter.isupper():
        return answer
    parenthesised = match.group(1) is not None
    rest = answer[match.end() :].strip()
    if rest and not parenthesised:
        return answer
    return letter


# 5. Ordinals and degrees ----------------------------------------------------------------------

_ORDINAL = re.compile(
    r"(\d)\s*(?:\^\s*\{?\s*(?:\\(?:text|mathrm|textrm)\s*\{\s*)?(?:st|nd|rd|th)\s*\}?\s*\}?|(?:st|nd|rd|th)\b)"
)
_DEGREES = re.compile(r"(?:\{\})?\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])|(?<=[\d}])\s*\\text\{\s*degrees?\s*\}")


def strip_ordinal(answer: str) -> str:
    """Ordinal suffixes: "12th", "12^{\\mathrm{th}}", "3^{rd}" -> the number."""
    return _ORDINAL.sub(r"\1", answer)


_DEGREE_MARK = r"(?:\{\})?\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])"
_DEGREE_MINUTES = re.compile(
    r"(\d+)\s*(?:" + _DEGREE_MARK + r")\s*(\d+(?:\.\d+)?)\s*(?:'|\^\s*\{?\s*\\prime\s*\}?)(?!')"
    r"(?:\s*(\d+(?:\.\d+)?)\s*(?:''|\"|\^\s*\{?\s*\\prime\\prime\s*\}?))?"
)


def degree_minutes(answer: str) -> str:
    """Degrees, minutes and seconds: "35^\\circ 20'" -> "\\frac{106}{3}^\\circ" (exact degrees, the mark kept)."""

    def rewrite(match: re.Match) -> str:
        degrees = Fraction(match.group(1)) + Fraction(match.group(2)) / 60 + Fraction(match.group(3) or 0) / 3600
        text = (
            str(degrees.numerator)
            if degrees.denominator == 1
            else f"\\frac{{{degrees.numerator}}}{{{degrees.denominator}}}"
        )
        return text + "^\\circ"

    return _DEGREE_MINUTES.sub(rewrite, answer)


_MIXED_NUMBER = re.compile(
    r"(?:(?<=^)|(?<=[=,(\[\s]))(-?)(\d+)\s*\\frac\{(\d+)\}\{(\d+)\}(?=\s*$|\s*[,)\]^]|\s*\\%|\s*\\text|\s*°)"
)


def mixed_numbers(answer: str) -> str:
    """Mixed numbers: "3\\frac{1}{8}" -> "\\frac{25}{8}", "-2\\frac{1}{3}" -> "-\\frac{7}{3}" (a whole number
    written against a proper fraction is their sum, as in print; "2\\frac{3}{2}" is left alone)."""

    def rewrite(match: re.Match) -> str:
        sign, whole, numerator, denominator = (
            match.group(1),
            int(match.group(2)),
            int(match.group(3)),
            int(match.group(4)),
        )
        if not 0 < numerator < denominator:
            return match.group(0)
        return f"{sign}\\frac{{{whole * denominator + numerator}}}{{{denominator}}}"

    return _MIXED_NUMBER.sub(rewrite, answer)


def strip_degrees(answer: str) -> str:
    """Degree marks: "45^\\circ", "45^{\\circ}", "45°", "45\\degree" -> "45" (angles in degrees;
    references write the mark or not)."""
    return _DEGREES.sub("", answer)


_PERCENT = re.compile(
    r"(?<=[\d}])\s*(?:\\?%|\\text\{\s*(?:percent|per\s*cent|\\?%)\s*\}|(?:percent|per\s*cent)\b)", re.IGNORECASE
)


def percent_sign(answer: str) -> str:
    """One spelling of percent: "50%", "50 \\%", "50 percent", "50\\text{ percent}" -> "50\\%".

    math-verify then reads "50\\%" as 50/100, so it equals "0.5" and (as math-verify treats a
    percentage against a bare number) "50".
    """
    return _PERCENT.sub(r"\\%", answer)


# 6. Text blocks: qualifiers, connectives, units, labels ----------------------------------------

_QUALIFIER = re.compile(
    r"(?:\\(?:text|mbox|textrm|textnormal)\s*\{\s*|\s)"
    r"(?:for\s+(?:all|every|any|each|some)|for|where|when|whenever|if|with|such\s+that|provided|in\s+which)\b"
    r"|\s*\\forall(?![a-zA-Z])",
    re.IGNORECASE,
)


def drop_qualifiers(answer: str) -> str:
    """Conditions after an answer: "f(x)=x \\text{ for all } x \\in \\mathbb{R}" -> "f(x)=x".

    A qualifier ("for all", "where", "when", "if", "with", "such that") runs to the next top-level
    comma; it restates the question's domain, it is not part of the value.
    """
    for _ in range(20):  # each pass removes one qualifier; answers have few
        depths = top_level_depths(answer)
        match = next((m for m in _QUALIFIER.finditer(answer) if depths[m.start()] == 0 and m.start() > 0), None)
        if match is None:
            return answer
        end = answer.find(",", match.end())
        while end >= 0 and depths[end] != 0:
            end = answer.find(",", end + 1)
        answer = answer[: match.start()] + ("" if end < 0 else answer[end:])
    return answer


_CONNECTIVE_WORD = re.compile(r"\b(?:and|or)\b", re.IGNORECASE)
_PLAIN_CONNECTIVE = re.compile(r"(?<=[\w})\]])\s+(?:and|or)\s+(?=[-\w\\({\[])", re.IGNORECASE)


def connectives_to_commas(answer: str) -> str:
    """Lists joined by words: "1 \\text{ and } 3", "7 \\text{ goats and } 4", "x=1 or x=2" -> commas.

    A text block holding "and"/"or" separates two values; the other words in it are units or labels.
    """

    def rewrite(command: str, inner: str, before: str, after: str) -> str:
        if command in WORD_TEXT_COMMANDS and _CONNECTIVE_WORD.search(inner) and before.strip() and after.strip():
            return ", "
        return "\\" + command + "{" + inner + "}"

    answer = rewrite_command_args(answer, WORD_TEXT_COMMANDS, rewrite)
    answer = _PLAIN_CONNECTIVE.sub(", ", answer)
    return re.sub(r"(?:,\s*){2,}", ", ", answer)


_KEY_FOLLOWS = re.compile(r"^\s*(?:=|:)")
_POWER_AFTER = re.compile(r"^\s*\^\s*(?:\{[^{}]*\}|\d)")


def text_blocks(answer: str) -> str:
    """\\text{...} and friends: units and words around a value are dropped; a label before
    "=" or ":" and a whole-text answer ("\\text{Monday}") keep their words.

    "\\dfrac{41}{12} \\text{ km}" -> "\\frac{41}{12}"; "5 \\text{ cm}^2" -> "5"; "\\text{Monday}" ->
    "Monday"; "\\mathrm{e}" -> "e" (one-letter \\mathrm is a symbol, not a word).
    """
    stripped = rewrite_command_args(answer, TEXT_COMMANDS, lambda c, inner, b, a: "")
    has_math = bool(re.search(r"[\w\\]", stripped))

    def rewrite(command: str, inner: str, before: str, after: str) -> str:
        words = inner.strip()
        if command not in WORD_TEXT_COMMANDS and len(re.sub(r"\s", "", words)) <= 1:
            return words  # \mathrm{e}, \mathbf{v}: a symbol
        if command in ("operatorname",):
            return "\\operatorname{" + inner + "}"
        if not has_math or _KEY_FOLLOWS.match(after) or not re.search(r"[A-Za-z]", words) or re.search(r"\d", words):
            return " " + words + " "
        return " \x00 "  # a unit or descriptive word: removed below with any power after it

    answer = rewrite_command_args(answer, TEXT_COMMANDS, rewrite)
    answer = re.sub(r"\x00\s*(?:\^\s*(?:\{[^{}]*\}|\d))?", "", answer)
    return re.sub(r"\^\s*\{\s*\}", "", answer)


_UNIT_WORDS = (
    "cm|mm|km|kg|mg|ml|mL|sec|secs|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|"
    "degrees?|deg|dollars?|cents?|units?|inch(?:es)?|feet|foot|ft|yards?|miles?|mph|meters?|metres?|"
    "grams?|kilograms?|pounds?|lbs?|liters?|litres?|square\\s+\\w+|sq\\s*\\w+|cubic\\s+\\w+|"
    "km/h|m/s|people|persons?|students?|ways?|times|points?"
)
_PLAIN_UNIT = re.compile(r"(?<=[\d}])\s*(?:" + _UNIT_WORDS + r")(?:\s*\^\s*(?:\{\d\}|\d))?(?=\s*(?:,|$))")
_CURRENCY = re.compile(r"\\\$|(?<![\w\\])USD\b|€|£")


def plain_units(answer: str) -> str:
    """Units written without \\text after a number: "5 cm", "12 dollars", "\\$5" -> the number.

    Only words of two or more letters from a fixed list: a single letter after a number ("2 m") may
    be a variable.
    """
    answer = _CURRENCY.sub("", answer)
    return _PLAIN_UNIT.sub("", answer)


# 7. Labels, set membership, matrices, set braces -----------------------------------------------

_LABEL = re.compile(r"^([A-Za-z][A-Za-z ]*?[A-Za-z](?:\s*\d+)?)\s*:\s*(?=\S)")
_MEMBERSHIP = re.compile(r"^\s*(?:[A-Za-z]|\\[a-zA-Z]+)(?:_\{?\w+\}?)?\s*\\in(?![a-zA-Z])\s*")


def labels_to_keys(answer: str) -> str:
    """Labelled values: "Minimum: 1, Maximum: 3" -> "Minimum=1, Maximum=3" (then compared like
    assignments "x=1": by key when both answers have the same keys, by value otherwise)."""
    items = split_top_level(answer)
    return ", ".join(_LABEL.sub(lambda m: re.sub(r"\s+", "", m.group(1)) + "=", item) for item in items)


_PARAMETER_DOMAIN = re.compile(
    r"\s*\(?\s*(?:[A-Za-z]|\\[a-zA-Z]+)\s*\\in\s*\\mathbb\s*\{?\s*[ZN]\s*\}?(?:\s*\^\s*\{?\s*[+*]\s*\}?)?\s*\)?\s*$"
)


def drop_parameter_domains(answer: str) -> str:
    """The declaration of an integer parameter: "[k\\pi, k\\pi + 1], k \\in \\mathbb{Z}" and
    "x = 2n\\pi \\ (n \\in \\mathbb{Z})" -> the family alone (the parameter is a bound name).

    Only a domain of integers after a value: "x \\in \\mathbb{Z}" alone is the answer and stays.
    """
    items = split_top_level(answer)
    kept = []
    for item in items:
        stripped = _PARAMETER_DOMAIN.sub("", item) if len(items) == 1 or kept else item
        if stripped.strip() and not (kept and _PARAMETER_DOMAIN.fullmatch(item)):
            kept.append(stripped.strip() if _PARAMETER_DOMAIN.search(item) and stripped.strip() else item)
        elif not kept:
            kept.append(item)
    return ", ".join(kept)


def strip_membership(answer: str) -> str:
    """ "x \\in [-2, 7]" -> "[-2, 7]": the variable named before \\in is not part of the answer."""
    return ", ".join(_MEMBERSHIP.sub("", item) for item in split_top_level(answer))


_MATRIX = re.compile(r"\\begin\{([pbBvV]?matrix|array)\}(?:\{[^{}]*\})?(.*?)\\end\{\1\}", re.DOTALL)


def vectors_to_tuples(answer: str) -> str:
    """A one-column or one-row matrix is a vector: "\\begin{pmatrix} -7 \\\\ 16 \\end{pmatrix}" -> "(-7,16)".

    Vector answers are written either way; matrices with several rows and columns stay matrices.
    """

    def rewrite(match: re.Match) -> str:
        rows = [r.strip() for r in re.split(r"\\\\", match.group(2)) if r.strip()]
        cells = [[c.strip() for c in row.split("&")] for row in rows]
        if len(rows) > 1 and all(len(row) == 1 for row in cells):
            return "(" + ", ".join(row[0] for row in cells) + ")"
        if len(rows) == 1 and len(cells[0]) > 1:
            return "(" + ", ".join(cells[0]) + ")"
        return match.group(0)

    return _MATRIX.sub(rewrite, answer)


def unwrap_set_braces(answer: str) -> str:
    """A whole answer "\\{1, 2\\}" is the list "1, 2" (an unordered list of solutions either way).

    Set-builder notation ("\\{x | x > 0\\}") is left alone.
    """
    if encloses_whole(answer, "\\{", "\\}") and "|" not in answer:
        inner = answer[2:-2].strip()
        if inner:
            return inner
    return answer


# 8. Whitespace --------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_REMOVABLE_SPACE = re.compile(r"(?<![A-Za-z]) | (?![A-Za-z])")


def collapse_whitespace(answer: str) -> str:
    """Spaces only where they separate two letters ("\\pi r"); everywhere else they carry nothing."""
    answer = _SPACE.sub(" ", answer).strip()
    answer = _REMOVABLE_SPACE.sub("", answer)
    return answer.strip(" ,")


RULES = (
    single_backslashes,
    unicode_symbols,
    strip_delimiters,
    vectors_to_tuples,
    join_thousands,
    unify_commands,
    braced_arguments,
    text_functions,
    choice_letter,
    strip_ordinal,
    degree_minutes,
    mixed_numbers,
    strip_degrees,
    percent_sign,
    drop_qualifiers,
    drop_parameter_domains,
    conditions_to_sets,
    connectives_to_commas,
    text_blocks,
    plain_units,
    labels_to_keys,
    strip_membership,
    strip_delimiters,
    unwrap_set_braces,
    collapse_whitespace,
)
"""The normalisation pipeline, in order."""


def normalize_answer(answer: str) -> str:
    """Canonical LaTeX of an answer (all of RULES). Answers over MAX_ANSWER_CHARS come back stripped only."""
    answer = answer.strip()
    if len(answer) > MAX_ANSWER_CHARS:
        return answer
    for rule in RULES:
        answer = rule(answer)
    return answer


def canonical_key(answer: str) -> str:
    """Bucket key: the normalised answer with the items of a top-level list sorted."""
    return key_of_normalized(normalize_answer(answer))


def key_of_normalized(normalized: str) -> str:
    """canonical_key for an answer that is already normalised."""
    if len(normalized) > MAX_ANSWER_CHARS:
        return normalized
    items = split_top_level(normalized)
    return ",".join(sorted(items)) if len(items) > 1 else normalized
