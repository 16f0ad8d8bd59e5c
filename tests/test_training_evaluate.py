import pytest

from tts_engine.training.evaluate import (ScoredSample, auroc, balanced_accuracy, best_of_n, strategy_accuracy,
                                          verifier_metrics, vote)
from tts_engine.training.task import first_per_level


def s(key, correct, v, lik=0.5):
    return ScoredSample(key, correct, {"yes_no": v, "vocab": v / 2, "likelihood": lik}, 10)


def test_vote_majority_weighted_and_ties():
    samples = [s("3", False, 0.1), s("5", True, 0.9), s("3", False, 0.2), s(None, False, 1.0)]
    assert vote(samples, None) == "3"  # 2 votes vs 1; the unanswered sample votes for nothing
    assert vote(samples, "yes_no") == "5"  # 0.9 > 0.3
    assert vote([s("1", False, 0.5), s("2", True, 0.5)], None) == "1"  # tie: first seen
    assert vote([s("1", False, 0.5), s("2", True, 0.25), s("2", True, 0.25)], "yes_no") == "2"  # tie: larger count
    assert vote([s(None, False, 1.0)], None) is None
    assert best_of_n(samples, "yes_no") is None  # the top-scored sample has no answer
    assert best_of_n(samples[:3], "yes_no") == "5"


def test_strategy_accuracy_over_disjoint_subsets():
    good = [s("5", True, 0.9), s("3", False, 0.1), s("3", False, 0.1), s("5", True, 0.9)]
    bad = [s("3", False, 0.1), s("3", False, 0.1), s("5", True, 0.9), s("7", False, 0.1)]
    table = strategy_accuracy([good + bad], ["5"], sizes=(4, 8))
    assert table["pass@N (oracle)"][4] == 1.0
    assert table["majority"][4] == 0.5  # first subset: tie 5/3 -> first seen "5"; second: "3"
    assert table["weighted (yes_no)"][4] == 1.0
    assert table["majority"][8] == 0.0  # "3" has 4 of 8
    assert table["best-of-N (yes_no)"][8] == 1.0


def test_auroc_and_balanced_accuracy():
    assert auroc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5], [True, False]) == 0.5
    assert auroc([0.3, 0.7, 0.5], [True, True, False]) == pytest.approx(0.5)
    assert auroc([0.3], [True]) is None
    assert balanced_accuracy([0.9, 0.4, 0.2, 0.6], [True, True, False, False]) == 0.5


def test_verifier_metrics_pooled_and_within():
    rows = [[s("1", True, 0.9), s("2", False, 0.6)], [s("1", True, 0.4), s("2", False, 0.1)], [s("1", True, 0.3)]]
    m = verifier_metrics(rows)["yes_no"]
    assert m["auroc_within"] == 1.0 and m["problems_with_both"] == 2
    assert m["auroc"] == pytest.approx(4 / 6)  # pooled: 0.4 and 0.3 lose to the wrong 0.6


def test_first_per_level():
    records = [{"level": 1, "i": 0}, {"level": 2, "i": 1}, {"level": 1, "i": 2}, {"level": 1, "i": 3}]
    assert [r["i"] for r in first_per_level(records, 2)] == [0, 1, 2]


def test_markdown_orders_sizes_numerically_after_a_json_round_trip():
    import json

    from tts_engine.training.evaluate import to_markdown

    rows = [[s("1", True, 0.9), s("2", False, 0.1)] * 8]
    report = {"pass@1": 0.5, "pass@1_by_level": {"L1": 0.5}, "problems": 1, "n": 16,
              "strategies": strategy_accuracy(rows, ["1"], sizes=(4, 16)), "verifier": verifier_metrics(rows)}
    text = to_markdown(json.loads(json.dumps(report)))
    assert "| strategy | N=4 | N=16 |" in text
    assert text == to_markdown(report)
