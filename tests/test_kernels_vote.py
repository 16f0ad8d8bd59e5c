"""Batched subset voting: Triton kernel (interpreter) and vectorised torch reference against a Python loop."""

import os

# Triton fixes interpreter-or-compiler when it is imported: set this before anything imports triton.
os.environ["TRITON_INTERPRET"] = "1"

import importlib.util  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from tts_engine.kernels import SubsetVotes, subset_vote  # noqa: E402
from tts_engine.kernels.subset_voting_reference import SCORE_QUANTUM_BITS  # noqa: E402

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")
IMPLS = ["torch", pytest.param("triton", marks=needs_triton)]


def oracle_vote(class_ids, scores, subset):
    """The project's tie rules, one subset at a time, in plain Python (exact integer score sums)."""
    votes = [(int(i), int(class_ids[i]), float(scores[i])) for i in subset if int(class_ids[i]) >= 0]
    if not votes:
        return -1, -1, -1
    stats = {}  # class -> [count, exact quantised sum, first sample index]
    for i, c, s in votes:
        entry = stats.setdefault(c, [0, 0, i])
        entry[0] += 1
        entry[1] += round(s * 2**SCORE_QUANTUM_BITS)
        entry[2] = min(entry[2], i)
    majority = max(stats, key=lambda c: (stats[c][0], -stats[c][2]))
    weighted = max(stats, key=lambda c: (stats[c][1], stats[c][0], -stats[c][2]))
    best = max(votes, key=lambda v: (v[2], -v[0]))
    return majority, weighted, best[1]


def oracle(class_ids, scores, subsets):
    """(P, R) winners per strategy; subsets as index rows or bool mask rows."""
    out = torch.full((3, *subsets.shape[:2]), -1, dtype=torch.long)
    for p in range(subsets.shape[0]):
        for r in range(subsets.shape[1]):
            row = subsets[p, r]
            members = row.nonzero().flatten() if row.dtype == torch.bool else row
            out[:, p, r] = torch.tensor(oracle_vote(class_ids[p], scores[p], members.tolist()))
    return out


def random_problem(problems, samples, repeats, k, classes, seed, score_values=None):
    gen = torch.Generator().manual_seed(seed)
    class_ids = torch.randint(-1, classes, (problems, samples), generator=gen)
    if score_values is None:
        scores = torch.rand(problems, samples, generator=gen)
    else:
        pick = torch.randint(0, len(score_values), (problems, samples), generator=gen)
        scores = torch.tensor(score_values, dtype=torch.float32)[pick]
    subsets = torch.rand(problems, repeats, samples, generator=gen).argsort(dim=2)[..., :k]
    return class_ids, scores, subsets


def as_mask(subsets, samples):
    return torch.zeros(*subsets.shape[:2], samples, dtype=torch.bool).scatter_(2, subsets, True)


def assert_votes(votes, want):
    assert isinstance(votes, SubsetVotes)
    for name, expected in zip(("majority", "weighted", "best_of_n"), want):
        got = getattr(votes, name)
        assert got.dtype == torch.long and got.shape == expected.shape
        assert torch.equal(got, expected), f"{name} differs at {(got != expected).nonzero()[:5].tolist()}"


