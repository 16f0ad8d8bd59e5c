"""training/rl.py: the RL primitives every RL trainer shares (advantages, clipped policy loss, RL^V's verification
loss, balanced accuracy as eval counts it)."""

import pytest
import torch

from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import build_prompt, build_verify_prompt
from tts_engine.inputs.tiny import TinyModelConfig
from tts_engine.params import SamplingParams
from tts_engine.pipeline.metrics import balanced_accuracy
from tts_engine.training import checkpoint as ckpt
from tts_engine.training.rl import (
    advantages,
    policy_loss,
    sequence_advantages,
    token_chunks,
    token_policy_loss_chunks,
    verification_examples,
    verification_loss,
)

MICRO = TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=256)


def test_grpo_advantages_by_hand():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    adv = advantages(rewards, "grpo")
    std = (1 / 3) ** 0.5  # Bessel-corrected std of [1, 0, 0, 1]
    assert torch.allclose(adv[0], torch.tensor([0.5, -0.5, -0.5, 0.5]) / std, atol=1e-4)
    assert torch.equal(adv[1], torch.zeros(4))  # all equal: no signal
    std3 = (0.1875 * 4 / 3) ** 0.5
    assert torch.allclose(adv[2], torch.tensor([-0.25, -0.25, -0.25, 0.75]) / std3, atol=1e-4)


def test_rloo_advantages_by_hand():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    adv = advantages(rewards, "rloo")
    # r_i minus the mean of the other three
    assert torch.allclose(adv[0], torch.tensor([1 - 1 / 3, 0 - 2 / 3, 0 - 2 / 3, 1 - 1 / 3]))
    assert torch.allclose(adv[1], torch.tensor([0 - 1 / 3, 0 - 1 / 3, 0 - 1 / 3, 1.0]))
    with pytest.raises(ValueError, match="algorithm"):
        advantages(rewards, "ppo")


def test_verification_examples_are_labelled_by_reward_and_balanced():
    config = ckpt.task_prompt_config()
    problems = ["Compute left to right: 1+2.", "Compute left to right: 3*3."]
    prompts = [build_prompt(config, p) for p in problems]
    texts = [["1+2=3\n\\boxed{3}", "1+2=4\n\\boxed{4}", "x"], ["3*3=9\n\\boxed{9}", "a", "b", "c", "d"]]
    rewards = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0]]
    examples = verification_examples(config, problems, prompts, texts, rewards)
    assert [e.label for e in examples] == [1, 0, 0, 1, 0, 0, 0, 0]
    assert examples[1].prompt == build_verify_prompt(config, problems[0], prompts[0], texts[0][1])
    assert examples[1].prompt.endswith("Answer Yes or No.\n")
    pos = sum(e.weight for e in examples if e.label)
    neg = sum(e.weight for e in examples if not e.label)
    assert pos == pytest.approx(0.5) and neg == pytest.approx(0.5)
    only_wrong = verification_examples(config, problems[:1], prompts[:1], [["a", "b"]], [[0.0, 0.0]])
    assert [e.weight for e in only_wrong] == [0.5, 0.5]


def test_balanced_accuracy():
    scores = torch.tensor([0.9, 0.2, 0.6, 0.4, 0.1])
    labels = torch.tensor([1, 1, 0, 0, 0])
    assert balanced_accuracy(scores, labels) == pytest.approx(0.5 * (1 / 2 + 2 / 3))
    assert balanced_accuracy(scores, torch.ones(5, dtype=torch.long)) is None


