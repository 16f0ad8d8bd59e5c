"""Small pure functions of token sampling (gpt-fast style): each one swappable and testable alone."""

from __future__ import annotations

import hashlib

import torch


def row_seed(seed: int, prompt: str, sample_index: int) -> int:
    """A seed for one (prompt, sample) pair, so a sample does not depend on its batch or position in it."""
    digest = hashlib.blake2b(f"{seed}\x00{sample_index}\x00{prompt}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little") & ((1 << 63) - 1)


def top_p_filter(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Zero out the tail outside the nucleus; probs `# (B, V)` rows sum to 1, result is renormalised."""
    if top_p >= 1.0:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
    sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)
    filtered = torch.zeros_like(probs).scatter_(-1, order, sorted_probs)
    return filtered / filtered.sum(dim=-1, keepdim=True)


def sample_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, generators: list[torch.Generator] | None
) -> torch.Tensor:
    """Next tokens `# (B,)` from last-position logits `# (B, V)`: greedy at temperature 0, else the
    exponential race argmax(p / E), E ~ Exp(1) drawn from each row's own generator."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = top_p_filter(torch.softmax(logits.float() / temperature, dim=-1), top_p)
    noise = torch.stack(
        [torch.empty(probs.shape[-1]).exponential_(generator=g) for g in generators]  # type: ignore[union-attr]
    ).to(probs.device)  # (B, V)
    return (probs / noise).argmax(dim=-1)


def raw_logprobs(logits: torch.Tensor) -> torch.Tensor:
    """The raw (temperature 1) log-probabilities `# (B, V)` of last-position logits `# (B, V)`: computed once per
    decoding step, read by `token_logprobs` and `top_k_confidence`."""
    return torch.log_softmax(logits.float(), dim=-1)


def token_logprobs(logp: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Log-probability `# (B,)` of `tokens` `# (B,)` under raw log-probabilities `logp` `# (B, V)`."""
    return logp.gather(-1, tokens[:, None]).squeeze(-1)


def top_k_confidence(logp: torch.Tensor, k: int) -> torch.Tensor:
    """Token confidence `# (B,)`: -mean of the k largest of raw log-probabilities `logp` `# (B, V)` (DeepConf; k is
    cut to V)."""
    return -logp.topk(min(k, logp.shape[-1]), dim=-1).values.mean(dim=-1)


def left_pad(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids and attention mask, both `# (B, T)` with T the longest sequence."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        if seq:
            ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            mask[row, width - len(seq) :] = 1
    return ids, mask
