"""Teacher-forced token scores: the Triton kernel (in the interpreter) and the torch reference against float64."""

import os

# Triton fixes interpreter-or-compiler when it is imported: set this before anything imports triton.
os.environ["TRITON_INTERPRET"] = "1"

import importlib.util  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from tts_engine.kernels import token_logprobs  # noqa: E402
from tts_engine.kernels.token_scores import TokenTiles, launch_plan, token_logprobs_triton  # noqa: E402
from tts_engine.kernels.token_scores_reference import token_logprobs_naive, token_logprobs_reference  # noqa: E402

# Tolerance per head dtype, against float64 of the unrounded float32 inputs (abs and rel on log-probs).
INPUT_TOL = {torch.float32: 1e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}
# Accumulation is float32 for every dtype: against float64 of the *rounded* inputs all must be this close.
ACCUM_TOL = 3e-5

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")


def _inputs(positions, dim, vocab, dtype, seed, scale=4.0):
    """Hidden states and a head whose logits spread like a trained model's (std ~ scale), in float32 and dtype."""
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(positions, dim, generator=gen)
    weight = torch.randn(vocab, dim, generator=gen) * (scale / dim**0.5)
    return hidden, weight, hidden.to(dtype), weight.to(dtype)


def _targets(positions, vocab, seed, k=None):
    """Random targets with the vocabulary's edges (0 and V-1) among them."""
    gen = torch.Generator().manual_seed(seed)
    shape = (positions,) if k is None else (positions, k)
    targets = torch.randint(0, vocab, shape, generator=gen)
    flat = targets.view(-1)
    flat[0], flat[-1] = 0, vocab - 1
    if flat.numel() > 3:
        flat[1], flat[2] = vocab - 1, 0
    return targets


def _float64(hidden, weight, targets, bias=None):
    logits = hidden.double() @ weight.double().T
    if bias is not None:
        logits += bias.double()
    logp = torch.log_softmax(logits, dim=1)
    return logp.gather(1, targets.view(targets.shape[0], -1)).view(targets.shape)


def _assert_logp(got, want, tol):
    assert got.dtype == torch.float32 and got.shape == want.shape
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)


SHAPES = [  # (T, D, V)
    pytest.param(128, 512, 32000, id="realistic-128x512x32000"),
    pytest.param(130, 100, 3001, id="odd-T-V-D"),
    pytest.param(1, 72, 1000, id="T1"),
]


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("positions,dim,vocab", SHAPES)
def test_kernel_matches_float64(positions, dim, vocab, dtype):
    full_h, full_w, hidden, weight = _inputs(positions, dim, vocab, dtype, seed=positions + vocab)
    targets = _targets(positions, vocab, seed=dim)
    got = token_logprobs(hidden, weight, targets, impl="triton")
    _assert_logp(got, _float64(hidden, weight, targets), ACCUM_TOL)
    _assert_logp(got, _float64(full_h, full_w, targets), INPUT_TOL[dtype])


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_two_targets_per_position_and_a_bias(dtype):
    """K = 2 targets per position (the yes/no read's shape, at many positions) and a head with a bias."""
    _, _, hidden, weight = _inputs(77, 48, 1500, dtype, seed=4)
    bias = torch.randn(1500, generator=torch.Generator().manual_seed(5)).to(dtype)
    targets = _targets(77, 1500, seed=6, k=2)
    got = token_logprobs(hidden, weight, targets, bias, impl="triton")
    assert got.shape == (77, 2)
    _assert_logp(got, _float64(hidden, weight, targets, bias), ACCUM_TOL)


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("splits,slots", [(3, 1), (7, 2)], ids=["3-splits-1-slot", "5-splits-2-slots"])
def test_vocabulary_split_across_programs_and_slots(dtype, splits, slots):
    """The GPU's cut: V split over programs whose partials merge into locked slots, GPU-sized tiles, D not a
    multiple of BLOCK_D, T not a multiple of BLOCK_T, K = 3 targets, some in the last (short) split."""
    _, _, hidden, weight = _inputs(70, 100, 2500, dtype, seed=3)
    targets = _targets(70, 2500, seed=7, k=3)
    tiles = TokenTiles(block_t=64, block_v=128, block_d=64, finish_d=32)
    got = token_logprobs_triton(hidden, weight, targets, tiles=tiles, splits=splits, slots=slots)
    _assert_logp(got, _float64(hidden, weight, targets), ACCUM_TOL)
    again = token_logprobs_triton(hidden, weight, targets, tiles=tiles, splits=splits, slots=slots)
    assert torch.equal(got, again)  # the kernel left its locks and counters at zero for the next call


