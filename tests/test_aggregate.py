import doctest

import pytest

import tts_engine.pipeline.aggregate as aggregate
from tts_engine.pipeline.aggregate import vote_classes


def test_docstring_examples_run():
    assert doctest.testmod(aggregate).failed == 0


def test_three_strategies_disagree_on_one_case():
    # class 0: three weak samples; class 1: two medium; class 2: one very confident sample.
    classes = [0, 1, 0, 2, 1, 0, -1]
    scores = [0.1, 0.6, 0.1, 0.95, 0.6, 0.1, 1.0]
    assert vote_classes("majority", classes).answer_class == 0
    assert vote_classes("weighted", classes, scores).answer_class == 1
    assert vote_classes("best_of_n", classes, scores).answer_class == 2


def test_confidence_is_winner_share_of_total_score():
    vote = vote_classes("weighted", [0, 1, 1], [0.5, 0.25, 0.25])
    assert vote.class_totals == [0.5, 0.5]
    assert vote.answer_class == 1  # tie on score -> larger count
    assert vote.confidence == pytest.approx(0.5)
    assert vote_classes("majority", [0, 1, 1, -1]).confidence == pytest.approx(2 / 3)


def test_ties_go_to_larger_count_then_first_seen():
    assert vote_classes("majority", [1, 0, 0, 1]).answer_class == 1  # class 1's first sample comes first
    assert vote_classes("weighted", [0, 1, 1], [0.4, 0.2, 0.2]).answer_class == 1
    assert vote_classes("weighted", [2, 1, 0], [0.3, 0.3, 0.3]).answer_class == 2
    assert vote_classes("best_of_n", [0, 1, 2], [0.3, 0.9, 0.9]).answer_class == 1


def test_no_answers_vote_for_nothing():
    vote = vote_classes("best_of_n", [-1, -1], [0.9, 0.8], answers=[None, None])
    assert (vote.answer, vote.answer_class, vote.confidence) == (None, -1, 0.0)
    assert vote_classes("majority", []).answer_class == -1


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="aggregation must be one of"):
        vote_classes("mode", [0])
    with pytest.raises(ValueError, match="needs scores"):
        vote_classes("weighted", [0])
    with pytest.raises(ValueError, match="scores has 1 entries but there are 2 samples"):
        vote_classes("best_of_n", [0, 0], [0.1])


def test_public_api_groups_equivalent_answers():
    from tts_engine import best_of_n, majority_vote, weighted_vote

    answers = ["\\frac{1}{2}", "0.5", "3", "3", "1/2", None]
    assert majority_vote(answers).answer == "\\frac{1}{2}"
    assert weighted_vote(answers, [0.1, 0.1, 0.9, 0.9, 0.1, 1.0]).answer == "3"
    assert best_of_n(answers, [0.1, 0.2, 0.3, 0.3, 0.99, 1.0]).answer == "\\frac{1}{2}"
