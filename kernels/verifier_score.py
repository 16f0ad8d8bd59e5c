"""The yes/no read: log P(Yes) and log P(No) at each prompt's next position, without the logits.

One position per prompt and two targets: the K = 2 case of the teacher-forced token-score op
(kernels/token_scores.py), which holds the kernel, its torch reference and the dispatch between them.
"""

from __future__ import annotations

import torch

from .token_scores import token_logprobs


def fused_verifier_score(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    yes_id: int,
    no_id: int,
    *,
    bias: torch.Tensor | None = None,
    impl: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """log P(Yes) and log P(No) under the full-vocabulary softmax of hidden @ weight.T (+ bias); each (B,) fp32.

    hidden: (B, D) final-position hidden states; weight: (V, D) LM head; fp32, fp16 or bf16 (same for both);
    bias: (V,) or None. impl: "auto", "triton" or "torch" (see kernels/dispatch.py).
    """
    vocab = weight.shape[0] if weight.dim() == 2 else 0
    ids = []
    for name, token in (("yes_id", yes_id), ("no_id", no_id)):
        token = _as_int(token)
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
            raise ValueError(f"{name} must be an int in [0, {vocab}), got {token!r}")
        ids.append(token)
    if hidden.dim() != 2:
        raise ValueError(f"hidden must be 2-D (B, D), got shape {tuple(hidden.shape)}")
    targets = torch.tensor(ids, device=hidden.device).expand(hidden.shape[0], 2)  # (B, 2), no copy per row
    logp = token_logprobs(hidden, weight, targets, bias, impl=impl)  # (B, 2)
    return logp[:, 0], logp[:, 1]


def _as_int(token):
    """Accept Python ints and integer scalars (numpy, 0-d tensors); leave anything else for the check."""
    if isinstance(token, torch.Tensor) and token.numel() == 1 and not token.is_floating_point():
        return int(token.item())
    if hasattr(token, "__index__") and not isinstance(token, bool):
        return int(token.__index__())
    return token


def yes_no_score(logp_yes: torch.Tensor, logp_no: torch.Tensor) -> torch.Tensor:
    """P(Yes) / (P(Yes) + P(No)) from the two log-probabilities, in [0, 1]; (B,).

    Computed as sigmoid(logp_yes - logp_no), which neither overflows nor underflows to 0/0 when both
    probabilities are tiny (log-probs of -1000 give 0.5, not nan).
    """
    if logp_yes.shape != logp_no.shape:
        raise ValueError(
            f"logp_yes and logp_no must have one shape, got {tuple(logp_yes.shape)} and {tuple(logp_no.shape)}"
        )
    return torch.sigmoid(logp_yes.float() - logp_no.float())
