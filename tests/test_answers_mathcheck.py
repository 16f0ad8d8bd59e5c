"""The math part of a check (run in-process here): math-verify plus the structural rules."""

import pytest

from tts_engine.answers import mathcheck


@pytest.mark.parametrize(
    "gold, pred",
    [
        ("\\frac{1}{2}", "0.5"),
        ("62.5\\%", "\\frac{5}{8}"),
        ("50\\%", "50"),
        ("1,2", "2,1"),
        ("(0,1]", "(0,1]"),
        ("\\frac{-1+\\sqrt{5}}{2}", "\\frac{\\sqrt{5}-1}{2}"),
        ("x=3", "3"),
        ("1\\pm\\sqrt{5}", "1+\\sqrt{5},1-\\sqrt{5}"),
    ],
)
def test_math_verify_equal(gold, pred):
    assert mathcheck.check(gold, pred) is True


@pytest.mark.parametrize(
    "gold, pred", [("\\frac{1}{2}", "0.6"), ("(1,2)", "(2,1)"), ("x^2", "x^3"), ("(0,1]", "[0,1)")]
)
def test_math_verify_different(gold, pred):
    assert mathcheck.check(gold, pred) is False


@pytest.mark.parametrize(
    "gold, pred, verdict",
    [
        ("(-\\infty,-5)", "k<-5", True),
        ("(-\\infty,-5)", "k>-5", False),
        ("[\\frac{1}{2},8]", "0.5\\leq x\\leq8", True),
        ("[\\frac{1}{2},8]", "0.5\\leq x\\leq7", False),
        ("(3,4]", "3<\\lambda\\leq4", True),
        ("(3,4]", "3\\leq\\lambda\\leq4", False),
        ("x>2", "(2,\\infty)", True),
    ],
)
def test_inequality_as_interval(gold, pred, verdict):
    assert mathcheck.check(gold, pred) is verdict


@pytest.mark.parametrize(
    "gold, pred, verdict",
    [
        ("\\frac{600}{7}", "85.71", True),
        ("\\frac{600}{7}", "85.72", False),
        ("\\frac{1}{3}", "0.33", True),
        ("\\sqrt{2}", "1.41", True),
        ("\\sqrt{2}", "1.42", False),
        ("\\frac{1}{3}", "0.3", False),  # one digit: too coarse
        ("\\frac{1}{8}", "0.13", False),  # 1/8 = 0.125 has an exact decimal form
        ("x+\\frac{1}{3}", "0.33", False),
    ],
)
def test_rounded_decimal(gold, pred, verdict):
    assert mathcheck.check(gold, pred) is verdict


def test_rounded_decimal_both_ways():
    """A decimal reference says how it was rounded: an exact answer that rounds to it is right."""
    assert mathcheck.check("85.71", "\\frac{600}{7}") is True
    assert mathcheck.check("85.72", "\\frac{600}{7}") is False
    assert mathcheck.check("1.41", "\\sqrt{2}") is True
    assert mathcheck.check("14.14\\%", "\\frac{\\sqrt{2}}{10}") is True
    assert mathcheck.check("1.42", "\\sqrt{2}") is False


def test_protect_trailing_letters():
    assert mathcheck.protect_trailing_letters("\\frac{5}{4}k - \\frac{1}{4}t") == "\\frac{5}{4}k - \\frac{1}{4}{t}"
    assert mathcheck.protect_trailing_letters("5 m") == "5 m"  # a number with a unit
    assert mathcheck.check("\\frac{5k-t}{4}", "\\frac{5}{4}k - \\frac{1}{4}t") is True


@pytest.mark.parametrize(
    "gold, pred, verdict",
    [
        ("3x^2-6x+5", "y-2=3(x-1)^2", True),
        ("y=3x^2-6x+5", "y-2=3(x-1)^2", True),
        ("y=x", "x-y=0", True),
        ("3x^2-6x+4", "y-1=3(x-1)^2+1", False),  # not the right side alone: the equation solved for y
    ],
)
def test_solved_equation(gold, pred, verdict):
    assert mathcheck.check(gold, pred) is verdict


@pytest.mark.parametrize(
    "gold, pred, verdict",
    [
        ("f(z)=z", "f(x)=x", True),
        ("f(n)=2n+1007", "f(m)=2m+1007", True),
        ("f(n)=2n+1007", "f(m)=2m+2014", False),
        ("f(x)=x", "g(y)=y", False),  # a different function name is not a renaming
        ("\\frac{\\pi}{6}+k\\pi", "\\frac{\\pi}{6}+n\\pi", True),
        ("\\frac{\\pi}{6}+k\\pi", "\\frac{\\pi}{3}+n\\pi", False),
        ("2n", "2k", False),
    ],  # free variables of the question are not bound names
)
def test_renamed_bound_variable(gold, pred, verdict):
    assert mathcheck.check(gold, pred) is verdict


def test_unparsable_is_none():
    assert mathcheck.check("\\frac{", "1") is None
    assert mathcheck.check("1", "}{") is None


def test_injection_text_is_never_evaluated(tmp_path):
    marker = tmp_path / "ran"
    payload = f"__import__('os').system('touch {marker}')"
    for gold, pred in [(payload, "0"), ("0", payload), ("1", "eval('1')"), ("1", "exec('import os')")]:
        assert mathcheck.check(gold, pred) in (False, None)
    assert not marker.exists()
