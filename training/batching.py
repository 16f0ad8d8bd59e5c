"""Right-padded (prompt, completion) batches and the per-token log-probabilities of their completions.

Batches are built on the CPU; the forward pass moves them to the model's device, and what it returns stays there.
"""

from __future__ import annotations

import torch

from .device import model_device


def pad_pairs(prompts: list[list[int]], completions: list[list[int]], pad_id: int):
    """ids, attention mask and completion mask, all `# (B, T)`: each row is prompt + completion, right-padded."""
    rows = [p + c for p, c in zip(prompts, completions)]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    completion_mask = torch.zeros((len(rows), width), dtype=torch.float32)
    for b, (p, c) in enumerate(zip(prompts, completions)):
        ids[b, : len(p) + len(c)] = torch.tensor(p + c, dtype=torch.long)
        mask[b, : len(p) + len(c)] = 1
        completion_mask[b, len(p) : len(p) + len(c)] = 1.0
    return ids, mask, completion_mask


def forward_logits(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The model's logits `# (B, T, V)` in float32 (under autocast too), on its device: ids and mask `# (B, T)`
    are moved there (on the CPU they already are)."""
    device = model_device(model)
    return model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()  # (B, T, V)


def completion_logprobs(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log P(token t | tokens < t) for every position t >= 1 `# (B, T)` (position 0 gets 0), on the model's device."""
    logits = forward_logits(model, ids, mask)  # (B, T, V)
    ids = ids.to(logits.device)
    logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
    return torch.cat([logp.new_zeros((ids.shape[0], 1)), logp], dim=1)  # (B, T)


def next_token_logits(model, sequences: list[list[int]], pad_id: int) -> torch.Tensor:
    """Logits at each sequence's last position `# (B, V)` (right-padded batch, gathered per row)."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for b, s in enumerate(sequences):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[b, : len(s)] = 1
    logits = forward_logits(model, ids, mask)  # (B, T, V)
    last = torch.tensor([len(s) - 1 for s in sequences], device=logits.device)
    return logits[torch.arange(len(sequences), device=logits.device), last]  # (B, V)
