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
    verdicts = grade_answers(["2", "2", "2", "2"], ["2.0", "two", "three", None], grader="hybrid", judge=judge, pool=pool)
    assert verdicts == [True, True, False, False]
    assert judge.calls == [[("", "2", "two"), ("", "2", "three")]]  # one batched call, no empty answers


def test_hybrid_keeps_rule_yes_when_judge_says_no(pool):
    judge = FakeJudge()
    assert grade_answers(["1/2"], ["0.5"], grader="hybrid", judge=judge, pool=pool) == [True]
    assert judge.calls == []


def test_hybrid_with_undecided_judge_keeps_rule_verdict(pool):
    judge = FakeJudge(undecided={("2", "3")})
    assert grade_answers(["2"], ["3"], grader="hybrid", judge=judge, pool=pool) == [False]


def test_judge_only_mode_passes_questions(pool):
    judge = FakeJudge(accepts={("2", "two")})
    verdicts = grade_answers(["2", "1/2"], ["two", "0.5"], questions=["q1", "q2"], grader="judge", judge=judge, pool=pool)
    assert verdicts == [True, False]  # the judge alone decides, even against math
    assert judge.calls == [[("q1", "2", "two"), ("q2", "1/2", "0.5")]]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [({"grader": "llm"}, ValueError, "grader must be one of 'rule', 'hybrid', 'judge', got 'llm'"),
     ({"grader": "hybrid"}, ValueError, "grader='hybrid' needs a judge: pass judge=LLMJudge"),
     ({"grader": "judge"}, ValueError, "grader='judge' needs a judge"),
     ({"grader": "hybrid", "judge": object()}, TypeError, "judge must have a judge\\(items\\) method")],
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
