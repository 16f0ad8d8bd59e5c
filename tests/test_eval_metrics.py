"""Efficiency ratio on constructed curves; AUROC, accuracy per class and calibration against hand computations."""

import math

import numpy as np
import pytest

from tts_engine.eval.curves import compute_curves, efficiency_table
from tts_engine.eval.efficiency import efficiency_ratio, first_reach
from tts_engine.eval.report import format_verifier_groups
from tts_engine.eval.synthetic import records_from_arrays, synthetic_records
from tts_engine.eval.table import table_from_records
from tts_engine.eval.verifier_metrics import (
    auroc,
    average_ranks,
    reliability,
    score_metrics,
    verifier_group_metrics,
    verifier_metrics,
)


def test_crossing_interpolates_on_log2_compute():
    # target 0.6 lies halfway between 0.5 (at 2) and 0.7 (at 4): log2 x = 1.5, x = 2 ** 1.5
    reached, note = first_reach([1, 2, 4, 8], [0.2, 0.5, 0.7, 0.8], 0.6)
    assert reached == pytest.approx(2**1.5) and note == ""
    result = efficiency_ratio([1, 2, 4, 8], [0.2, 0.5, 0.7, 0.8], 0.6, reference_compute=8)
    assert result["ratio"] == pytest.approx(8 / 2**1.5)


def test_crossing_takes_the_first_point_that_reaches_the_target():
    reached, _ = first_reach([1, 2, 4, 8], [0.2, 0.65, 0.55, 0.9], 0.6)  # not the later 0.55 -> 0.9 crossing
    assert reached == pytest.approx(2 ** ((0.6 - 0.2) / 0.45))


def test_never_reaching_gives_null_with_a_note():
    result = efficiency_ratio([1, 2, 4], [0.1, 0.2, 0.3], 0.5, reference_compute=4)
    assert result["reaches_at"] is None and result["ratio"] is None
    assert "never reaches 0.5000 (best 0.3000)" in result["note"]


def test_zero_target_gives_no_ratio():
    result = efficiency_ratio([1, 2, 4], [0.0, 0.0, 0.1], 0.0, reference_compute=4)
    assert result["ratio"] is None and "target accuracy is 0" in result["note"]


def test_reaching_at_the_first_point_is_flagged_as_a_bound():
    result = efficiency_ratio([1, 2, 4], [0.7, 0.8, 0.9], 0.6, reference_compute=64)
    assert result["ratio"] == 64 and "lower bound" in result["note"]


def test_efficiency_table_on_constructed_curves():
    def entry(acc, tokens_per_sample):
        ks = [1, 2, 4, 8]
        return {
            "accuracy": acc,
            "compute": {
                "samples": ks,
                "generated_tokens": [100 * k for k in ks],
                "tokens": [tokens_per_sample * k for k in ks],
                "flops": None,
            },
        }

    strategies = {
        "pass@k": entry([0.5, 0.7, 0.8, 0.9], 100),
        "majority": entry([0.4, 0.45, 0.5, 0.6], 100),
        "weighted:v": entry([0.4, 0.5, 0.7, 0.8], 200),
        "best_of_n:v": entry([0.4, 0.45, 0.5, 0.55], 200),
    }
    table = efficiency_table(strategies)
    assert "pass@k" not in table
    assert table["majority"]["samples"]["ratio"] == pytest.approx(1.0)
    k = 2 ** (1 + (0.6 - 0.5) / 0.2)  # between k=2 (0.5) and k=4 (0.7)
    assert table["weighted:v"]["samples"]["ratio"] == pytest.approx(8 / k)
    assert table["weighted:v"]["tokens"]["ratio"] == pytest.approx(800 / (200 * k))  # verifier tokens count
    assert table["best_of_n:v"]["samples"]["ratio"] is None
    assert table["weighted:v"]["flops"]["note"] == "no parameter count in the run"


def test_curves_efficiency_uses_majority_at_n():
    c = compute_curves(table_from_records(synthetic_records(60, 16, seed=3)), num_subsets=100)
    target = c["aggregations"]["majority"]["accuracy"][-1]
    assert c["majority_at_n"] == target
    for name, axes in c["efficiency"].items():
        reached = axes["samples"]["reaches_at"]
        if reached is not None:
            assert 1 <= reached <= 16 and axes["samples"]["ratio"] == pytest.approx(16 / reached)
            assert max(c["aggregations"][name]["accuracy"]) >= target - 1e-12


