"""The hf backend's verifier scores through the token-score op: ragged rows, tied and biased heads, yes/no."""

import copy

import pytest
import torch

from tts_engine.backends.hf import HFBackend


def _full_forward(backend, prompt: str, continuation: str) -> list[float]:
    """log P of each continuation token from one plain forward pass over prompt + continuation."""
    p, c = backend.encode(prompt), backend.encode(continuation)
    with torch.no_grad():
        logp = torch.log_softmax(backend.model(torch.tensor([p + c])).logits[0].float(), -1)  # (P + C, V)
    return [logp[len(p) - 1 + k, t].item() for k, t in enumerate(c)]


PAIRS = [  # ragged: one token, none, long, a long prompt with a short continuation
    ("12+3=", "1"),
    ("a prompt with nothing after it ", ""),
    ("7*8=", "56, and 56-6=50, and 50/5=10\n"),
    ("a much longer prompt that asks for 9*9 and then some more words=", "81\n"),
]


@pytest.mark.parametrize("rows_per_batch", [256, 3], ids=["one-batch", "batches-of-3"])
def test_ragged_rows_in_one_call_match_a_full_forward(tiny_model_dir, rows_per_batch):
    backend = HFBackend(tiny_model_dir, prefix_cache_tokens=0, max_batch_rows=rows_per_batch)
    head = backend.model.get_output_embeddings()
    assert head.weight is backend.model.get_input_embeddings().weight  # tied: the head is the embedding
    prompts, continuations = [p for p, _ in PAIRS], [c for _, c in PAIRS]
    got = backend.continuation_token_logprobs(prompts, continuations)
    assert [len(row) for row in got] == [len(backend.encode(c)) for c in continuations]
    for row, (prompt, continuation) in zip(got, PAIRS):
        assert row == pytest.approx(_full_forward(backend, prompt, continuation), abs=2e-5)


def test_a_head_with_a_bias_is_scored_with_it(tiny_model_dir):
    backend = HFBackend(tiny_model_dir, prefix_cache_tokens=0)
    backend.model = copy.deepcopy(backend.model)
    old = backend.model.get_output_embeddings()
    head = torch.nn.Linear(old.in_features, old.out_features, bias=True)
    with torch.no_grad():
        head.weight.copy_(old.weight)
        head.bias.copy_(torch.randn(old.out_features, generator=torch.Generator().manual_seed(0)) * 3)
    backend.model.set_output_embeddings(head)
    got = backend.continuation_token_logprobs([p for p, _ in PAIRS], [c for _, c in PAIRS])
    for row, (prompt, continuation) in zip(got, PAIRS):
        assert row == pytest.approx(_full_forward(backend, prompt, continuation), abs=2e-5)
    yes, no = backend.encode("Y")[0], backend.encode("N")[0]
    (logp_yes, logp_no), *_ = backend.yes_no_logprobs(["Is 2+2=4? "], yes, no)
    with torch.no_grad():
        logp = torch.log_softmax(backend.model(torch.tensor([backend.encode("Is 2+2=4? ")])).logits[0, -1], -1)
    assert (logp_yes, logp_no) == pytest.approx((logp[yes].item(), logp[no].item()), abs=2e-5)


def test_continuation_positions_picks_the_predicting_states():
    hidden = torch.arange(3 * 6, dtype=torch.float32).view(3, 6, 1).expand(3, 6, 2)  # (U=3, R=6, D=2)
    flat = HFBackend.continuation_positions(hidden, [2, 0, 5])  # row 0: columns 3, 4; row 2: columns 0..4
    assert flat[:, 0].tolist() == [3, 4, 12, 13, 14, 15, 16]
    assert HFBackend.continuation_positions(hidden, [0, 0, 0]).shape == (0, 2)
