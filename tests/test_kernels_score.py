"""The yes/no read (fused_verifier_score, the K = 2 case of token_logprobs): the Triton kernel (in the
interpreter) and the torch reference against float64. The kernel's own tests: test_kernels_token_scores.py."""

import os

# Triton fixes interpreter-or-compiler when it is imported: set this before anything imports triton.
os.environ["TRITON_INTERPRET"] = "1"

import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from tts_engine.kernels import fused_verifier_score, yes_no_score  # noqa: E402
from tts_engine.kernels.token_scores_reference import token_logprobs_reference  # noqa: E402

# Tolerance per input dtype, against float64 of the unrounded fp32 inputs (abs and rel on log-probs).
INPUT_TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
# Accumulation is fp32 for every dtype: against float64 of the *rounded* inputs all must be this close.
ACCUM_TOL = 2e-5

SHAPES = [  # (B, D, V)
    pytest.param(64, 512, 32000, id="realistic-64x512x32000"),
    pytest.param(1, 72, 1000, id="B1"),
    pytest.param(37, 100, 3001, id="odd-V-not-tile-multiple"),
]


needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")


def _inputs(batch, dim, vocab, dtype, seed, scale=4.0):
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(batch, dim, generator=gen)
    weight = torch.randn(vocab, dim, generator=gen) * (scale / dim**0.5)
    return hidden, weight, hidden.to(dtype), weight.to(dtype)


def _float64_logp(hidden, weight, ids):
    logp = torch.log_softmax(hidden.double() @ weight.double().T, dim=1)
    return [logp[:, i] for i in ids]


def _assert_logp(got, want, tol):
    assert got.dtype == torch.float32
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("batch,dim,vocab", SHAPES)
def test_kernel_matches_float64(batch, dim, vocab, dtype):
    full_h, full_w, hidden, weight = _inputs(batch, dim, vocab, dtype, seed=batch + vocab)
    yes_id, no_id = 7, vocab - 1
    logp_yes, logp_no = fused_verifier_score(hidden, weight, yes_id, no_id, impl="triton")
    for got, want in zip((logp_yes, logp_no), _float64_logp(hidden, weight, (yes_id, no_id))):
        _assert_logp(got, want, ACCUM_TOL)
    for got, want in zip((logp_yes, logp_no), _float64_logp(full_h, full_w, (yes_id, no_id))):
        _assert_logp(got, want, INPUT_TOL[dtype])


@pytest.mark.parametrize("impl", ["torch", pytest.param("triton", marks=needs_triton)])
def test_large_logits_and_far_below_max(impl):
    """Logits in the thousands, and Yes/No thousands below the max: finite, exact log-probs."""
    _, _, hidden, weight = _inputs(5, 32, 700, torch.float32, seed=11, scale=1.0)
    weight[3] = hidden[0] * 100.0  # row 0: token 3 dominates with a logit of about 100 * |h|^2
    weight[10] = -weight[3]  # ... and token 10 sits far below it
    logp_yes, logp_no = fused_verifier_score(hidden, weight, 3, 10, impl=impl)
    want_yes, want_no = _float64_logp(hidden, weight, (3, 10))
    assert want_no[0] < -1000 and hidden[0] @ weight[3] > 1000
    tol = 1e-3 if impl == "triton" else 1e-5  # a few float32 ulp of logits in the thousands (2.4e-4 each)
    _assert_logp(logp_yes, want_yes, tol)
    _assert_logp(logp_no, want_no, tol)


def test_auto_impl_on_cpu_is_the_reference():
    _, _, hidden, weight = _inputs(4, 16, 100, torch.float32, seed=1)
    got = fused_verifier_score(hidden, weight, 1, 2)
    want = token_logprobs_reference(hidden, weight, torch.tensor([[1, 2]] * 4))
    assert torch.equal(got[0], want[:, 0]) and torch.equal(got[1], want[:, 1])


def test_empty_batch():
    logp_yes, logp_no = fused_verifier_score(torch.zeros(0, 8), torch.randn(10, 8), 1, 2, impl="torch")
    assert logp_yes.shape == (0,) and logp_no.shape == (0,)


def test_yes_no_score_is_stable():
    logp_yes = torch.tensor([-0.1, -1000.0, -2000.0, -3.0])
    logp_no = torch.tensor([-2.5, -1001.0, -1000.0, -3.0])
    p_yes, p_no = logp_yes.double().exp(), logp_no.double().exp()
    score = yes_no_score(logp_yes, logp_no)
    assert torch.isfinite(score).all() and ((score >= 0) & (score <= 1)).all()
    torch.testing.assert_close(score[0].double(), p_yes[0] / (p_yes[0] + p_no[0]))
    sigmoid_1 = 1 / (1 + torch.exp(torch.tensor(-1.0, dtype=torch.float64)))
    torch.testing.assert_close(score[1].double(), sigmoid_1)
    assert score[2] == 0.0 and score[3] == 0.5
    with pytest.raises(ValueError, match="logp_yes and logp_no"):
        yes_no_score(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda h, w: fused_verifier_score(h, w, 100, 1), "yes_id must be an int in \\[0, 100\\), got 100"),
        (lambda h, w: fused_verifier_score(h, w, 1, -1), "no_id must be an int in \\[0, 100\\), got -1"),
        (lambda h, w: fused_verifier_score(h, w[:, :8], 1, 2), "share D"),
        (lambda h, w: fused_verifier_score(h[0], w, 1, 2), "hidden must be 2-D"),
        (lambda h, w: fused_verifier_score(h, w.half(), 1, 2), "share a dtype"),
        (lambda h, w: fused_verifier_score(h.long(), w.long(), 1, 2), "hidden dtype must be one of"),
        (lambda h, w: fused_verifier_score(h, w, 1, 2, impl="cuda"), "impl must be one of"),
    ],
)
def test_bad_input_names_argument_and_value(call, match):
    with pytest.raises(ValueError, match=match):
        call(torch.randn(4, 16), torch.randn(100, 16))


@needs_triton
def test_triton_on_cpu_without_interpreter_says_how(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        fused_verifier_score(torch.randn(2, 16), torch.randn(50, 16), 1, 2, impl="triton")


def test_import_without_triton_and_install_hint():
    """Importing the package never imports triton; without triton, impl='triton' says to install it."""
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch, tts_engine.kernels as k\n"
        "h, w = torch.randn(2, 8), torch.randn(10, 8)\n"
        "print(k.fused_verifier_score(h, w, 1, 2)[0].shape)\n"
        "try:\n    k.fused_verifier_score(h, w, 1, 2, impl='triton')\n"
        "except ImportError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True).stdout
    assert "torch.Size([2])" in out and "ERR" in out and "pip install triton" in out
    lazy = "import sys, tts_engine.kernels; print('triton' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    assert (
        subprocess.run(
            [sys.executable, "-P", "-c", lazy], capture_output=True, text=True, env=env, check=True
        ).stdout.strip()
        == "False"
    )
