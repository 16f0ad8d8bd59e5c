"""The RL primitives every RL trainer here shares: group advantages (GRPO, RLOO), PPO's clipped policy loss, and
RL^V's class-balanced Yes/No verification loss (the reference the TRL path is pinned to).

Kept in one module so that Tango, its recompute form and the TRL trainer compute the same quantities the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from tts_engine.inputs.prompts import build_verify_prompt

from .batching import completion_logprobs, next_token_logits, pad_pairs

ALGORITHMS = ("grpo", "rloo")
"""Advantage estimators: group-normalised (GRPO) or leave-one-out (RLOO)."""


def advantages(rewards: torch.Tensor, algorithm: str, eps: float = 1e-6) -> torch.Tensor:
    """Advantages `# (P, G)` of rewards `# (P, G)`.

    grpo: (r - mean) / (std + eps) within each group (std with Bessel's correction, as GRPO).
    rloo: r_i - mean of the other G - 1 rewards of the group.
    """
    if algorithm == "grpo":
        return (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + eps)
    if algorithm == "rloo":
        g = rewards.shape[-1]
        return (rewards - rewards.mean(-1, keepdim=True)) * g / (g - 1)
    raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")


def clipped_pg_loss(
    new: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, clip_eps: float
) -> torch.Tensor:
    """PPO's clipped surrogate, the one policy-gradient loss of every trainer: token log-probs `# (B, T)` under
    the current and the sampling policy, advantages `# (B, T)` or `# (B, 1)`, mask `# (B, T)` of generated
    tokens; returns the per-sequence token mean `# (B,)`."""
    ratio = torch.exp((new - old) * mask)  # (B, T)
    per_token = -torch.minimum(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv) * mask
    return per_token.sum(-1) / mask.sum(-1).clamp(min=1)


def token_policy_loss(
    model,
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    old_logprobs: list[list[float]],
    token_adv: list[torch.Tensor],
    clip_eps: float,
    pad_id: int,
) -> torch.Tensor:
    """clipped_pg_loss on the generated tokens with a per-token advantage: per-sequence token mean, then batch mean.
    On the model's device; trainers call it outside autocast, as the ratio compares with the sampler's float32
    log-probabilities."""
    ids, mask, comp = pad_pairs(prompt_ids, completion_ids, pad_id)  # (B, T)
    old = torch.zeros(ids.shape, dtype=torch.float32)  # (B, T)
    adv = torch.zeros(ids.shape, dtype=torch.float32)  # (B, T)
    for b, (p, lps, a) in enumerate(zip(prompt_ids, old_logprobs, token_adv)):
        old[b, len(p) : len(p) + len(lps)] = torch.tensor(lps)
        adv[b, len(p) : len(p) + len(a)] = a
    new = completion_logprobs(model, ids, mask)  # (B, T)
    old, adv, comp = old.to(new.device), adv.to(new.device), comp.to(new.device)
    return clipped_pg_loss(new, old, adv, comp, clip_eps).mean()


def sequence_advantages(adv: torch.Tensor, completion_ids: list[list[int]]) -> list[torch.Tensor]:
    """One advantage per sequence `# (B,)` spread over each sequence's tokens (token_policy_loss's form)."""
    return [adv[b].expand(len(c)) for b, c in enumerate(completion_ids)]


def policy_loss(
    model,
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    old_logprobs: list[list[float]],
    adv: torch.Tensor,
    clip_eps: float,
    pad_id: int,
) -> torch.Tensor:
    """token_policy_loss with one advantage `# (B,)` per sequence."""
    token_adv = sequence_advantages(adv, completion_ids)
    return token_policy_loss(model, prompt_ids, completion_ids, old_logprobs, token_adv, clip_eps, pad_id)


def token_chunks(lengths: list[int], max_tokens: int) -> list[list[int]]:
    """Consecutive indices of sequences grouped so that each group padded (its size x its longest) holds at most
    `max_tokens` tokens; a sequence longer than that is a group of its own."""
    chunks: list[list[int]] = []
    chunk: list[int] = []
    longest = 0
    for i, n in enumerate(lengths):
        if chunk and (len(chunk) + 1) * max(longest, n) > max_tokens:
            chunks.append(chunk)
            chunk, longest = [], 0
        chunk.append(i)
        longest = max(longest, n)
    return chunks + [chunk] if chunk else chunks


def token_policy_loss_chunks(
    model,
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    old_logprobs: list[list[float]],
    token_adv: list[torch.Tensor],
    clip_eps: float,
    pad_id: int,
    max_tokens: int,
) -> Iterator[torch.Tensor]:
    """token_policy_loss over chunks of at most `max_tokens` padded tokens (token_chunks), each weighted by its share
    of the sequences, so that the chunks sum to the batch's loss. Each chunk's graph is made only when the next one is
    asked for: a caller that backpropagates each before taking the next (`loop.optimizer_step` does) holds one chunk's
    activations at a time, whatever the batch's size."""
    lengths = [len(p) + len(c) for p, c in zip(prompt_ids, completion_ids)]
    for chunk in token_chunks(lengths, max_tokens):
        picked = [[seqs[i] for i in chunk] for seqs in (prompt_ids, completion_ids, old_logprobs, token_adv)]
        yield token_policy_loss(model, *picked, clip_eps, pad_id) * (len(chunk) / len(prompt_ids))


@dataclass
class VerifyExample:
    """One rollout as a verification example."""

    prompt: str
    """build_verify_prompt(...) of the rollout."""
    label: int
    """1 ("Yes") if the rollout's reward is 1, else 0 ("No")."""
    weight: float
    """Class-balanced weight: each present class sums to 1/(number of present classes)."""


def verification_examples(
    prompt_config, problems: list[str], prompts: list[str], texts: list[list[str]], rewards: list[list[float]]
) -> list[VerifyExample]:
    """Every rollout of the batch, labelled by its reward, weighted so correct and incorrect weigh the same."""
    items = [
        (build_verify_prompt(prompt_config, problem, prompt, text), int(r >= 0.5))
        for problem, prompt, row_t, row_r in zip(problems, prompts, texts, rewards)
        for text, r in zip(row_t, row_r)
    ]
    counts = {label: sum(1 for _, l in items if l == label) for label in (0, 1)}
    present = sum(1 for c in counts.values() if c)
    return [VerifyExample(p, label, 1.0 / (present * counts[label])) for p, label in items]


def verification_loss(model, tokenizer, examples: list[VerifyExample], yes_id: int, no_id: int):
    """Weighted next-token cross-entropy of "Yes"/"No" (full vocabulary), and the yes_no scores `# (B,)`."""
    seqs = [tokenizer.encode(e.prompt, add_special_tokens=False) for e in examples]
    logits = next_token_logits(model, seqs, tokenizer.pad_token_id)  # (B, V)
    logp = torch.log_softmax(logits, dim=-1)
    targets = torch.tensor([yes_id if e.label else no_id for e in examples], device=logp.device)
    weights = torch.tensor([e.weight for e in examples], device=logp.device)
    loss = -(logp.gather(-1, targets[:, None]).squeeze(-1) * weights).sum()
    scores = torch.sigmoid(logp[:, yes_id] - logp[:, no_id]).detach()  # (B,) P(Yes)/(P(Yes)+P(No))
    return loss, scores
