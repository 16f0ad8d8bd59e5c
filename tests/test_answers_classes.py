"""Answer classes: equivalent answers share a class, without a math check per pair."""

import pytest

from tts_engine.answers import CheckPool, group_answers, group_answers_batch


@pytest.fixture(scope="module")
def pool():
    with CheckPool(processes=2) as pool:
        yield pool


def test_half_in_three_forms(pool):
    classes = group_answers(["1/2", "0.5", "\\frac{1}{2}", "\\dfrac12", "2"], pool=pool)
    assert classes.class_ids == [0, 0, 0, 0, 1]
    assert classes.representatives == ["1/2", "2"]
    assert classes.statuses == ["ok"] * 5


def test_no_answer_votes_for_nothing(pool):
    classes = group_answers([None, "", "  ", "3", None], pool=pool)
    assert classes.class_ids == [-1, -1, -1, 0, -1]
    assert classes.statuses == ["no_answer", "no_answer", "no_answer", "ok", "no_answer"]
    assert classes.sizes() == [1]


def test_ids_in_order_of_first_appearance(pool):
    classes = group_answers(["7", "5", "7", "0.5", "5", "\\frac{1}{2}"], pool=pool)
    assert classes.class_ids == [0, 1, 0, 2, 1, 2]
    assert classes.members(1) == [1, 4]
    assert classes.sizes() == [2, 2, 2]


def test_sets_and_lists_ignore_order(pool):
    classes = group_answers(["\\{1,2\\}", "\\{2,1\\}", "1, 2", "2,1", "\\{1,3\\}"], pool=pool)
    assert classes.class_ids == [0, 0, 0, 0, 1]


def test_tuples_keep_order(pool):
    classes = group_answers(["(1,2)", "(2,1)", "(1, 2)"], pool=pool)
    assert classes.class_ids == [0, 1, 0]


def test_intervals(pool):
    classes = group_answers(["(0,1]", "(0, 1]", "0 < x \\leq 1", "[0,1)", "\\left(0, 1\\right]"], pool=pool)
    assert classes.class_ids == [0, 0, 0, 1, 0]


def test_text_answers(pool):
    classes = group_answers(["Monday", "\\text{Monday}", "monday", "Tuesday", "\\text{Mondya}"], pool=pool)
    assert classes.class_ids == [0, 0, 0, 1, 2]
    assert classes.math_checks == 0  # words are compared as words, never as products of symbols


def test_choice_letters(pool):
    classes = group_answers(["(B)", "B", "\\textbf{(B)}", "C", "b"], pool=pool)
    assert classes.class_ids[:4] == [0, 0, 0, 1]
    assert classes.class_ids[4] == 2  # lower-case b is a variable, not choice B


def test_equal_strings_need_no_math(pool):
    answers = ["42"] * 30 + ["\\boxed{42}"] * 10 + ["x = 42"] * 10 + [None] * 14
    classes = group_answers(answers, pool=pool)
    assert set(classes.class_ids[:50]) == {0} and classes.num_classes == 1
    assert classes.math_checks == 0


def test_math_checks_grow_with_forms_not_answers(pool):
    answers = ["1/2", "0.5", "\\frac{1}{2}", "3", "4"] * 13  # 65 answers, 5 distinct forms
    classes = group_answers(answers, pool=pool)
    assert classes.num_classes == 3
    assert classes.math_checks <= 5 * 4 // 2


def test_unparsable_answer_is_its_own_class(pool):
    classes = group_answers(["\\frac{", "\\frac{", "5", "\\frac{"], pool=pool)
    assert classes.class_ids == [0, 0, 1, 0]
    assert classes.statuses == ["unparsable", "unparsable", "ok", "unparsable"]


def test_too_long_answer_is_unparsable_but_grouped_by_string(pool):
    long = "1+" * 600 + "1"
    classes = group_answers([long, "3", long], pool=pool)
    assert classes.class_ids == [0, 1, 0]
    assert classes.statuses[0] == "unparsable"


def test_batch_matches_one_by_one(pool):
    problems = [["1/2", "0.5", "3"], ["Monday", "\\text{Monday}"], [None, "x=2", "2", "4"], []]
    batched = group_answers_batch(problems, pool=pool)
    assert [c.class_ids for c in batched] == [group_answers(p, pool=pool).class_ids for p in problems]
    assert batched[3].class_ids == [] and batched[3].num_classes == 0


def test_bad_timeout_is_rejected(pool):
    with pytest.raises(ValueError, match="timeout must be > 0, got 0"):
        group_answers(["1"], timeout=0, pool=pool)


def test_hopeless_answers_never_reach_a_worker(pool):
    before = pool.stats.requests
    classes = group_answers(["10^{10^{10^{10}}}", "10^{10^{10^{10}}}", "{" * 100 + "}" * 100], pool=pool)
    assert classes.class_ids == [0, 0, 1]
    assert classes.statuses == ["unparsable"] * 3
    assert pool.stats.requests == before
