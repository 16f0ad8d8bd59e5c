"""Build the answer-equivalence corpus: pairs (reference, answer, equivalent?) of answer forms that
checkers get wrong, generated from parameters and from the shared data's references, split into a
dev part and a held-out part by a fixed seed.

Every generated instance (one interval, one angle, one rounded value, one reference answer...) gives
equivalent pairs (the same value written in other ways) and hard non-equivalent pairs (off by a sign,
an endpoint, a rounding digit, a missing solution). All pairs of one instance go to the same split,
decided by a hash of the seed and the instance name, before any checking rule is written or tuned.

    python scripts/make_equivalence_corpus.py            # writes eval/equivalence_corpus/{dev,heldout}.jsonl
    python scripts/make_equivalence_corpus.py --check    # fails when the files differ from a fresh build

Values are computed with fractions.Fraction from generated integers; no text is parsed as Python.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterator

from tts_engine.inputs.problems import load_problems

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "eval" / "equivalence_corpus"
SHARED = ROOT.parent / "shared" / "data"
SEED = 17
HELDOUT_PERCENT = 30
VARIABLES = ["x", "t", "a", "m", "k", "s"]
LE, GE, GEQ = "\\le", "\\ge", "\\geq"


# Numbers as LaTeX ------------------------------------------------------------------------------


def frac(value: Fraction, command: str = "\\frac") -> str:
    """-\\frac{p}{q}, or an integer."""
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}{command}{{{abs(value.numerator)}}}{{{value.denominator}}}"


def rounded(value: Fraction, digits: int) -> str:
    """value rounded half-up to `digits` decimal places, written with exactly that many digits."""
    scaled = abs(value) * 10**digits
    whole = math.floor(scaled + Fraction(1, 2))
    text = f"{whole // 10**digits}.{whole % 10**digits:0{digits}d}"
    return ("-" if value < 0 and whole else "") + text


def truncated(value: Fraction, digits: int) -> str:
    whole = math.floor(abs(value) * 10**digits)
    return ("-" if value < 0 else "") + f"{whole // 10**digits}.{whole % 10**digits:0{digits}d}"


def bumped_last_digit(decimal: str) -> str:
    """ "12.33" -> "12.34": one unit in the last place."""
    digits = len(decimal.split(".")[1])
    step = Fraction(1, 10**digits)
    return rounded(Fraction(decimal) + (step if not decimal.startswith("-") else -step), digits)


# Instances: each yields (reference, answer, equivalent, question) ---------------------------------

Pair = tuple[str, str, bool, str]


def _pairs(
    references: list[str],
    rights: list[str],
    wrongs: list[str],
    question: str,
    rng: random.Random,
    per_instance: int = 4,
) -> list[Pair]:
    """Up to per_instance equivalent and as many non-equivalent pairs, each against a reference form."""
    out: list[Pair] = []
    for answer in rng.sample(rights, min(per_instance, len(rights))):
        reference = rng.choice([r for r in references if r != answer] or references)
        out.append((reference, answer, True, question))
    for answer in rng.sample(wrongs, min(per_instance, len(wrongs))):
        out.append((rng.choice(references), answer, False, question))
    return out


def _interval(a: str, b: str, left_closed: bool, right_closed: bool) -> str:
    return ("[" if left_closed else "(") + f"{a}, {b}" + ("]" if right_closed else ")")


def _chain(a: str, b: str, v: str, left_closed: bool, right_closed: bool, style: int) -> str:
    lo = ["\\le", "\\leq", "\\leqslant", "≤"][style % 4] if left_closed else "<"
    hi = ["\\le", "\\leq", "\\leqslant", "≤"][(style + 1) % 4] if right_closed else "<"
    return f"{a} {lo} {v} {hi} {b}"


def _interval_forms(a: str, b: str, v: str, lc: bool, rc: bool, rng: random.Random) -> list[str]:
    """One bounded interval written in every usual way."""
    ge = "\\geq" if lc else ">"
    le = "\\leq" if rc else "<"
    chain = _chain(a, b, v, lc, rc, rng.randrange(4))
    return [
        _interval(a, b, lc, rc),
        ("\\left[" if lc else "\\left(") + f"{a},{b}" + ("\\right]" if rc else "\\right)"),
        chain,
        chain.replace(" ", ""),
        f"\\{{{v} \\mid {chain}\\}}",
        f"\\{{{v}|{chain.replace(' ', '')}\\}}",
        f"\\{{ {v} : {chain} \\}}",
        f"{v} {ge} {a} \\text{{ and }} {v} {le} {b}",
        f"{v} \\in {_interval(a, b, lc, rc)}",
        f"{b} {GEQ if rc else '>'} {v} {GEQ if lc else '>'} {a}",
    ]


def intervals(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(60):
        v = rng.choice(VARIABLES)
        lo = rng.randint(-9, 5)
        hi = lo + rng.randint(1, 9)
        a, b = str(lo), str(hi)
        if rng.random() < 0.3:
            a = frac(Fraction(2 * lo + 1, 2))
        lc, rc = rng.random() < 0.5, rng.random() < 0.5
        rights = _interval_forms(a, b, v, lc, rc, rng)
        wrongs = (
            _interval_forms(a, b, v, not lc, rc, rng)[:1]
            + _interval_forms(a, b, v, lc, not rc, rng)[2:4]
            + _interval_forms(a, str(hi + 1), v, lc, rc, rng)[4:6]
            + _interval_forms(str(-lo) if lo else "1", b, v, lc, rc, rng)[6:8]
        )
        yield f"interval-{i}", _pairs(rights[:2] + rights[4:5], rights, wrongs, f"Solve for ${v}$.", rng)
    for i in range(30):  # half-lines
        v = rng.choice(VARIABLES)
        c = str(rng.randint(-9, 9))
        closed, upper = rng.random() < 0.5, rng.random() < 0.5
        rel = ("\\le" if closed else "<") if upper else ("\\ge" if closed else ">")
        interval = (
            (f"(-\\infty, {c}" + ("]" if closed else ")")) if upper else (("[" if closed else "(") + f"{c}, \\infty)")
        )
        rights = [
            interval,
            f"{v} {rel} {c}",
            f"\\{{{v} \\mid {v} {rel} {c}\\}}",
            v + rel.replace(LE, "≤").replace(GE, "≥") + c,
            f"{v} \\in {interval}",
            interval.replace("\\infty", "+\\infty") if not upper else interval.replace("(", "\\left("),
        ]
        flipped = rel.replace("\\le", "<").replace("\\ge", ">") if closed else {"<": "\\le", ">": "\\ge"}[rel]
        wrongs = [
            f"{v} {flipped} {c}",
            f"{v} {rel} {int(c) + 1}",
            f"{v} {rel} {-int(c) if int(c) else 1}",
            interval.replace(c, str(int(c) - 1), 1),
        ]
        yield f"halfline-{i}", _pairs(rights[:1], rights[1:], wrongs, f"Find the range of ${v}$.", rng)
    for i in range(40):  # unions of intervals and points
        v = rng.choice(VARIABLES)
        p = rng.randint(-8, 2)
        q = p + rng.randint(2, 6)
        closed = rng.random() < 0.5
        le = "\\le" if closed else "<"
        if rng.random() < 0.5:
            union = f"(-\\infty, {p}" + ("]" if closed else ")") + f" \\cup \\{{{q}\\}}"
            rights = [
                union,
                f"{v} {le} {p} \\text{{ or }} {v} = {q}",
                f"{v} {le} {p} or {v} = {q}",
                f"\\{{{q}\\}} \\cup (-\\infty, {p}" + ("]" if closed else ")"),
                v + le.replace(LE, "≤") + f"{p}, or {v}={q}",
            ]
            wrongs = [
                f"(-\\infty, {p}" + ("]" if closed else ")"),
                f"{v} {le} {p} \\text{{ or }} {v} = {q + 1}",
                f"{v} {'<' if closed else LE} {p} \\text{{ or }} {v} = {q}",
                f"(-\\infty, {p}" + (")" if closed else "]") + f" \\cup \\{{{q}\\}}",
            ]
        else:
            r, s = q + rng.randint(1, 3), q + rng.randint(4, 7)
            union = f"({p}, {q}) \\cup [{r}, {s})"
            rights = [
                union,
                f"{p} < {v} < {q} \\text{{ or }} {r} \\le {v} < {s}",
                f"{p}<{v}<{q} or {r}\\leq {v}<{s}",
                f"[{r}, {s}) \\cup ({p}, {q})",
                f"\\left({p},{q}\\right)\\cup\\left[{r},{s}\\right)",
            ]
            wrongs = [
                f"({p}, {q})",
                f"({p}, {q}] \\cup [{r}, {s})",
                f"{p} < {v} < {q} \\text{{ or }} {r} < {v} < {s}",
                f"({p}, {q}) \\cup [{r}, {s + 1})",
            ]
        yield f"union-{i}", _pairs(rights[:1], rights[1:], wrongs, f"Solve the inequality for ${v}$.", rng)
    for i in range(20):  # periodic families
        a, b = rng.choice([(3, 6), (4, 4), (6, 3), (12, 12), (3, 3)])
        k, n = rng.sample(["k", "n", "m"], 2)
        ref = f"[{k}\\pi - \\frac{{\\pi}}{{{a}}}, {k}\\pi + \\frac{{\\pi}}{{{b}}}], {k} \\in \\mathbb{{Z}}"
        rights = [
            f"\\left[{n}\\pi-\\frac{{\\pi}}{{{a}}},{n}\\pi+\\frac{{\\pi}}{{{b}}}\\right] ({n}\\in\\mathbb{{Z}})",
            f"[-\\frac{{\\pi}}{{{a}}} + {k}\\pi, \\frac{{\\pi}}{{{b}}} + {k}\\pi] \\quad ({k} \\in \\mathbb{{Z}})",
            f"[{k}\\pi - \\frac{{\\pi}}{{{a}}}, {k}\\pi + \\frac{{\\pi}}{{{b}}}] \\text{{ for integers }} {k}",
        ]
        wrongs = [
            f"[{k}\\pi - \\frac{{\\pi}}{{{b}}}, {k}\\pi + \\frac{{\\pi}}{{{a}}}], {k} \\in \\mathbb{{Z}}"
            if a != b
            else f"[{k}\\pi - \\frac{{\\pi}}{{{a + 1}}}, {k}\\pi + \\frac{{\\pi}}{{{b}}}], {k} \\in \\mathbb{{Z}}",
            f"[2{k}\\pi - \\frac{{\\pi}}{{{a}}}, 2{k}\\pi + \\frac{{\\pi}}{{{b}}}], {k} \\in \\mathbb{{Z}}",
            f"({n}\\pi - \\frac{{\\pi}}{{{a}}}, {n}\\pi + \\frac{{\\pi}}{{{b}}}) ({n}\\in\\mathbb{{Z}})",
        ]
        yield (
            f"periodic-{i}",
            _pairs([ref], rights, wrongs, "Find the intervals where the function is increasing.", rng),
        )


def finite_sets(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(50):
        v = rng.choice(["x", "t", "y", "z"])
        roots = rng.sample([-7, -5, -3, -2, -1, 0, 1, 2, 3, 4, 6, Fraction(1, 2), Fraction(-2, 3)], rng.randint(2, 4))
        items = [frac(r) for r in roots]
        shuffled = rng.sample(items, len(items))
        rights = [
            "\\{" + ", ".join(items) + "\\}",
            ", ".join(shuffled),
            ", ".join(f"{v} = {x}" for x in shuffled),
            " \\text{ or } ".join(f"{v}={x}" for x in shuffled),
            "\\{" + ",".join(shuffled) + "\\}",
            ", ".join(f"{v}_{j + 1} = {x}" for j, x in enumerate(shuffled)),
            " and ".join(shuffled),
        ]
        wrong_value = frac(-roots[0]) if -roots[0] not in roots else frac(roots[0] + 10)
        wrongs = [
            "\\{" + ", ".join(items[1:]) + "\\}",
            ", ".join([wrong_value] + items[1:]),
            ", ".join(f"{v} = {x}" for x in items[:-1]),
            ", ".join(items + [frac(max(roots) + 1)]),
        ]
        yield f"set-{i}", _pairs(rights[:2], rights, wrongs, f"Find all real solutions ${v}$ of the equation.", rng)


# Angles --------------------------------------------------------------------------------------

_ANGLE_QUESTIONS = [
    "In triangle $ABC$, find the measure of angle $A$.",
    "Find the angle of inclination of the line.",
    "Find the angle between the vectors $\\mathbf{a}$ and $\\mathbf{b}$.",
    "In $\\triangle ABC$, $a^2 + b^2 - c^2 = ab$. Find $C$.",
]


def _radians(degrees: Fraction) -> list[str]:
    ratio = degrees / 180
    p, q = ratio.numerator, ratio.denominator
    top = "\\pi" if p == 1 else f"{p}\\pi"
    forms = [
        f"\\frac{{{top}}}{{{q}}}" if q != 1 else top,
        f"\\dfrac{{{top}}}{{{q}}}" if q != 1 else top,
        f"\\frac{{{p}}}{{{q}}}\\pi" if q != 1 else top,
    ]
    return forms


def _degrees(degrees: Fraction) -> list[str]:
    d = frac(degrees)
    return [f"{d}^\\circ", f"{d}^{{\\circ}}", f"{d}°", f"{d} \\text{{ degrees}}", f"{d}\\degree"]


def angles(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(60):
        deg = Fraction(rng.choice([15, 18, 30, 36, 45, 60, 72, 75, 90, 105, 120, 135, 150]))
        question = rng.choice(_ANGLE_QUESTIONS)
        label = "A = " if "angle $A$" in question else ""
        rights = _degrees(deg) + [label + r for r in _radians(deg)]
        wrong_deg = deg + rng.choice([15, -15, 30]) if deg != 90 else Fraction(60)
        wrongs = [
            _degrees(180 - deg)[0] if deg != 90 else "60^\\circ",
            _radians(wrong_deg)[0],
            _degrees(wrong_deg)[1],
            _radians(deg / 2)[0],
        ]
        if rng.random() < 0.5:
            references, rights = _radians(deg)[:1], _degrees(deg)
        else:
            references, rights = _degrees(deg)[:1], [label + r for r in _radians(deg)]
        yield f"angle-{i}", _pairs(references, rights, wrongs, question, rng)
    for i in range(20):  # a bare number when the question asks for no angle is not in degrees
        deg = rng.choice([30, 45, 60, 90, 120])
        yield (
            f"angle-nodeg-{i}",
            [
                (str(deg), _radians(Fraction(deg))[0], False, "Find the value of $x$."),
                (_radians(Fraction(deg))[0], str(deg), False, "Compute $f(2)$."),
            ],
        )
    for i in range(20):  # degrees and minutes
        d, minutes = rng.randint(10, 80), rng.choice([10, 15, 20, 30, 40, 45, 50])
        value = Fraction(d) + Fraction(minutes, 60)
        mixed = f"{d}\\frac{{{(value - d).numerator}}}{{{(value - d).denominator}}}^\\circ"
        rights = [mixed, frac(value) + "^\\circ", _radians(value)[0], f"{d}^{{\\circ}}{minutes}'"]
        wrongs = [
            f"{d}^\\circ {minutes + 1}'",
            f"{d + 1}^\\circ {minutes}'",
            f"{d}.{minutes}^\\circ",
            _radians(Fraction(d))[0],
        ]
        yield f"angle-dm-{i}", _pairs([f"{d}^\\circ {minutes}'"], rights, wrongs, "Find the angle $\\theta$.", rng)


# Rounding, percentages, mixed numbers ------------------------------------------------------------


def rounding(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(70):
        q = rng.choice([3, 6, 7, 9, 11, 12, 13, 14, 15, 17, 21])
        p = rng.randint(1, 12 * q)
        value = Fraction(p, q)
        if value.denominator in (1, 2, 4, 5, 8, 10, 20, 25):
            value += Fraction(1, 3)
        digits = rng.choice([1, 2, 2, 3])
        decimal = rounded(value, digits)
        exact = [frac(value), frac(value, "\\dfrac"), f"{value.numerator}/{value.denominator}"]
        wrongs = [bumped_last_digit(decimal)]
        off_by_one = value + Fraction(1, value.denominator)
        wrongs.append(frac(off_by_one) if rounded(off_by_one, digits) != decimal else frac(value + 1))
        if truncated(value, digits) != decimal:
            wrongs.append(truncated(value, digits))
        question = "Find the value, rounded to " + (
            "one decimal place." if digits == 1 else f"{digits} decimal places."
        )
        pairs = _pairs([decimal], exact, [], question, rng, per_instance=2)
        pairs += [(decimal, w, False, question) for w in wrongs[1:2]] + [
            (w, exact[0], False, question) for w in wrongs[:1] + wrongs[2:]
        ]
        if digits >= 2:  # the answer rounded, the reference exact
            pairs.append((exact[0], rounded(value, digits + 1), True, "Find the value."))
            pairs.append((exact[0], bumped_last_digit(rounded(value, digits + 1)), False, "Find the value."))
        yield f"round-{i}", pairs
    irrational = [
        ("\\sqrt{2}", math.sqrt(2)),
        ("\\pi", math.pi),
        ("2\\sqrt{3}", 2 * math.sqrt(3)),
        ("e", math.e),
        ("\\frac{\\sqrt{5}}{2}", math.sqrt(5) / 2),
        ("\\ln 2", math.log(2)),
        ("3\\pi", 3 * math.pi),
        ("\\sqrt{10}", math.sqrt(10)),
        ("\\frac{\\pi}{3}", math.pi / 3),
        ("1+\\sqrt{2}", 1 + math.sqrt(2)),
    ]
    for i, (text, value) in enumerate(irrational):
        for digits in (2, 3):
            decimal = f"{value:.{digits}f}"
            off = f"{value + 10**-digits:.{digits}f}"
            yield (
                f"round-irr-{i}-{digits}",
                [
                    (decimal, text, True, "Find the value to the nearest hundredth."),
                    (text, decimal, True, "Find the exact value."),
                    (off, text, False, "Find the value to the nearest hundredth."),
                    (text, off, False, "Find the exact value."),
                ],
            )
    for i in range(30):  # percentages
        q = rng.choice([3, 6, 7, 9, 11, 12, 13])
        p = rng.randint(1, q - 1)
        value = Fraction(p, q)
        percent = rounded(value * 100, 2)
        rights = [frac(value), f"{frac(value * 100)}\\%", f"{percent} \\%", f"{rounded(value, 4)}"]
        wrongs = [
            f"{bumped_last_digit(percent)}\\%",
            f"{truncated(value * 100, 2)}\\%"
            if truncated(value * 100, 2) != percent
            else f"{rounded(value * 100, 1)}1\\%",
            frac(value + Fraction(1, q)),
            f"{rounded(value, 2)}\\%",
        ]
        yield f"percent-{i}", _pairs([f"{percent}\\%"], rights, wrongs, "What percentage of the total is it?", rng)
    for i in range(40):  # mixed numbers
        whole, q = rng.randint(1, 9), rng.choice([2, 3, 4, 5, 8, 16])
        p = rng.choice([n for n in range(1, q) if math.gcd(n, q) == 1])
        value = whole + Fraction(p, q)
        sign = "-" if rng.random() < 0.2 else ""
        rights = [
            f"{sign}{whole}\\frac{{{p}}}{{{q}}}",
            f"{sign}{whole}\\tfrac{p}{q}" if p < 10 and q < 10 else f"{sign}{whole} \\frac{{{p}}}{{{q}}}",
            sign + frac(value),
            sign + frac(value, "\\dfrac"),
        ]
        if 10**6 % q == 0:
            rights.append(sign + str(float(value)))
        wrongs = [
            f"{sign}\\frac{{{whole * p}}}{{{q}}}" if whole * p != whole * q + p else f"{sign}\\frac{{{p}}}{{{q}}}",
            f"{'' if sign else '-'}{whole}\\frac{{{p}}}{{{q}}}",
            f"{sign}{whole}.{p}{q}",
            f"{sign}{whole + 1}\\frac{{{p}}}{{{q}}}",
        ]
        yield f"mixed-{i}", _pairs(rights[:1], rights[1:], wrongs, "Compute the sum.", rng)


# Loose LaTeX, unicode, the trailing-letter parse quirk ----------------------------------------------

_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def loose_latex(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(40):
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        v = rng.choice(["x", "y", "n"])
        c = rng.choice([n for n in range(2, 10) if math.gcd(n, a) == 1])
        ref = f"\\frac{{{a}}}{{{c}}}"
        rights = [
            f"\\dfrac{a}{c}",
            f"\\frac {a} {c}",
            f"\\tfrac{a}{c}",
            f"{a}/{c}",
            f"$\\frac{{{a}}}{{{c}}}$",
            f"\\\\frac{{{a}}}{{{c}}}",
            f"\\frac{a}{c}",
        ]
        wrongs = [f"\\dfrac{c}{a}", f"\\frac {a + 1} {c}", f"-\\frac{a}{c}", f"{a}/{c + 1}"]
        yield f"loose-frac-{i}", _pairs([ref], rights, wrongs, "Compute.", rng, per_instance=3)
        ref = f"\\frac{{{v}+{b}}}{{{v}}}"
        rights = [
            f"\\frac{{{v}+{b}}}{v}",
            f"\\dfrac{{{v} + {b}}}{{{v}}}",
            f"({v}+{b})/{v}",
            f"1+\\frac{{{b}}}{{{v}}}",
            f"1 + \\frac{b}{v}",
        ]
        wrongs = [
            f"\\frac{{{v}-{b}}}{v}",
            f"\\frac{{{v}+{b + 1}}}{v}",
            f"1+\\frac{{{v}}}{{{b}}}",
            f"\\frac{{{v}}}{{{v}+{b}}}",
        ]
        yield f"loose-expr-{i}", _pairs([ref], rights, wrongs, "Simplify.", rng, per_instance=3)
        sq = rng.choice([2, 3, 5, 6, 7])
        ref = f"{a}\\sqrt{{{sq}}}"
        rights = [
            f"{a}\\sqrt{sq}",
            f"{a}√{sq}",
            f"{a} \\cdot \\sqrt{{{sq}}}",
            f"\\sqrt{{{a * a * sq}}}",
            f"{a}\\sqrt {sq}",
        ]
        wrongs = [f"{a}\\sqrt{sq + 1}", f"{a + 1}√{sq}", f"\\sqrt{{{a * sq}}}", f"-{a}\\sqrt{sq}"]
        yield f"loose-sqrt-{i}", _pairs([ref], rights, wrongs, "Find the length.", rng, per_instance=3)
        e = rng.randint(2, 5)
        ref = f"{v}^{{{e}}} - {b}{v} + {a}"
        sup = str(e).translate(_SUPERSCRIPTS)
        rights = [
            f"{v}{sup}−{b}{v}+{a}",
            f"{v}<sup>{e}</sup> - {b}{v} + {a}",
            f"{a} - {b}{v} + {v}^{e}",
            f"{v}^{e}-{b}\\cdot {v}+{a}",
            f"${v}^{e} - {b}{v} + {a}$",
        ]
        wrongs = [
            f"{v}{sup}+{b}{v}+{a}",
            f"{v}<sup>{e + 1}</sup> - {b}{v} + {a}",
            f"{v}^{e}-{b}{v}-{a}",
            f"{v}^{e}-{b + 1}{v}+{a}",
        ]
        yield f"loose-poly-{i}", _pairs([ref], rights, wrongs, "Expand.", rng, per_instance=3)
    comparisons = [("＞", ">"), ("＜", "<"), ("≥", "\\geq"), ("≤", "\\leq")]
    for i in range(20):
        v, c = rng.choice(VARIABLES), rng.randint(-9, 9)
        wide, tex = rng.choice(comparisons)
        flipped = {"＞": "＜", "＜": "＞", "≥": "≤", "≤": "≥"}[wide]
        yield (
            f"unicode-{i}",
            [
                (f"{v} {tex} {c}", f"{v}{wide}{c}", True, "Solve."),
                (f"{v} {tex} {c}", f"{v}{flipped}{c}", False, "Solve."),
                (f"{v} {tex} {c}", f"{v}{wide}{c + 1}", False, "Solve."),
                (f"{c}", f"{str(c).replace('-', '－')}" if c < 0 else f"＋{c}", True, "Compute."),
                (f"\\cos {v}", f"\\text{{cos}}{v}", True, "Find the derivative of $\\sin " + v + "$."),
                (f"\\cos {v}", f"-\\text{{cos}}{v}", False, "Find the derivative of $\\sin " + v + "$."),
            ],
        )
    for i in range(40):  # math-verify reads a trailing t, m, s, h... after a number as a unit
        p, q, d = rng.randint(2, 9), rng.randint(1, 9), rng.choice([2, 3, 4, 5, 7])
        u, w = rng.choice(["k", "a", "x", "n", "b"]), rng.choice(["t", "m", "s", "h", "g", "d", "c", "l"])
        ref = f"\\frac{{{p}{u}-{q}{w}}}{{{d}}}"
        rights = [
            f"\\frac{{{p}}}{{{d}}}{u} - \\frac{{{q}}}{{{d}}}{w}",
            f"\\frac{{{p}{u}}}{{{d}}}-\\frac{{{q}{w}}}{{{d}}}",
            f"-\\frac{{{q}}}{{{d}}}{w}+\\frac{{{p}}}{{{d}}}{u}",
        ]
        wrongs = [
            f"\\frac{{{p}}}{{{d}}}{u} + \\frac{{{q}}}{{{d}}}{w}",
            f"\\frac{{{p}}}{{{d}}}{u} - \\frac{{{q + 1}}}{{{d}}}{w}",
            f"\\frac{{{p}}}{{{d}}}{u} - \\frac{{{q}}}{{{d}}}",
        ]
        yield f"quirk-{i}", _pairs([ref], rights, wrongs, "Express the result in terms of the variables.", rng, 3)


# Equations, functions, named tuples, text ------------------------------------------------------------


def _poly(a: int, b: int, c: int, v: str = "x") -> str:
    out = f"{a}{v}^2" if a != 1 else f"{v}^2"
    for coef, power in ((b, v), (c, "")):
        if coef:
            out += (" + " if coef > 0 else " - ") + (f"{abs(coef)}{power}" if abs(coef) != 1 or not power else power)
    return out


def equations(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(40):
        a, h, k = rng.choice([1, 2, 3, -1, -2]), rng.randint(-4, 4), rng.randint(-5, 5)
        b, c = -2 * a * h, a * h * h + k
        expanded = _poly(a, b, c)
        vertex = f"{'' if a == 1 else '-' if a == -1 else a}(x {'-' if h >= 0 else '+'} {abs(h)})^2"
        rights = [
            f"y = {expanded}",
            f"y {'-' if k >= 0 else '+'} {abs(k)} = {vertex}",
            f"y={vertex}{k:+d}",
            expanded,
            f"f(x) = {expanded}",
        ]
        wrongs = [
            f"y = {_poly(a, b, c + 1)}",
            f"y = {_poly(a, -b, c)}" if b else f"y = {_poly(a, b, -c - 1)}",
            _poly(a, b, c - 1),
            f"y {'-' if k >= 0 else '+'} {abs(k)} = {vertex.replace('(x -', '(x +') if h > 0 else vertex + ' + 1'}",
        ]
        yield (
            f"equation-{i}",
            _pairs([expanded, f"y = {expanded}"], rights, wrongs, "Find the equation of the parabola.", rng),
        )
    for i in range(30):
        m, b = rng.randint(-5, 5) or 2, rng.randint(-9, 9)
        line = f"{m}x {'+' if b >= 0 else '-'} {abs(b)}"
        rights = [
            f"y = {line}",
            f"y={line.replace(' ', '')}",
            f"{m}x - y {'+' if b >= 0 else '-'} {abs(b)} = 0",
            f"f(x) = {line}",
            line,
        ]
        wrongs = [
            f"y = {m}x {'-' if b >= 0 else '+'} {abs(b) or 1}",
            f"y = {-m}x {'+' if b >= 0 else '-'} {abs(b)}",
            f"{m}x + y {'+' if b >= 0 else '-'} {abs(b)} = 0",
            f"f(x) = {m + 1}x {'+' if b >= 0 else '-'} {abs(b)}",
        ]
        yield f"line-{i}", _pairs([f"y = {line}", line], rights, wrongs, "Find the function.", rng)


def named_tuples(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    for i in range(40):
        names = rng.choice([("P", "Q"), ("a", "b"), ("m", "n"), ("x", "y"), ("p", "q", "r"), ("A", "B")])
        values = rng.sample(["1", "2", "-3", "\\frac{1}{2}", "5", "\\sqrt{2}", "7", "-1"], len(names))
        tup = "(" + ", ".join(values) + ")"
        keyed = ", ".join(f"{n} = {v}" for n, v in zip(names, values))
        rights = [
            f"({', '.join(names)}) = {tup}",
            keyed,
            ", ".join(reversed(keyed.split(", "))),
            f"({','.join(names)})=({','.join(values)})",
            tup,
        ]
        swapped = [values[1], values[0]] + list(values[2:])
        wrongs = [
            "(" + ", ".join(swapped) + ")",
            ", ".join(f"{n} = {v}" for n, v in zip(names, swapped)),
            f"({', '.join(names)}) = ({', '.join(values[:-1] + ['0'])})",
            tup.replace(values[0], "-" + values[0] if not values[0].startswith("-") else values[0][1:], 1),
        ]
        yield f"tuple-{i}", _pairs([tup, keyed], rights, wrongs, f"Find ${', '.join(names)}$.", rng)
    for i in range(10):
        c = rng.randint(1, 5)
        ref = f"f(n)=n+{c}, g(n)={c}"
        yield (
            f"tuple-fn-{i}",
            [
                (ref, f"(f(n), g(n)) = (n+{c}, {c})", True, "Find all functions f, g."),
                (ref, f"(f(n), g(n)) = (n+{c}, {c + 1})", False, "Find all functions f, g."),
                (ref, f"f(n) = {c} + n \\text{{ and }} g(n) = {c}", True, "Find all functions f, g."),
            ],
        )


def text_answers(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    names = ["Alice", "Bob", "Carol", "Petya", "Vasya"]
    for i in range(15):
        winner, loser = rng.sample(names, 2)
        yield (
            f"text-{i}",
            [
                (winner, f"{winner} wins the game", True, "Who has a winning strategy?"),
                (f"{winner} wins", f"\\text{{{winner}}}", True, "Who has a winning strategy?"),
                (winner, loser, False, "Who has a winning strategy?"),
                (winner, f"\\text{{{winner.lower()}}}", True, "Who has a winning strategy?"),
            ],
        )
    for i in range(10):
        n = rng.randint(2, 20)
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10 if n not in (11, 12, 13) else 0, "th")
        yield (
            f"text-ord-{i}",
            [
                (f"\\text{{the {n}{suffix} week}}", str(n), True, "In which week does it happen?"),
                (str(n), f"the {n}{suffix} week", True, "In which week does it happen?"),
                (str(n), f"the {n + 1}th week", False, "In which week does it happen?"),
            ],
        )
    for i, (yes, no) in enumerate([("Yes", "No"), ("\\text{Yes}", "\\text{No}"), ("yes", "no")]):
        yield f"text-yn-{i}", [(yes, yes.lower(), True, "Is it possible?"), (yes, no, False, "Is it possible?")]


# Shared references written in other ways ---------------------------------------------------------

_INT = re.compile(r"(?<![\\\w.])\d+(?![\w.])")


def reference_rewrites(reference: str) -> list[str]:
    """The reference written in other, equivalent ways."""
    forms = [
        f"${reference}$",
        f"\\boxed{{{reference}}}",
        reference.replace("\\frac", "\\dfrac"),
        reference.replace(",", ", "),
        f"\\({reference}\\)",
    ]
    if re.fullmatch(r"-?\d+", reference):
        n = int(reference)
        forms += [
            f"x = {reference}",
            f"{reference}.0",
            f"{n:,}" if abs(n) >= 1000 else f"{reference}.00",
            f"{reference} \\text{{ units}}",
        ]
    if "(" in reference and "\\left" not in reference:
        forms.append(reference.replace("(", "\\left(").replace(")", "\\right)"))
    m = re.fullmatch(r"(-?)\\frac\{(\d+)\}\{(\d+)\}", reference)
    if m:
        forms += [
            f"{m.group(1)}{m.group(2)}/{m.group(3)}",
            f"{m.group(1)}\\frac{m.group(2)}{m.group(3)}"
            if len(m.group(2)) == len(m.group(3)) == 1
            else f"{m.group(1)}\\tfrac{{{m.group(2)}}}{{{m.group(3)}}}",
        ]
    return [f for f in dict.fromkeys(forms) if f != reference]


def reference_perturbations(reference: str, rng: random.Random) -> list[str]:
    """Hard wrong answers: one integer off by one, the sign flipped (never the power of a unit)."""
    wrongs = []
    ints = [m for m in _INT.finditer(reference) if not reference[: m.start()].rstrip().endswith("}^")]
    if ints:
        m = rng.choice(ints)
        wrongs.append(reference[: m.start()] + str(int(m.group(0)) + 1) + reference[m.end() :])
    if re.fullmatch(r"\d[^,]*", reference) and "=" not in reference and reference.strip("0.") != "":
        wrongs.append("-" + reference if not reference.startswith("-") else reference[1:])
    return wrongs


def shared_references(rng: random.Random) -> Iterator[tuple[str, list[Pair]]]:
    files = ["math500.jsonl", "aime2024.jsonl", "amc2023.jsonl", "hardverify_math_dev.jsonl"]
    for name in files:
        path = SHARED / name
        if not path.exists():
            sys.exit(f"{path} not found: the corpus is built from the shared data's references")
        seen = set()
        for problem in load_problems(path) if name != "hardverify_math_dev.jsonl" else _hardverify(path):
            reference = (problem.reference or "").strip().strip("$").strip()
            if not reference or reference in seen or len(reference) > 80:
                continue
            seen.add(reference)
            rights, wrongs = reference_rewrites(reference), reference_perturbations(reference, rng)
            question = problem.text[:300]
            yield f"{name}-{problem.id}", _pairs([reference], rights, wrongs, question, rng, per_instance=2)


def _hardverify(path: Path):
    from types import SimpleNamespace

    for line in path.read_text().splitlines():
        item = json.loads(line)
        if item["is_equivalent"]:
            yield SimpleNamespace(id=item["id"], text=item["question"], reference=item["ground_truth"])


FAMILIES: list[Callable[[random.Random], Iterator[tuple[str, list[Pair]]]]] = [
    intervals,
    finite_sets,
    angles,
    rounding,
    loose_latex,
    equations,
    named_tuples,
    text_answers,
    shared_references,
]


def is_heldout(instance: str, seed: int = SEED) -> bool:
    """The split of an instance: a hash of (seed, instance name), not of anything a rule looks at."""
    digest = hashlib.sha256(f"{seed}:{instance}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 100 < HELDOUT_PERCENT


def build(seed: int = SEED) -> dict[str, list[dict]]:
    splits: dict[str, list[dict]] = {"dev": [], "heldout": []}
    for family in FAMILIES:
        rng = random.Random(f"{seed}:{family.__name__}")
        for instance, pairs in family(rng):
            split = "heldout" if is_heldout(instance, seed) else "dev"
            seen = set()
            for j, (reference, answer, equivalent, question) in enumerate(pairs):
                if (reference, answer) in seen or reference == answer:
                    continue
                seen.add((reference, answer))
                splits[split].append(
                    {
                        "pair_id": f"{instance}-{j}",
                        "family": family.__name__,
                        "question": question,
                        "ground_truth": reference,
                        "model_answer": answer,
                        "is_equivalent": equivalent,
                    }
                )
    return splits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true", help="fail when the files on disk differ from a fresh build")
    args = ap.parse_args(argv)
    splits = build(args.seed)
    for split, rows in splits.items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        path = args.out / f"{split}.jsonl"
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path} differs from a fresh build (seed {args.seed})")
                return 1
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        positives = sum(r["is_equivalent"] for r in rows)
        print(f"{path}: {len(rows)} pairs ({positives} equivalent, {len(rows) - positives} not)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
