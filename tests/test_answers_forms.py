"""The general answer forms, one rule at a time: characters, brace-less arguments, mixed numbers,
degrees, parameter domains, sets written as conditions, rounding, angles, tuples and function values."""

from fractions import Fraction

import pytest

from tts_engine.answers.forms import (
    angle_forms,
    answer_form,
    asks_for_angle,
    comparison_pair,
    quick_verdict,
    rounded_equal,
)
from tts_engine.answers.normalize import (
    braced_arguments,
    degree_minutes,
    drop_parameter_domains,
    mixed_numbers,
    normalize_answer,
    single_backslashes,
    unicode_symbols,
)
from tts_engine.answers.sets import conditions_to_sets


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x²+1", "x^{2}+1"),
        ("x<sup>2</sup>", "x^{2}"),
        ("a<sub>n</sub>", "a_{n}"),
        ("x＞3", "x>3"),
        ("x ∈ ℤ", "x \\in  \\mathbb{Z}"),
        ("2⁻¹", "2^{-1}"),
        ("θ", "\\theta "),
        ("（1，2）", "(1,2)"),
    ],
)
def test_unicode_symbols(text, expected):
    assert unicode_symbols(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\\frac34", "\\frac{3}{4}"),
        ("\\frac{x+1}y", "\\frac{x+1}{y}"),
        ("\\frac 3 4", "\\frac{3}{4}"),
        ("\\sqrt2", "\\sqrt{2}"),
        ("\\frac\\pi2", "\\frac{\\pi}{2}"),
        ("\\sqrt[3]2", "\\sqrt[3]{2}"),
        ("\\frac{1}{2}", "\\frac{1}{2}"),
        ("\\sqrt{x}+\\frac{", "\\sqrt{x}+\\frac{"),  # unbalanced: left as it is
    ],
)
def test_braced_arguments_read_one_token_as_tex_does(text, expected):
    assert braced_arguments(text) == expected


def test_single_backslashes_keep_matrix_rows():
    assert single_backslashes("\\\\frac{1}{2}") == "\\frac{1}{2}"
    assert single_backslashes("\\begin{pmatrix}1\\\\2\\end{pmatrix}") == "\\begin{pmatrix}1\\\\2\\end{pmatrix}"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("3\\frac{1}{8}", "\\frac{25}{8}"),
        ("-2\\frac{1}{3}", "-\\frac{7}{3}"),
        ("x=1\\frac{1}{2}", "x=\\frac{3}{2}"),
        ("2\\frac{3}{2}", "2\\frac{3}{2}"),  # not a proper fraction: a product, left alone
        ("2\\frac{1}{2}x", "2\\frac{1}{2}x"),  # inside an expression: left alone
    ],
)
def test_mixed_numbers(text, expected):
    assert mixed_numbers(text) == expected


def test_degree_minutes_to_exact_degrees():
    assert degree_minutes("35^\\circ 20'") == "\\frac{106}{3}^\\circ"
    assert degree_minutes("10°30'") == "\\frac{21}{2}^\\circ"
    assert degree_minutes("1^{\\circ}0'36''") == "\\frac{101}{100}^\\circ"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[k\\pi, k\\pi+1], k \\in \\mathbb{Z}", "[k\\pi, k\\pi+1]"),
        ("2n\\pi (n\\in\\mathbb{Z})", "2n\\pi"),
        ("x \\in \\mathbb{Z}", "x \\in \\mathbb{Z}"),  # alone it is the answer
    ],
)
def test_drop_parameter_domains(text, expected):
    assert drop_parameter_domains(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0<x\\leq 4", "(0,4]"),
        ("x\\leq -1 \\text{ or } x=3", "(-\\infty,-1]\\cup\\{3\\}"),
        ("2<t\\leq 5 or 7\\leq t<9", "(2,5]\\cup[7,9)"),
        ("x>1 \\text{ and } x\\leq 4", "(1,4]"),
        ("5\\geq x>1", "(1,5]"),
        ("\\{x | 0<x\\leq 4\\}", "(0,4]"),
        ("\\{x : x>2\\}", "(2,\\infty)"),
        ("x\\neq 2", "(-\\infty,2)\\cup(2,\\infty)"),
        ("x<1, x>3", "(-\\infty,1)\\cup(3,\\infty)"),
        # not a condition on one variable: unchanged
        ("x=1, x=2", "x=1, x=2"),
        ("a<b", "a<b"),
        ("x<1, y>2", "x<1, y>2"),
        ("1<x<y", "1<x<y"),
        ("x>1 and x>2", "x>1 and x>2"),
        ("1<x>2", "1<x>2"),
    ],
)
def test_conditions_to_sets(text, expected):
    assert conditions_to_sets(text) == expected


