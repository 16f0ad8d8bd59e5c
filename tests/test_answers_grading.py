"""Grading: rule, hybrid and judge modes, misconfiguration, batching and the reward function."""

import pytest

from tts_engine.answers import CheckPool, grade_answers, is_equivalent, make_reward_fn


@pytest.fixture(scope="module")
def pool():
    with CheckPool(processes=2) as pool:
        yield pool


class FakeJudge:
    """Says True exactly for the (reference, answer) pairs it is given; records what it was asked."""

    def __init__(self, accepts=(), undecided=()):
        self.accepts, self.undecided, self.calls = set(accepts), set(undecided), []

    def judge(self, items):
        self.calls.append(list(items))
        return [None if (r, a) in self.undecided else (r, a) in self.accepts for _, r, a in items]


def test_rule_verdicts(pool):
    assert is_equivalent("\\frac{1}{2}", "0.5", pool=pool) is True
    assert is_equivalent("3", "x = 3", pool=pool) is True
    assert is_equivalent("3", "4", pool=pool) is False
    assert is_equivalent("3", None, pool=pool) is False
    assert is_equivalent(None, "3", pool=pool) is None
    assert is_equivalent("3", "\\frac{", pool=pool) is None  # unparsable: undecided
    assert is_equivalent("\\frac{5}{8}", "62.5 percent", pool=pool) is True
    assert is_equivalent("0.5", "50\\%", pool=pool) is True
    assert is_equivalent("1,000,000", "1000000", pool=pool) is True
    assert is_equivalent("\\frac{\\pi}{4}", "\\dfrac{\\pi}{4} \\text{ radians}", pool=pool) is True


def test_grade_answers_in_input_order(pool):
    refs = ["1/2", "3", "(0,1]", "Monday", "5", "\\{1,2\\}"]
    answers = ["0.5", "4", "0<x\\le1", "\\text{Monday}", "", "2, 1"]
    assert grade_answers(refs, answers, pool=pool) == [True, False, True, True, False, True]


def test_hybrid_asks_judge_only_where_rule_fails(pool):
    judge = FakeJudge(accepts={("2", "two")})
    verdicts = grade_answers(
        ["2", "2", "2", "2", "2"], ["2.0", "two", "three", None, "3"], grader="hybrid", judge=judge, pool=pool
    )
    assert verdicts == [True, True, False, False, False]
    # one batched call with the text answers; no empty answers, no number the rules read as different
    assert judge.calls == [[("", "2", "two"), ("", "2", "three")]]


def test_hybrid_keeps_rule_yes_when_judge_says_no(pool):
    judge = FakeJudge()
    assert grade_answers(["1/2"], ["0.5"], grader="hybrid", judge=judge, pool=pool) == [True]
    assert judge.calls == []


def test_hybrid_with_undecided_judge_keeps_rule_verdict(pool):
    judge = FakeJudge(undecided={("2", "3")})
    assert grade_answers(["2"], ["3"], grader="hybrid", judge=judge, pool=pool) == [False]


def test_judge_only_mode_passes_questions(pool):
    judge = FakeJudge(accepts={("2", "two")})
    verdicts = grade_answers(
        ["2", "1/2"], ["two", "0.5"], questions=["q1", "q2"], grader="judge", judge=judge, pool=pool
    )
    assert verdicts == [True, False]  # the judge alone decides, even against math
    assert judge.calls == [[("q1", "2", "two"), ("q2", "1/2", "0.5")]]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"grader": "llm"}, ValueError, "grader must be one of 'rule', 'hybrid', 'judge', got 'llm'"),
        ({"grader": "hybrid"}, ValueError, "grader='hybrid' needs a judge: pass judge=LLMJudge"),
        ({"grader": "judge"}, ValueError, "grader='judge' needs a judge"),
        ({"grader": "hybrid", "judge": object()}, TypeError, "judge must have a judge\\(items\\) method"),
    ],
)
def test_misconfiguration_fails_early(kwargs, error, message):
    with pytest.raises(error, match=message):
        grade_answers(["1"], ["1"], **kwargs)
    with pytest.raises(error, match=message):
        make_reward_fn(kwargs["grader"], kwargs.get("judge"))


def test_length_mismatch_names_the_parameters(pool):
    with pytest.raises(ValueError, match="references and answers must have the same length, got 2 and 1"):
        grade_answers(["1", "2"], ["1"], pool=pool)
    with pytest.raises(ValueError, match="questions must have one entry per answer"):
        grade_answers(["1"], ["1"], questions=["a", "b"], pool=pool)