def test_average_ranks_share_ties():
    assert average_ranks(np.array([0.3, 0.1, 0.3, 0.2])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_auroc_by_hand():
    # right {0.9, 0.4}, wrong {0.8, 0.4, 0.2}: 0.9 beats all 3; 0.4 beats 0.2, ties 0.4 -> 3 + 1.5 of 6 pairs
    assert auroc(np.array([0.9, 0.8, 0.4, 0.4, 0.2]), np.array([1, 0, 1, 0, 0], dtype=bool)) == pytest.approx(0.75)
    assert auroc(np.array([0.1, 0.2]), np.array([True, True])) is None
    assert auroc(np.array([0.1, 0.9]), np.array([False, True])) == 1.0


def test_reliability_bins_and_ece_by_hand():
    scores = np.array([0.05, 0.15, 0.95, 0.85, 1.0])
    labels = np.array([0, 1, 1, 0, 1])
    result = reliability(scores, labels, num_bins=2)
    low, high = result["bins"]
    assert (low["count"], low["mean_score"], low["fraction_right"]) == (2, pytest.approx(0.1), 0.5)
    assert (high["count"], high["mean_score"]) == (3, pytest.approx(2.8 / 3))
    assert high["fraction_right"] == pytest.approx(2 / 3)
    expected = (2 * abs(0.5 - 0.1) + 3 * abs(2 / 3 - 2.8 / 3)) / 5
    assert result["ece"] == pytest.approx(expected)


def test_score_metrics_by_hand():
    nan = math.nan
    scores = np.array([[0.9, 0.6, 0.2, 0.4], [0.7, 0.3, nan, 0.5]])
    labels = np.array([[1, 0, 0, 1], [1, 1, 0, nan]])
    m = score_metrics(scores, labels, threshold=0.5)
    # known pairs: (0.9,R) (0.6,W) (0.2,W) (0.4,R) (0.7,R) (0.3,R); accepted right: 0.9, 0.7 of 4
    assert m["num_samples"] == 6 and m["num_right"] == 4
    assert m["accuracy_on_right"] == pytest.approx(0.5)
    assert m["accuracy_on_wrong"] == pytest.approx(0.5)  # 0.2 rejected, 0.6 accepted
    assert m["balanced_accuracy"] == pytest.approx(0.5)
    # pooled: right {0.9, 0.4, 0.7, 0.3} vs wrong {0.6, 0.2}: wins 2 + 1 + 2 + 1 = 6 of 8
    assert m["auroc"] == pytest.approx(0.75)
    # problem 0: right {0.9, 0.4} vs wrong {0.6, 0.2}: 3 of 4; problem 1 has no known wrong sample
    assert m["auroc_within_problem"] == pytest.approx(0.75) and m["problems_with_both"] == 1
    with pytest.raises(ValueError, match="threshold must be in"):
        score_metrics(scores, labels, threshold=1.5)


def test_verifier_metrics_cover_every_score_kind_and_skip_unknown_labels():
    table = table_from_records(
        records_from_arrays(
            [[0, 1, -1], [0, 0, 1]],
            [[True, False], None],
            {"a": [[0.9, 0.1, 0.2], [0.5, 0.5, 0.5]], "b": [[0.1, 0.9, 0.8], [0.5, 0.5, 0.5]]},
        )
    )
    metrics = verifier_metrics(table)
    assert set(metrics) == {"a", "b"}
    assert metrics["a"]["num_samples"] == 3  # the problem without a reference is left out
    assert metrics["a"]["auroc"] == 1.0 and metrics["b"]["auroc"] == 0.0
    assert metrics["a"]["accuracy_on_wrong"] == 1.0  # the no-answer sample is wrong and rejected


def test_verifier_metrics_per_group_use_only_that_groups_problems():
    # level 1: "a" ranks the right sample first; level 2: last; one problem of level 2 is all right (no AUROC)
    table = table_from_records(
        records_from_arrays(
            [[0, 1], [0, 1], [0, 0]],
            [[True, False], [True, False], [True]],
            {"a": [[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]},
            fields=[{"level": 1}, {"level": 2}, {"level": 2}],
        )
    )
    groups = verifier_group_metrics(table)
    assert groups["level"]["1"]["a"]["auroc_within_problem"] == 1.0
    assert groups["level"]["2"]["a"]["auroc_within_problem"] == 0.0
    assert groups["level"]["2"]["a"]["problems_with_both"] == 1 and groups["level"]["2"]["a"]["num_samples"] == 4
    lines = format_verifier_groups(groups)
    assert lines[0].startswith("within-problem AUROC by level")
    assert lines[2].split() == ["1", "1", "1.000"] and lines[3].split() == ["2", "1", "0.000"]


def test_a_point_within_two_subset_standard_errors_reaches_the_target():
    # 0.996 at k = 8 is an estimate with se .003: within 2 s.e. of the target 1.0, so it reaches there (no
    # interpolation past it); with exact points (no se) it does not, and the crossing waits for k = 16
    compute, accuracy, se = [1, 2, 4, 8, 16], [0.9, 0.95, 0.98, 0.996, 1.0], [0.01, 0.008, 0.005, 0.003, 0.0]
    noisy = efficiency_ratio(compute, accuracy, 1.0, reference_compute=64, se_subsets=se)
    assert noisy["reaches_at"] == 8 and noisy["ratio"] == 8 and noisy["tolerance"] == pytest.approx(0.006)
    exact = efficiency_ratio(compute, accuracy, 1.0, reference_compute=64)
    assert exact["reaches_at"] == pytest.approx(16) and exact["tolerance"] is None