@needs_triton
def test_many_positions_in_ragged_rows():
    """Rows of different lengths flattened into one call (as the hf backend does), split back per row."""
    _, _, hidden, weight = _inputs(1, 64, 4000, torch.float32, seed=8)
    gen = torch.Generator().manual_seed(9)
    lengths = [1, 129, 7, 600, 64, 3]
    rows = [torch.randn(n, 64, generator=gen) for n in lengths]
    row_targets = [_targets(n, 4000, seed=n) for n in lengths]
    got = token_logprobs(torch.cat(rows), weight, torch.cat(row_targets), impl="triton")
    assert got.shape == (sum(lengths),)
    for part, h, t in zip(got.split(lengths), rows, row_targets):
        _assert_logp(part, _float64(h, weight, t), ACCUM_TOL)


@pytest.mark.parametrize("impl", ["torch", pytest.param("triton", marks=needs_triton)])
def test_large_logits_and_far_below_max(impl):
    """Logits in the thousands, and targets thousands below the max: finite, exact log-probs."""
    _, _, hidden, weight = _inputs(5, 32, 700, torch.float32, seed=11, scale=1.0)
    weight[3] = hidden[0] * 100.0  # row 0: token 3 dominates with a logit of about 100 * |h|^2
    weight[10] = -weight[3]  # ... and token 10 sits far below it
    targets = torch.tensor([[3, 10]] * 5)
    got = token_logprobs(hidden, weight, targets, impl=impl)
    want = _float64(hidden, weight, targets)
    assert want[0, 1] < -1000 and hidden[0] @ weight[3] > 1000
    # float32 precision of logits in the thousands: the target's logit and the logsumexp are summed in
    # different orders (an indexed dot beside the tiles), so each carries a few ulp of ~4000 (2.4e-4 each)
    _assert_logp(got, want, 1e-3 if impl == "triton" else 1e-5)


def test_reference_blocks_and_naive_match_float64():
    """The memory-bounded reference forced into many position and vocabulary blocks, and the naive way."""
    _, _, hidden, weight = _inputs(13, 40, 2003, torch.float32, seed=5)
    bias = torch.randn(2003, generator=torch.Generator().manual_seed(1))
    targets = _targets(13, 2003, seed=2, k=2)
    want = _float64(hidden, weight, targets, bias)
    for got in (
        token_logprobs_reference(hidden, weight, targets, bias, block_elements=1000),
        token_logprobs_reference(hidden, weight, targets, bias),
        token_logprobs_naive(hidden, weight, targets, bias),
    ):
        _assert_logp(got, want, 1e-5)


def test_reference_equals_log_softmax_of_the_head_for_a_small_vocabulary():
    """The CPU path of the hf backend: what `log_softmax(head(h)).gather` gave, to float32 precision."""
    _, _, hidden, weight = _inputs(300, 192, 102, torch.float32, seed=12)
    targets = _targets(300, 102, seed=13)
    head = torch.nn.Linear(192, 102, bias=False)
    head.weight.data = weight
    old = torch.log_softmax(head(hidden).float(), dim=-1).gather(1, targets[:, None])[:, 0]
    torch.testing.assert_close(token_logprobs(hidden, weight, targets), old, rtol=0, atol=2e-6)


def test_auto_impl_on_cpu_is_the_reference():
    _, _, hidden, weight = _inputs(4, 16, 100, torch.float32, seed=1)
    targets = [1, 2, 99, 0]
    assert torch.equal(token_logprobs(hidden, weight, targets), token_logprobs_reference(hidden, weight, targets))


@pytest.mark.parametrize("impl", ["torch", pytest.param("triton", marks=needs_triton)])
def test_no_positions(impl):
    out = token_logprobs(torch.zeros(0, 8), torch.randn(10, 8), torch.zeros(0, 2, dtype=torch.long), impl=impl)
    assert out.shape == (0, 2) and out.dtype == torch.float32


