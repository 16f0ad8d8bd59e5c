"""Curve estimators against brute force: pass@k's closed form, voting over every subset, tie rules."""

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from tts_engine.eval.curves import compute_curves, per_problem_accuracy
from tts_engine.eval.pass_at_k import pass_at_k
from tts_engine.eval.reference import loop_vote_accuracy
from tts_engine.eval.subsets import SubsetDrawer, all_subsets, subset_sizes
from tts_engine.eval.synthetic import records_from_arrays, synthetic_records
from tts_engine.eval.table import table_from_records
from tts_engine.pipeline.aggregate import vote_classes

IMPLS = ["prefix", "torch"]


def random_case(seed: int, p: int = 6, n: int = 8):
    """Problems with few classes (many ties), no-answer samples, and scores on a 1/4 grid (tied scores)."""
    rng = np.random.default_rng(seed)
    class_ids = rng.integers(-1, 3, size=(p, n))
    class_ids[0] = -1  # a problem where no sample answers
    class_correct = [list(rng.random(3) < 0.4) for _ in range(p)]
    scores = {"verifier_yes_no": rng.integers(0, 5, size=(p, n)) / 4, "likelihood": rng.integers(0, 3, size=(p, n)) / 2}
    return table_from_records(records_from_arrays(class_ids, class_correct, scores))


def brute_force(table, k: int) -> dict[str, np.ndarray]:
    """Strategy -> (P,) exact mean correctness over all C(N, k) subsets, voting with the engine's rules."""
    out = {}
    for p in range(table.num_problems):
        hits: dict[str, list[bool]] = {}
        for subset in itertools.combinations(range(table.num_samples), k):
            ids = [int(table.class_ids[p, i]) for i in subset]
            plans = [("majority", "majority", None)] + [
                (f"{s}:{kind}", s, kind) for kind in table.scores for s in ("weighted", "best_of_n")
            ]
            for name, strategy, kind in plans:
                values = None if kind is None else [float(table.scores[kind][p, i]) for i in subset]
                winner = vote_classes(strategy, ids, values).answer_class
                hits.setdefault(name, []).append(winner >= 0 and bool(table.class_correct[p, winner]))
        for name, flags in hits.items():
            out.setdefault(name, np.zeros(table.num_problems))[p] = np.mean(flags)
    return out


def test_subset_sizes_are_powers_of_two_then_n():
    assert subset_sizes(1) == [1]
    assert subset_sizes(8) == [1, 2, 4, 8]
    assert subset_sizes(12) == [1, 2, 4, 8, 12]
    with pytest.raises(ValueError, match="got 0"):
        subset_sizes(0)


def test_pass_at_k_equals_the_closed_form():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                got = pass_at_k(np.array([c]), n, k)[0]
                assert got == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12), (n, c, k)


def test_pass_at_k_is_stable_for_large_n():
    n, c = 256, np.array([0, 1, 3, 128, 255, 256])
    for k in (1, 2, 64, 128, 256):
        exact = [1 - Fraction(comb(n - ci, k), comb(n, k)) for ci in c]
        assert pass_at_k(c, n, k) == pytest.approx([float(e) for e in exact], abs=1e-12)


