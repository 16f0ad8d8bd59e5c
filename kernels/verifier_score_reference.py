"""Plain-torch log P(Yes) and log P(No) under the full-vocabulary softmax.

`verifier_score_reference` is the reference the kernel is tested against and the CPU path: fp32, and it
never holds more than a bounded block of logits. `verifier_score_naive` is the obvious way (the whole
(B, V) fp32 logits at once); it exists as the benchmark's baseline.
"""

from __future__ import annotations

import torch

BLOCK_ELEMENTS = 1 << 24
"""Most fp32 elements held at once, per logits block and per upcast weight block (64 MB each).
Measured on CPU (1 thread, B=256, D=1024, V=32000, best of 3): 0.85 s at 2**20, 0.78 s at 2**22,
0.87 s at 2**24, 0.98 s at 2**26, naive 1.01 s; 2**24 keeps GPU matmuls large at a bounded 64 MB."""

MAX_ROWS = 4096
"""Most hidden rows per block; 4096 x 4096 fp32 logits is one 64 MB block."""


def verifier_score_reference(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    yes_id: int,
    no_id: int,
    *,
    block_elements: int = BLOCK_ELEMENTS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(logp_yes, logp_no), each (B,) fp32, from hidden (B, D) and LM head weight (V, D); memory bounded."""
    batch, dim = hidden.shape
    vocab = weight.shape[0]
    rows = max(1, min(batch, MAX_ROWS, block_elements))
    cols = max(1, min(vocab, block_elements // rows, block_elements // max(dim, 1)))
    logp_yes = torch.empty(batch, dtype=torch.float32, device=hidden.device)
    logp_no = torch.empty_like(logp_yes)
    for b0 in range(0, batch, rows):
        h = hidden[b0 : b0 + rows].float()  # (rows, D)
        lse, yes, no = _row_block_scores(h, weight, yes_id, no_id, cols)
        logp_yes[b0 : b0 + rows] = yes - lse
        logp_no[b0 : b0 + rows] = no - lse
    return logp_yes, logp_no


def _row_block_scores(
    h: torch.Tensor,
    weight: torch.Tensor,
    yes_id: int,
    no_id: int,
    cols: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logsumexp over the vocabulary and the two logits for one block of rows, streaming V in blocks."""
    lse = torch.full((h.shape[0],), float("-inf"), dtype=torch.float32, device=h.device)
    yes = no = None
    for v0 in range(0, weight.shape[0], cols):
        logits = h @ weight[v0 : v0 + cols].float().T  # (rows, cols)
        if v0 <= yes_id < v0 + cols:
            yes = logits[:, yes_id - v0].clone()
        if v0 <= no_id < v0 + cols:
            no = logits[:, no_id - v0].clone()
        lse = torch.logaddexp(lse, torch.logsumexp(logits, dim=1))  # -inf + x -> x
    return lse, yes, no


def verifier_score_naive(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    yes_id: int,
    no_id: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch way: all (B, V) logits in fp32 at once. The benchmark's baseline."""
    logits = hidden.float() @ weight.float().T  # (B, V)
    lse = torch.logsumexp(logits, dim=1)
    return logits[:, yes_id] - lse, logits[:, no_id] - lse
