"""Plain-torch teacher-forced token scores: log P(target) at many positions under the full-vocabulary softmax.

`token_logprobs_reference` is the CPU path and the oracle the kernel is tested against: float32, and it never
holds more than a bounded block of logits (chunked over positions, and over the vocabulary when the head is
large). `token_logprobs_naive` is the obvious way, `log_softmax((h @ W.T).float()).gather`, holding all
(T, V) logits at once: the benchmarks' baseline.
"""

from __future__ import annotations

import torch

BLOCK_ELEMENTS = 1 << 24
"""Most float32 elements held at once, per logits block and per upcast weight block (64 MB each).
Measured on CPU for the yes/no read (1 thread, B=256, D=1024, V=32000, best of 3): 0.85 s at 2**20, 0.78 s
at 2**22, 0.87 s at 2**24, 0.98 s at 2**26, naive 1.01 s; 2**24 keeps GPU matmuls large at a bounded 64 MB."""

MAX_ROWS = 4096
"""Most positions per block; 4096 x 4096 float32 logits is one 64 MB block."""


def as_target_matrix(targets, positions: int, device: torch.device) -> tuple[torch.Tensor, bool]:
    """(targets as a (T, K) integer tensor on `device`, whether the caller gave one target per position)."""
    targets = torch.as_tensor(targets, device=device)
    if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
        raise ValueError(f"targets must be integer token ids, got dtype {targets.dtype}")
    if targets.dim() not in (1, 2) or targets.shape[0] != positions:
        raise ValueError(
            f"targets must be (T,) or (T, K) with T = {positions} positions, got shape {tuple(targets.shape)}"
        )
    single = targets.dim() == 1
    return (targets[:, None] if single else targets), single


def check_target_range(targets: torch.Tensor, vocab: int) -> None:
    """ValueError naming the first target outside [0, vocab) (reads the tensor: a sync on a GPU)."""
    if targets.numel() == 0:
        return
    bad = (targets < 0) | (targets >= vocab)
    if bool(bad.any()):
        value = int(targets[bad][0])
        raise ValueError(f"targets must be token ids in [0, {vocab}), got {value}")


def token_logprobs_reference(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets,
    bias: torch.Tensor | None = None,
    *,
    block_elements: int = BLOCK_ELEMENTS,
) -> torch.Tensor:
    """log softmax(hidden @ weight.T + bias)[t, targets[t]] in float32: (T,) for targets (T,), (T, K) for (T, K).

    hidden: (T, D); weight: (V, D) (the LM head; a tied embedding is the same tensor); bias: (V,) or None.
    """
    positions, dim = hidden.shape
    vocab = weight.shape[0]
    tgt, single = as_target_matrix(targets, positions, hidden.device)  # (T, K)
    check_target_range(tgt, vocab)
    tgt = tgt.long()
    out = torch.empty(tgt.shape, dtype=torch.float32, device=hidden.device)  # (T, K)
    # 1. block sizes: rows x cols logits and cols x D upcast weights, each at most block_elements
    cols = max(1, min(vocab, block_elements // max(dim, 1)))
    rows = max(1, min(positions, MAX_ROWS, block_elements // cols))
    whole = cols >= vocab
    w_all = weight.float() if whole else None  # (V, D); a no-op for a float32 head
    b_all = bias.float() if bias is not None and whole else None
    for t0 in range(0, positions, rows):
        h = hidden[t0 : t0 + rows].float()  # (rows, D)
        idx = tgt[t0 : t0 + rows]  # (rows, K)
        if whole:
            # 2a. the whole vocabulary in one block: log_softmax's own arithmetic, then the targets' columns
            logits = h @ w_all.T  # (rows, V)
            if b_all is not None:
                logits += b_all
            top = logits.amax(dim=1, keepdim=True)  # (rows, 1)
            log_sum = torch.log(torch.exp(logits - top).sum(dim=1, keepdim=True))  # (rows, 1)
            out[t0 : t0 + rows] = (logits.gather(1, idx) - top) - log_sum
        else:
            # 2b. stream the vocabulary: a running logsumexp, and each target's logit from the block holding it
            lse, picked = _streamed(h, weight, bias, idx, cols)
            out[t0 : t0 + rows] = picked - lse[:, None]
    return out[:, 0] if single else out


def _streamed(h, weight, bias, idx, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(logsumexp over V, the target logits) for one block of rows, V in blocks of `cols`."""
    lse = torch.full((h.shape[0],), float("-inf"), dtype=torch.float32, device=h.device)  # (rows,)
    picked = torch.zeros(idx.shape, dtype=torch.float32, device=h.device)  # (rows, K)
    for v0 in range(0, weight.shape[0], cols):
        logits = h @ weight[v0 : v0 + cols].float().T  # (rows, cols)
        if bias is not None:
            logits += bias[v0 : v0 + cols].float()
        local = idx - v0
        inside = (local >= 0) & (local < logits.shape[1])
        picked = torch.where(inside, logits.gather(1, local.clamp(0, logits.shape[1] - 1)), picked)
        lse = torch.logaddexp(lse, torch.logsumexp(logits, dim=1))  # -inf + x -> x
    return lse, picked


def token_logprobs_naive(
    hidden: torch.Tensor, weight: torch.Tensor, targets, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """The torch way, all (T, V) logits at once: log_softmax((h @ W.T + b).float()).gather. The baseline."""
    tgt, single = as_target_matrix(targets, hidden.shape[0], hidden.device)
    logits = hidden @ weight.T  # (T, V) in the head's dtype, as a model's forward computes it
    if bias is not None:
        logits = logits + bias
    out = torch.log_softmax(logits.float(), dim=1).gather(1, tgt.long())  # (T, K)
    return out[:, 0] if single else out