def test_pass_at_k_rejects_bad_arguments():
    with pytest.raises(ValueError, match="k must be in"):
        pass_at_k(np.array([1]), 4, 5)
    with pytest.raises(ValueError, match="num_correct must lie in"):
        pass_at_k(np.array([5]), 4, 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("impl", IMPLS)
def test_every_subset_used_matches_brute_force(seed, impl):
    table = random_case(seed)
    ks = subset_sizes(8) + [3, 5, 7]
    got = per_problem_accuracy(table, ks, num_subsets=1000, impl=impl)  # C(8, k) <= 70: all enumerated
    for i, k in enumerate(ks):
        for name, exact in brute_force(table, k).items():
            np.testing.assert_allclose(got[name][i], exact, atol=1e-9, err_msg=f"{name} k={k} {impl}")


@pytest.mark.parametrize("impl", IMPLS)
def test_random_subsets_match_a_loop_over_the_same_subsets(impl):
    table = random_case(3, p=5, n=8)
    drawer = SubsetDrawer(table.ids, 8, 9, seed=4)  # R = 9 < C(8, k) for k = 2..6: subsets are drawn
    ks = [1, 2, 3, 4, 6, 8]
    got = per_problem_accuracy(table, ks, num_subsets=9, seed=4, impl=impl)
    for i, k in enumerate(ks):
        subsets = drawer.subsets(k, np.arange(5))
        assert subsets.shape[1] == (9 if 2 <= k <= 6 else comb(8, k))
        for name, expected in loop_vote_accuracy(table.class_ids, table.class_correct, table.scores, subsets).items():
            np.testing.assert_allclose(got[name][i], expected, atol=1e-6, err_msg=f"{name} k={k}")


def test_random_subset_estimate_is_near_the_exact_value():
    table = table_from_records(synthetic_records(150, 8, seed=5))
    exact = compute_curves(table, num_subsets=1000)  # every subset of 8
    sampled = compute_curves(table, num_subsets=20, seed=1)  # k = 2, 4: 20 random subsets of 28 / 70
    assert sampled["exact"] == [True, False, False, True] and exact["exact"] == [True] * 4
    for name, entry in sampled["aggregations"].items():
        if name == "pass@k":  # exact at every k
            assert entry["accuracy"] == pytest.approx(exact["aggregations"][name]["accuracy"])
            continue
        for i in (1, 2):
            gap = abs(entry["accuracy"][i] - exact["aggregations"][name]["accuracy"][i])
            assert entry["se_subsets"][i] > 0
            assert gap < 4 * entry["se_subsets"][i] + 1e-12, (name, i, gap)


def test_tie_rules_at_k_equal_n():
    # majority: 2-2 tie -> the class of the earliest sample (sample 0, class 1), which is wrong
    # weighted: sums 0.5+0.5 vs 0.25+0.75 tie, counts tie -> earliest sample again: class 1
    # best_of_n: the highest score 0.75 is sample 3 (class 0) and right
    table = table_from_records(
        records_from_arrays([[1, 0, -1, 0, 1]], [[True, False]], {"v": [[0.5, 0.25, 1.0, 0.75, 0.5]]})
    )
    got = per_problem_accuracy(table, [5], impl="prefix")
    assert got["majority"][0, 0] == 0.0 and got["weighted:v"][0, 0] == 0.0 and got["best_of_n:v"][0, 0] == 1.0
    # the no-answer sample 2 has the top score but votes for nothing
    flipped = table_from_records(
        records_from_arrays([[1, 0, -1, 0, 1]], [[False, True]], {"v": [[0.5, 0.25, 1.0, 0.75, 0.5]]})
    )
    assert per_problem_accuracy(flipped, [5], impl="prefix")["best_of_n:v"][0, 0] == 0.0


def test_problem_without_answers_scores_zero_everywhere():
    table = table_from_records(records_from_arrays([[-1, -1, -1, -1]], [[]], {"v": [[0.9, 0.1, 0.2, 0.3]]}))
    got = per_problem_accuracy(table, [1, 2, 4], impl="prefix")
    for values in got.values():
        assert not values.any()


def test_subsets_are_uniform_distinct_and_stable_per_problem():
    drawer = SubsetDrawer([f"p{i}" for i in range(3)], 6, 3000, seed=0)
    subsets = drawer.subsets(2, np.arange(3))  # C(6, 2) = 15 <= 3000: all of them
    assert subsets.shape == (3, 15, 2) and (subsets[0] == all_subsets(6, 2)).all()
    small = SubsetDrawer([f"p{i}" for i in range(3)], 6, 12, seed=0)
    drawn = small.subsets(3, np.arange(3))  # (3, 12, 3), random
    assert all(len(set(row)) == 3 for row in drawn.reshape(-1, 3).tolist())
    alone = SubsetDrawer(["p2"], 6, 12, seed=0).subsets(3, np.arange(1))
    assert (alone[0] == drawn[2]).all()  # a problem's subsets do not depend on the other problems
    counts = np.zeros((6, 6))
    for seed in range(300):
        sampled = SubsetDrawer(["x"], 6, 14, seed=seed).subsets(2, np.arange(1))[0]
        for a, b in sampled:
            counts[min(a, b), max(a, b)] += 1
    upper = counts[np.triu_indices(6, 1)]
    assert upper.sum() == 300 * 14 and upper.min() > 0.8 * upper.mean() and upper.max() < 1.2 * upper.mean()
    assert SubsetDrawer(["x"], 6, 14, seed=1).plan(2)[1].shape == (14, 2)  # C(6, 2) = 15 > 14: sampled


def test_standard_errors():
    table = table_from_records(synthetic_records(40, 8, seed=2))
    c = compute_curves(table, num_subsets=10)
    for name, entry in c["aggregations"].items():
        per_problem = np.array([problem["accuracy"][name] for problem in c["problems"]])  # (P, K)
        np.testing.assert_allclose(entry["accuracy"], per_problem.mean(axis=0))
        np.testing.assert_allclose(entry["se"], per_problem.std(axis=0, ddof=1) / np.sqrt(40))
        exact = c["exact"] if name != "pass@k" else [True] * len(c["k"])
        assert all((s == 0) == ex for s, ex in zip(entry["se_subsets"], exact)), name


def test_group_breakdown_averages_the_problems_of_each_group():
    table = table_from_records(synthetic_records(30, 8, seed=4))
    c = compute_curves(table, num_subsets=50)
    levels = c["groups"]["level"]
    assert sum(g["num_problems"] for g in levels.values()) == 30
    for value, group in levels.items():
        members = [p for p in c["problems"] if str(p["fields"]["level"]) == value]
        expected = np.mean([p["accuracy"]["majority"] for p in members], axis=0)
        np.testing.assert_allclose(group["aggregations"]["majority"]["accuracy"], expected)
    assert set(c["groups"]["subject"]) == {"Algebra", "Geometry", "Number Theory", "Precalculus"}


def test_compute_axes():
    tokens = np.array([[10, 30, 20, 40], [5, 5, 5, 5]])
    table = table_from_records(
        records_from_arrays(
            [[0, 0, 1, 1], [0, 1, 0, 1]],
            [[True, False], [False, True]],
            {"likelihood": np.full((2, 4), 0.5), "verifier_yes_no": np.full((2, 4), 0.5)},
            num_tokens=tokens,
            verifier_tokens=np.full((2, 4), 100),
            num_parameters=1000,
        )
    )
    c = compute_curves(table)
    per_sample = tokens.mean()  # 15 generated tokens per sample
    majority = c["aggregations"]["majority"]["compute"]
    assert majority["generated_tokens"] == pytest.approx([per_sample * k for k in (1, 2, 4)])
    assert majority["verifier_tokens"] == [0, 0, 0]
    assert c["aggregations"]["weighted:likelihood"]["compute"]["tokens"] == majority["tokens"]
    verified = c["aggregations"]["weighted:verifier_yes_no"]["compute"]
    assert verified["tokens"] == pytest.approx([(per_sample + 100) * k for k in (1, 2, 4)])
    assert verified["flops"] == pytest.approx([2 * 1000 * (per_sample + 100) * k for k in (1, 2, 4)])


def test_prefix_walk_in_many_small_chunks_gives_the_same_result(monkeypatch):
    from tts_engine.eval import prefix_voting

    table = table_from_records(synthetic_records(12, 16, seed=9))
    whole = per_problem_accuracy(table, subset_sizes(16), num_subsets=30, impl="prefix")
    monkeypatch.setattr(prefix_voting, "TABLE_ENTRIES", 64)  # one problem per chunk
    chunked = per_problem_accuracy(table, subset_sizes(16), num_subsets=30, impl="prefix")
    kernel = per_problem_accuracy(table, subset_sizes(16), num_subsets=30, impl="torch")
    for name, values in whole.items():
        np.testing.assert_array_equal(chunked[name], values)
        np.testing.assert_allclose(kernel[name], values, atol=1e-6)


def test_a_search_run_has_one_budget_k_equals_n():
    from tts_engine.eval.curves import compute_curves
    from tts_engine.eval.synthetic import synthetic_records
    from tts_engine.eval.table import table_from_records

    records = synthetic_records(6, 8, seed=1)
    for record in records:
        record["run"]["search"] = {"strategy": "beam", "beam_width": 4}
    curves = compute_curves(table_from_records(records), num_subsets=50)
    assert curves["k"] == [8]
    assert any("only k = N = 8" in note for note in curves["notes"])
    plain = compute_curves(table_from_records(synthetic_records(6, 8, seed=1)), num_subsets=50)
    assert plain["k"] == [1, 2, 4, 8]


def test_verifier_tokens_of_texts_verified_once():
    from itertools import combinations

    from tts_engine.eval.compute import expected_verifier_tokens

    # One problem, N = 4: text A drawn 3 times (verified once: 90, then 0, 0), text B once (30).
    tokens, text_ids = np.array([[90.0, 0.0, 30.0, 0.0]]), np.array([[0, 0, 1, 0]])
    brute = []
    for k in (1, 2, 3, 4):  # every k-subset: A's 90 once if any A is drawn, B's 30 if B is
        subsets = list(combinations(range(4), k))
        brute.append(sum(90 * any(j != 2 for j in s) + 30 * (2 in s) for s in subsets) / len(subsets))
    np.testing.assert_allclose(expected_verifier_tokens(tokens, text_ids, [1, 2, 3, 4]), brute)
    # Samples that each recorded their own tokens (no repeat at 0) cost their own, k x the mean.
    own = np.array([[50.0, 50.0, 30.0, 30.0]])
    np.testing.assert_allclose(expected_verifier_tokens(own, np.array([[0, 0, 1, 1]]), [2]), [80.0])
