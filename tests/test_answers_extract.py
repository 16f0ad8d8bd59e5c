"""extract_answer: last box, nested braces, bare \\boxed, fallback phrases, no answer, hostile input."""

import pytest

from tts_engine.answers import extract_answer


@pytest.mark.parametrize(
    "text, expected",
    [
        ("so the answer is \\boxed{5}.", "5"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("first \\boxed{1} then \\boxed{2}", "2"),
        ("\\boxed{\\frac{\\sqrt{3}}{2}} and that's it", "\\frac{\\sqrt{3}}{2}"),
        ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),  # escaped braces do not nest
        ("\\fbox{7}", "7"),
        ("\\boxed{3} ... finally \\fbox{4}", "4"),
        ("\\fbox{3} ... finally \\boxed{4}", "4"),
        ("thus \\boxed 5$.", "5"),
        ("thus $\\boxed 12.", "12"),
        ("\\boxed {x+1}", "x+1"),
        ("\\boxed{ 42 }", "42"),
    ],
)
def test_boxed(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("We get 3. The answer is 12.", "12"),
        ("The answer is 3.\nLater: the final answer is $\\frac{1}{2}$.", "\\frac{1}{2}"),
        ("Answer: B", "B"),
        ("answer: **7**", "7"),
        ("The answer is: 5\nsome trailing text", "5"),
    ],
)
def test_fallback_phrase(text, expected):
    assert extract_answer(text) == expected


def test_box_wins_over_phrase():
    assert extract_answer("\\boxed{4}. The answer is 5") == "4"


@pytest.mark.parametrize(
    "text",
    ["", "no final answer here", "\\boxed{}", "The answer is .", "to answer this we compute", None, 12],
)
def test_no_answer(text):
    assert extract_answer(text) is None


def test_unclosed_last_box_is_none():
    # a truncated sample: the final box never closes; the earlier box is not the final answer
    assert extract_answer("\\boxed{1} then \\boxed{\\frac{2}{3") is None


def test_other_commands_are_not_boxes():
    assert extract_answer("\\boxedanswer{3} answer: 4") == "4"


def test_huge_and_hostile_inputs():
    # linear scans: each of these returns at once (a quadratic scan would take minutes)
    cases = [
        "\\boxed{" * 200_000,
        "{" * 500_000 + "\\boxed{1}",
        "\\boxed{" + "{" * 40_000 + "}" * 40_000 + "}",
        "\\boxed{" + "{" * 60_000 + "}" * 60_000 + "}",  # content longer than MAX_BOX_CHARS: no answer
        "\\boxed " + "7" * 1_000_000,
        "x" * 1_000_000 + "\\boxed{9}",
        "The answer is " * 100_000,
        "\ud800\\boxed{\udfff}",
    ]
    results = [extract_answer(text) for text in cases]
    assert results[0] is None and results[1] == "1" and results[5] == "9"
    assert results[2] == "{" * 40_000 + "}" * 40_000
    assert results[3] is None
    assert results[4] == "7" * 1_000_000
    assert results[7] == "\udfff"