def test_launch_plan_fills_the_gpu():
    """Splits per block of positions for an H200's 132 SMs at the shapes the GPU check measures."""
    for positions, splits in ((256, 66), (4096, 8), (65536, 4)):
        plan = launch_plan(positions, 151_936, 132)
        assert plan.splits == splits, (positions, plan)
        assert plan.v_per_split % 256 == 0 and (plan.splits - 1) * plan.v_per_split < 151_936
        assert plan.slots == -(-plan.splits // 32) and plan.group_t >= 1
    assert launch_plan(1000, 500, 1).splits == 1
    assert launch_plan(10, 2500, 1, splits=7, slots=9) == launch_plan(10, 2500, 1, splits=5, slots=5)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda h, w: token_logprobs(h, w, [1, 2, 3, 100]), "targets must be token ids in \\[0, 100\\), got 100"),
        (lambda h, w: token_logprobs(h, w, [1, 2]), "targets must be \\(T,\\) or \\(T, K\\) with T = 4"),
        (lambda h, w: token_logprobs(h, w, torch.zeros(4)), "integer token ids"),
        (lambda h, w: token_logprobs(h, w[:, :8], [1] * 4), "share D"),
        (lambda h, w: token_logprobs(h[0], w, [1]), "hidden must be 2-D"),
        (lambda h, w: token_logprobs(h, w.half(), [1] * 4), "share a dtype"),
        (lambda h, w: token_logprobs(h, w, [1] * 4, torch.zeros(99)), "bias must be \\(100,\\)"),
        (lambda h, w: token_logprobs(h, w, [1] * 4, impl="cuda"), "impl must be one of"),
    ],
)
def test_bad_input_names_argument_and_value(call, match):
    with pytest.raises(ValueError, match=match):
        call(torch.randn(4, 16), torch.randn(100, 16))


@needs_triton
def test_out_of_range_target_in_the_kernel_path():
    """CPU tensors: a ValueError naming the target. CUDA tensors (the GPU check runs this test there): no
    check, which would cost a sync, but nan at that position and nothing read out of bounds."""
    hidden, weight = torch.randn(4, 16), torch.randn(100, 16)
    try:
        got = token_logprobs(hidden, weight, [1, 2, 99, -1], impl="triton")
    except ValueError as err:
        assert "targets must be token ids in [0, 100), got -1" in str(err)
    else:
        assert torch.isnan(got[3]) and torch.isfinite(got[:3]).all()
        _assert_logp(got[:3], _float64(hidden, weight, torch.tensor([1, 2, 99]))[:3], ACCUM_TOL)


@needs_triton
def test_gpu_path_compiles_for_sm90():
    """Ahead-of-time compile for sm_90 (own process: no interpreter there) of the autotuner's biggest tiles, its
    smallest, and a float32 one: wgmma, software-pipelined loads, shared memory within Hopper's, no spills.
    (All of them: `python -P -m tts_engine.kernels.bench --aot`.)"""
    pytest.importorskip("triton.backends.nvidia")
    code = (
        "import json, torch\n"
        "from tts_engine.kernels.aot import token_scores_report\n"
        "from tts_engine.kernels.token_scores import GPU_TILES_16BIT, GPU_TILES_FP32, TokenTiles\n"
        "cases = [(torch.bfloat16, GPU_TILES_16BIT[1]), (torch.float16, GPU_TILES_16BIT[-1]),\n"
        "         (torch.float32, GPU_TILES_FP32[0])]\n"
        "print(json.dumps({f'{dt} {tiles}': token_scores_report(dt, TokenTiles(*tiles), bias=dt == torch.float16)\n"
        "    .__dict__ for dt, tiles in cases}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "-P", "-W", "ignore", "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    reports = json.loads(out.strip().splitlines()[-1])
    assert len(reports) == 3
    for name, report in reports.items():
        assert 0 < report["shared_bytes"] <= 227 * 1024, (name, report)
        assert report["uses_wgmma"] and report["pipelined"], (name, report)
        if report["spill_bytes"] is not None:
            assert report["spill_bytes"] <= 64, (name, report)
    if any(r["spill_bytes"] is None for r in reports.values()):
        pytest.skip("register spills not measured: triton's cuobjdump is not bundled here (the rest passed)")