def test_set_forms_normalise_to_one_interval():
    forms = [
        "(0, 4]",
        "\\{x \\mid 0 < x \\le 4\\}",
        "\\{x|0<x\\leqslant 4\\}",
        "0 < x ≤ 4",
        "x > 0 \\text{ and } x \\leq 4",
        "x \\in (0, 4]",
        "\\left( 0, 4 \\right]",
        "4 \\geq x > 0",
    ]
    assert {answer_form(f).key for f in forms} == {"(0,4]"}


@pytest.mark.parametrize(
    "reference, answer, expected",
    [
        ((Fraction(1233, 100), 2), (Fraction(37, 3), None), True),  # 12.33 vs 37/3
        ((Fraction(1234, 100), 2), (Fraction(37, 3), None), False),  # off by one in the last digit
        ((Fraction(1, 3), None), (Fraction(33, 100), 2), True),  # a rounded answer for a value with no finite decimal
        ((Fraction(1, 8), None), (Fraction(13, 100), 2), False),  # 1/8 = 0.125 exactly: 0.13 is wrong
        ((Fraction(1, 3), None), (Fraction(3, 10), 1), False),  # one digit is too loose for an answer
        ((Fraction(666, 1000), 3), (Fraction(2, 3), None), False),  # truncated, not rounded
    ],
)
def test_rounded_equal(reference, answer, expected):
    assert rounded_equal(reference, answer) is expected


@pytest.mark.parametrize(
    "reference, answer, expected",
    [
        ("14.29\\%", "\\frac{1}{7}", True),
        ("14.28\\%", "\\frac{1}{7}", False),
        ("3\\frac{1}{8}", "3.125", True),
        ("3\\frac{1}{8}", "\\frac{3}{8}", False),
        ("12.33", "\\dfrac{37}{3}", True),
        ("0.67", "\\frac{2}{3}", True),
        ("0.66", "\\frac{2}{3}", False),
    ],
)
def test_rounding_and_mixed_numbers_without_math(reference, answer, expected):
    assert quick_verdict(answer_form(reference), answer_form(answer)) is expected


def test_angles_convert_only_with_a_degree_mark_or_an_angle_question():
    assert asks_for_angle("In triangle ABC, find angle A.") and not asks_for_angle("Find x.")
    ref, ans = angle_forms(answer_form("45^\\circ"), answer_form("\\frac{\\pi}{4}"), angle_question=False)
    assert quick_verdict(ref, ans) is True or comparison_pair(ref, ans) == ("\\frac{1\\pi}{4}", "\\frac{\\pi}{4}")
    ref, ans = angle_forms(answer_form("45"), answer_form("\\frac{\\pi}{4}"), angle_question=False)
    assert (ref.key, ans.key) == ("45", "\\frac{\\pi}{4}")  # "find x": two different numbers
    ref, ans = angle_forms(answer_form("150"), answer_form("A = \\frac{5\\pi}{6}"), angle_question=True)
    assert ref.key == "\\frac{5\\pi}{6}"
    ref, ans = angle_forms(answer_form("35^\\circ 20'"), answer_form("\\frac{53\\pi}{270}"), angle_question=False)
    assert ref.key == "\\frac{53\\pi}{270}"


def test_named_tuples_and_function_values():
    assert comparison_pair(answer_form("(5, 1)"), answer_form("A = 5, B = 1")) == ("(5,1)", "(5,1)")
    assert comparison_pair(answer_form("(P, Q) = (1, 2)"), answer_form("(2, 1)")) == ("(1,2)", "(2,1)")
    assert comparison_pair(answer_form("2x+1"), answer_form("f(x) = 2x+1")) == ("2x+1", "2x+1")
    assert answer_form("(f(n), g(n)) = (n, 1)").key == answer_form("f(n)=n, g(n)=1").key


def test_sentences_are_undecided_single_words_are_not():
    assert quick_verdict(answer_form("Alice"), answer_form("Alice wins the game")) is None
    assert quick_verdict(answer_form("Alice"), answer_form("Bob")) is False
    assert answer_form("the 7th week").prose and not answer_form("\\sin x + \\cos x").prose


def test_normalize_is_idempotent_on_new_forms():
    for text in [
        "x \\le -1 \\text{ or } x = 3",
        "3\\frac{1}{8}",
        "\\frac34",
        "x²",
        "[k\\pi, k\\pi+1], k \\in \\mathbb{Z}",
    ]:
        once = normalize_answer(text)
        assert normalize_answer(once) == once