@pytest.mark.parametrize("algorithm", ["grpo", "rloo"])
def test_rl_and_verification_losses_decrease_on_a_fixed_batch(algorithm):
    torch.manual_seed(0)
    model, tok = ckpt.new_model(MICRO)
    config = ckpt.task_prompt_config()
    problems = ["Compute left to right: 1+2.", "Compute left to right: 3*3."]
    prompts = [build_prompt(config, p) for p in problems]
    samples = HFBackend(model, tok, device="cpu").generate(prompts, SamplingParams(n=4, max_new_tokens=10, seed=1))
    model.train()
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]])  # hand-made
    adv = advantages(rewards, algorithm).flatten()
    flat = [(i, s) for i, row in enumerate(samples) for s in row]
    prompt_ids = [tok.encode(prompts[i], add_special_tokens=False) for i, _ in flat]
    examples = verification_examples(
        config, problems, prompts, [[s.text for s in r] for r in samples], rewards.tolist()
    )
    yes, no = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")

    def losses():
        pg = policy_loss(
            model, prompt_ids, [s.token_ids for _, s in flat], [s.logprobs for _, s in flat], adv, 0.2, tok.pad_token_id
        )
        return pg, verification_loss(model, tok, examples, yes, no)[0]

    pg0, v0 = losses()
    assert abs(pg0.item()) < 1e-3  # ratio 1 at the sampling policy: the surrogate is -mean(A) = 0
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(15):
        pg, v = losses()
        opt.zero_grad()
        (pg + v).backward()
        opt.step()
    pg1, v1 = losses()
    assert pg1.item() < pg0.item() - 0.05, (pg0.item(), pg1.item())
    assert v1.item() < 0.6 * v0.item(), (v0.item(), v1.item())


def test_balanced_accuracy_of_tensors_is_that_of_arrays():
    """Training's tensors (grad-tracking, 1/0 labels) count as eval's arrays do (a score of exactly 0.5 accepts)."""
    gen = torch.Generator().manual_seed(0)
    for _ in range(50):
        scores = torch.rand(9, generator=gen).requires_grad_()
        labels = torch.randint(0, 2, (9,), generator=gen)
        with torch.no_grad():
            scores[::3] = 0.5
        plain = balanced_accuracy(scores.detach().numpy().tolist(), (labels.numpy() == 1).tolist())
        assert balanced_accuracy(scores, labels) == plain


def test_token_chunks_keep_order_and_the_padded_budget():
    lengths = [3, 5, 2, 9, 4, 4, 1]
    chunks = token_chunks(lengths, 10)
    assert [i for c in chunks for i in c] == list(range(len(lengths)))
    for c in chunks:
        assert len(c) == 1 or len(c) * max(lengths[i] for i in c) <= 10
    assert [3] in chunks  # longer than the budget only with itself: a chunk of its own
    assert token_chunks(lengths, 10**6) == [list(range(len(lengths)))]
    assert token_chunks([], 10) == []


def test_chunked_policy_loss_has_the_batch_loss_and_gradient():
    torch.manual_seed(0)
    model, tok = ckpt.new_model(MICRO)
    prompts = [build_prompt(ckpt.task_prompt_config(), f"Compute left to right: {a}+{a}.") for a in (1, 22, 333)]
    samples = HFBackend(model, tok, device="cpu").generate(prompts, SamplingParams(n=3, max_new_tokens=12, seed=2))
    model.train()
    with torch.no_grad():  # move off the sampling policy, so the clipped ratio is not 1 everywhere
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    flat = [(i, s) for i, row in enumerate(samples) for s in row]
    prompt_ids = [tok.encode(prompts[i], add_special_tokens=False) for i, _ in flat]
    completions = [s.token_ids for _, s in flat]
    olds = [s.logprobs for _, s in flat]
    adv = torch.linspace(-1.5, 1.5, len(flat))

    def gradient(parts):
        model.zero_grad()
        total = 0.0
        for part in parts:
            part.backward()
            total += part.item()
        return total, [p.grad.clone() for p in model.parameters()]

    whole, whole_grad = gradient([policy_loss(model, prompt_ids, completions, olds, adv, 0.2, tok.pad_token_id)])
    budget = max(len(p) + len(c) for p, c in zip(prompt_ids, completions)) * 2  # about two sequences a chunk
    token_adv = sequence_advantages(adv, completions)
    assert len(token_chunks([len(p) + len(c) for p, c in zip(prompt_ids, completions)], budget)) >= 4
    parts = token_policy_loss_chunks(model, prompt_ids, completions, olds, token_adv, 0.2, tok.pad_token_id, budget)
    chunked, chunked_grad = gradient(parts)
    assert abs(whole) > 1e-3
    assert chunked == pytest.approx(whole, abs=1e-6)
    for g, h in zip(whole_grad, chunked_grad):
        assert torch.allclose(g, h, atol=1e-6, rtol=1e-4)