def test_reward_function(pool):
    reward = make_reward_fn("rule", pool=pool)
    assert reward("\\frac{1}{2}", "so \\boxed{0.5}", "What is half?") == 1.0
    assert reward("3", "\\boxed{4}") == 0.0
    assert reward("3", "x = 3") == 1.0
    assert reward("3", None) == 0.0
    assert reward.batch(["1", "2"], ["\\boxed{1}", "\\boxed{3}"]) == [1.0, 0.0]


def test_hybrid_reward_function(pool):
    judge = FakeJudge(accepts={("7", "seven")})
    reward = make_reward_fn("hybrid", judge, pool=pool)
    assert reward.batch(["7", "7", "7"], ["\\boxed{7}", "seven", "eight"], ["q"] * 3) == [1.0, 1.0, 0.0]


def test_trailing_variable_is_not_a_unit(pool):
    """math-verify reads "\\frac{1}{4}t" at the end of an answer as 1/4 with the unit "t" dropped."""
    from math_verify import parse

    assert "t" not in str(parse("\\boxed{\\frac{5}{4}k - \\frac{1}{4}t}")[0])  # the quirk itself
    assert is_equivalent("\\frac{5k-t}{4}", "\\frac{5}{4}k - \\frac{1}{4}t", pool=pool) is True
    assert is_equivalent("\\frac{5k-t}{4}", "\\frac{5}{4}k - \\frac{1}{4}", pool=pool) is False
    assert is_equivalent("5", "5 m", pool=pool) is True  # a lone number keeps its unit


def test_general_forms_end_to_end(pool):
    assert is_equivalent("(0, 4]", "\\{x \\mid 0 < x \\le 4\\}", pool=pool) is True
    assert is_equivalent("(-\\infty, -1] \\cup \\{3\\}", "x \\le -1 \\text{ or } x = 3", pool=pool) is True
    assert is_equivalent("(-\\infty, -1] \\cup \\{3\\}", "x \\le -1", pool=pool) is False  # a missing solution
    assert is_equivalent("\\frac{\\pi}{4}", "45^\\circ", pool=pool) is True
    assert is_equivalent("150^\\circ", "A = \\frac{5\\pi}{6}", question="Find angle A.", pool=pool) is True
    assert is_equivalent("150", "\\frac{5\\pi}{6}", question="Find angle A.", pool=pool) is True
    assert is_equivalent("150", "\\frac{5\\pi}{6}", question="Find x.", pool=pool) is False
    assert is_equivalent("1.41", "\\sqrt{2}", pool=pool) is True
    assert is_equivalent("1.42", "\\sqrt{2}", pool=pool) is False
    assert is_equivalent("3x^2 - 6x + 5", "y - 2 = 3(x-1)^2", pool=pool) is True
    assert is_equivalent("3x^2 - 6x + 5", "y - 2 = 3(x+1)^2", pool=pool) is False
    assert (
        is_equivalent(
            "[k\\pi - \\frac{\\pi}{3}, k\\pi + \\frac{\\pi}{6}], k \\in \\mathbb{Z}",
            "[n\\pi-\\frac{\\pi}{3}, n\\pi+\\frac{\\pi}{6}] (n \\in \\mathbb{Z})",
            pool=pool,
        )
        is True
    )


def test_undecided_has_a_reason_and_false_means_read_and_different(pool):
    from tts_engine.answers import grade_answers_report

    report = grade_answers_report(
        ["Alice", "3", "3", None, "Alice"], ["Alice wins the game", "\\frac{", "4", "3", "Bob"], pool=pool
    )
    assert report.verdicts == [None, None, False, None, False]
    assert report.reasons == ["text", "unreadable", None, "no reference", None]
    assert report.judged == 0


def test_hybrid_sends_undecided_and_text_like_pairs_only_and_counts_them(pool):
    from tts_engine.answers import grade_answers_report

    judge = FakeJudge(accepts={("Alice", "Alice wins the game")})
    report = grade_answers_report(
        ["Alice", "2", "Alice", "1/2", "3"],
        ["Alice wins the game", "3", "Bob", "0.5", "\\frac{"],
        grader="hybrid",
        judge=judge,
        pool=pool,
    )
    assert report.verdicts == [True, False, False, True, False]
    assert judge.calls == [[("", "Alice", "Alice wins the game"), ("", "Alice", "Bob"), ("", "3", "\\frac{")]]
    assert report.judged == 3