CASES = [  # (P, N, R, k, classes, score_values)
    pytest.param(6, 40, 50, 7, 5, None, id="random"),
    pytest.param(4, 256, 64, 64, 30, None, id="realistic-N256"),
    pytest.param(5, 12, 40, 6, 3, [0.25, 0.5, 0.75], id="dyadic-ties"),
    pytest.param(5, 12, 40, 6, 3, [0.1, 0.2, 0.3, 0.6], id="decimal-ties"),
    pytest.param(3, 1, 4, 1, 2, None, id="N1"),
    pytest.param(1, 9, 1, 9, 4, None, id="P1-R1-k=N"),
    pytest.param(2, 1100, 6, 50, 8, [0.25, 0.5], id="N1100-weighted-keys-unpacked"),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("problems,samples,repeats,k,classes,score_values", CASES)
def test_matches_python_oracle(impl, problems, samples, repeats, k, classes, score_values):
    class_ids, scores, subsets = random_problem(
        problems, samples, repeats, k, classes, seed=k + samples, score_values=score_values
    )
    want = oracle(class_ids, scores, subsets)
    assert_votes(subset_vote(class_ids, scores, subsets, impl=impl), want)
    assert_votes(subset_vote(class_ids, scores, as_mask(subsets, samples), impl=impl), want)


@pytest.mark.parametrize("impl", IMPLS)
def test_constructed_ties(impl):
    #               sample: 0  1  2  3  4   5   6  7  8
    class_ids = torch.tensor([[1, 0, 0, 1, 2, -1, 3, 4, 4]])
    scores = torch.tensor([[0.25, 0.5, 0.25, 0.25, 0.75, 1.0, 0.75, 0.25, 0.25]])  # dyadic: sums are exact
    rows = [
        [2, 1, 3, 0],  # counts tie 2-2: class 1 holds the smallest sample index (0), listed last
        [1, 4],  # counts tie 1-1 -> class 0 (sample 1); weighted 0.75 > 0.5 -> class 2
        [0, 3, 1],  # weighted sums tie 0.5 = 0.5 -> class 1 has more samples; best_of_n: sample 1
        [6, 5, 4],  # one vote each for 2 and 3 at 0.75, sample 5 (class -1, score 1.0) never wins -> sample 4
        [5],  # only a sample without an answer -> -1 everywhere
        [1, 2, 4, 6],  # weighted sums tie three ways at 0.75 -> class 0 (2 samples); best_of_n: sample 4
        [8, 1, 7],  # weighted sums tie 0.5 = 0.5: count (class 4) beats first seen (class 0)
    ]
    want = torch.tensor(
        [
            [[1, 0, 1, 2, -1, 0, 4]],  # majority
            [[0, 2, 1, 2, -1, 0, 4]],  # weighted
            [[0, 2, 0, 2, -1, 2, 0]],  # best_of_n
        ]
    )
    mask = torch.zeros(1, len(rows), 9, dtype=torch.bool)
    for r, row in enumerate(rows):
        mask[0, r, row] = True
        one = torch.tensor([[row]])  # (1, 1, k) in the listed order
        assert oracle(class_ids, scores, one).flatten().tolist() == want[:, 0, r].tolist()
        assert_votes(subset_vote(class_ids, scores, one, impl=impl), want[:, :, r : r + 1])
    assert_votes(subset_vote(class_ids, scores, mask, impl=impl), want)


@pytest.mark.parametrize("impl", IMPLS)
def test_weighted_full_tie_goes_to_first_seen(impl):
    class_ids = torch.tensor([[3, 0, 0, 3, 1, 1]])
    scores = torch.tensor([[0.5, 0.25, 0.25, 0.0, 0.25, 0.25]])
    # sums 0.5 = 0.5 and counts 2 = 2 in both rows -> the class with the smallest sample index
    subsets = torch.tensor([[[3, 2, 1, 0], [5, 4, 2, 1]]])
    votes = subset_vote(class_ids, scores, subsets, impl=impl)
    assert votes.weighted.tolist() == [[3, 0]] and votes.majority.tolist() == [[3, 0]]


@pytest.mark.parametrize("impl", IMPLS)
def test_no_answers_anywhere(impl):
    class_ids = torch.full((3, 8), -1)
    scores = torch.rand(3, 8)
    subsets = torch.rand(3, 5, 8).argsort(dim=2)[..., :4]
    votes = subset_vote(class_ids, scores, subsets, torch.zeros(3, 2, dtype=torch.bool), impl=impl)
    for name in ("majority", "weighted", "best_of_n"):
        assert (getattr(votes, name) == -1).all()
        assert (votes.accuracy[name] == 0).all()


@pytest.mark.parametrize("impl", IMPLS)
def test_accuracy_is_mean_correctness_and_no_answer_is_wrong(impl):
    class_ids = torch.tensor([[0, 1, 1, -1], [2, 2, 0, 1]])
    scores = torch.tensor([[0.9, 0.2, 0.3, 0.5], [0.1, 0.1, 0.9, 0.3]])
    class_correct = torch.tensor([[True, False, False], [False, False, True]])
    subsets = torch.tensor([[[0, 1], [1, 2], [3, 0], [3, 2]], [[0, 1], [2, 3], [0, 2], [1, 3]]])
    votes = subset_vote(class_ids, scores, subsets, class_correct, impl=impl)
    # problem 0: majority 0,1,0,1 -> right 2/4; weighted 0,1,0,1 -> 2/4; best_of_n 0,1,0,1 -> 2/4
    # problem 1: majority 2,0,2,2 -> 3/4; weighted 2,0,0,1 -> 1/4; best_of_n 2,0,0,1 -> 1/4
    assert votes.majority.tolist() == [[0, 1, 0, 1], [2, 0, 2, 2]]
    assert votes.weighted.tolist() == [[0, 1, 0, 1], [2, 0, 0, 1]]
    torch.testing.assert_close(votes.accuracy["majority"], torch.tensor([0.5, 0.75]))
    torch.testing.assert_close(votes.accuracy["weighted"], torch.tensor([0.5, 0.25]))
    torch.testing.assert_close(votes.accuracy["best_of_n"], torch.tensor([0.5, 0.25]))
    assert subset_vote(class_ids, scores, subsets, impl=impl).accuracy is None


def test_reference_blocks_over_problems_agree():
    from tts_engine.kernels.subset_voting_reference import subset_vote_reference

    class_ids, scores, subsets = random_problem(7, 20, 30, 5, 4, seed=3)
    class_ids[2] = -1  # a block without any answer
    class_ids[4] = class_ids[4].clamp(max=1)  # a block with fewer classes than the rest
    whole = subset_vote_reference(class_ids, scores, subsets, 4)
    blocked = subset_vote_reference(class_ids, scores, subsets, 4, block_elements=100)
    assert all(torch.equal(a, b) for a, b in zip(whole, blocked))
    assert torch.equal(torch.stack(blocked), oracle(class_ids, scores, subsets))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda c, s, x: subset_vote(c, s, x[..., :1].expand(2, 3, 9).contiguous()), "k must be <= N=8, got k=9"),
        (lambda c, s, x: subset_vote(c, s, x + 8), "sample indices in \\[0, 8\\), got"),
        (lambda c, s, x: subset_vote(c, s[:, :5], x), "scores must be a float tensor of shape \\(2, 8\\)"),
        (lambda c, s, x: subset_vote(c, s * 2, x), "scores must lie in \\[0, 1\\], got"),
        (lambda c, s, x: subset_vote(c, s.masked_fill(s > 0, float("nan")), x), "scores must lie in"),
        (lambda c, s, x: subset_vote(c - 2, s, x), "class_ids must be >= -1"),
        (lambda c, s, x: subset_vote(c, s, x, torch.ones(2, 2, dtype=torch.bool)), "below C=2"),
        (lambda c, s, x: subset_vote(c, s, x, torch.ones(3, 9, dtype=torch.bool)), "class_correct must be"),
        (lambda c, s, x: subset_vote(c, s, torch.ones(2, 3, 7, dtype=torch.bool)), "mask must be \\(P, R, N=8"),
        (lambda c, s, x: subset_vote(c, s, x[0]), "subsets must be \\(P=2, R, k\\)"),
        (lambda c, s, x: subset_vote(c.float(), s, x), "class_ids must be a 2-D integer tensor"),
        (lambda c, s, x: subset_vote(c, s, x, impl="gpu"), "impl must be one of"),
    ],
)
def test_bad_input_names_argument_and_value(call, match):
    class_ids = torch.tensor([[0, 1, 2, 3, 0, 1, -1, 2]] * 2)
    with pytest.raises(ValueError, match=match):
        call(class_ids, torch.rand(2, 8), torch.rand(2, 3, 8).argsort(dim=2)[..., :4])


@needs_triton
def test_gpu_path_compiles_for_sm90():
    """Ahead-of-time compile with the launcher's GPU tiles (own process: no interpreter there)."""
    pytest.importorskip("triton.backends.nvidia")
    code = (
        "import json\n"
        "from tts_engine.kernels.aot import subset_vote_report\n"
        "print(json.dumps({f'{w} {m}': subset_vote_report(1000, w, m).__dict__\n"
        "    for w, m in ((1, False), (64, False), (256, False), (256, True))}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "-P", "-W", "ignore", "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    reports = json.loads(out.strip().splitlines()[-1])
    assert len(reports) == 4
    for shape, report in reports.items():
        assert 0 < report["shared_bytes"] <= 227 * 1024, (shape, report)
        if report["spill_bytes"] is not None:
            assert report["spill_bytes"] == 0, (shape, report)
    if any(r["spill_bytes"] is None for r in reports.values()):
        pytest.skip(
            "register spills not measured: triton's cuobjdump is not bundled here (every other compile check passed)"
        )
