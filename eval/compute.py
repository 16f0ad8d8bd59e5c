"""The compute axis of a curve: samples, generated and verifier tokens, FLOPs, per problem at each k.

A random k-subset of a problem's N samples holds, in expectation, exactly k x (mean tokens per sample of that
problem) tokens, so the figures are exact expectations, averaged over problems. Verifier tokens count for a
strategy whose score kind needs a verifier pass; the likelihood score comes free with generation.
FLOPs = 2 x parameters x tokens (forward passes only; prompt tokens are not counted).
"""

from __future__ import annotations

import numpy as np

AXES = ("samples", "generated_tokens", "verifier_tokens", "tokens", "flops")
"""Every compute axis a curve is measured on; `tokens` = generated + verifier tokens."""
FREE_SCORE_KINDS = ("likelihood",)
"""Score kinds that cost nothing beyond generation."""


def score_kind_of(strategy: str) -> str | None:
    """`weighted:verifier_yes_no` -> `verifier_yes_no`; `majority` and `pass@k` -> None."""
    return strategy.split(":", 1)[1] if ":" in strategy else None


def uses_verifier(strategy: str) -> bool:
    kind = score_kind_of(strategy)
    return kind is not None and kind not in FREE_SCORE_KINDS


def compute_axes(
    strategy: str, ks: list[int], num_tokens: np.ndarray, verifier_tokens: np.ndarray, num_parameters: int | None
) -> dict[str, list[float] | None]:
    """Axis -> one value per k (flops None without a parameter count); token arrays are (P, N)."""
    k = np.asarray(ks, dtype=np.float64)  # (K,)
    generated = k * float(num_tokens.mean()) if num_tokens.size else np.zeros_like(k)
    verifier = (
        k * float(verifier_tokens.mean()) if uses_verifier(strategy) and verifier_tokens.size else np.zeros_like(k)
    )
    tokens = generated + verifier
    return {
        "samples": k.tolist(),
        "generated_tokens": generated.tolist(),
        "verifier_tokens": verifier.tolist(),
        "tokens": tokens.tolist(),
        "flops": (2.0 * num_parameters * tokens).tolist() if num_parameters else None,
    }
