"""The compute axis of a curve: samples, generated and verifier tokens, FLOPs, per problem at each k.

A random k-subset of a problem's N samples holds, in expectation, exactly k x (mean tokens per sample of that
problem) generated tokens, so the figures are exact expectations, averaged over problems. The engine verifies
each distinct text of a problem once (a repeat records 0 verifier tokens), so a subset pays a text's verifier
tokens once if any of its m samples is in it: probability 1 - C(N - m, k) / C(N, k). Verifier tokens count for a
aggregation whose score kind needs a verifier pass; the likelihood score comes free with generation.
FLOPs = 2 x parameters x tokens (forward passes only; prompt tokens are not counted).
"""

from __future__ import annotations

import math

import numpy as np

AXES = ("samples", "generated_tokens", "verifier_tokens", "tokens", "flops")
"""Every compute axis a curve is measured on; `tokens` = generated + verifier tokens."""
FREE_SCORE_KINDS = ("likelihood",)
"""Score kinds that cost nothing beyond generation."""


def score_kind_of(aggregation: str) -> str | None:
    """`weighted:verifier_yes_no` -> `verifier_yes_no`; `majority` and `pass@k` -> None."""
    return aggregation.split(":", 1)[1] if ":" in aggregation else None


def uses_verifier(aggregation: str) -> bool:
    kind = score_kind_of(aggregation)
    return kind is not None and kind not in FREE_SCORE_KINDS


def expected_verifier_tokens(verifier_tokens: np.ndarray, text_ids: np.ndarray | None, ks: list[int]) -> np.ndarray:
    """Mean over problems of the verifier tokens a random k-subset computes `# (K,)`: a text verified once (its
    repeats recorded 0) costs its tokens when any of its samples is drawn; other samples cost their own."""
    k = np.asarray(ks, dtype=np.float64)  # (K,)
    if text_ids is None or not verifier_tokens.size:
        return k * float(verifier_tokens.mean()) if verifier_tokens.size else np.zeros_like(k)
    p, n = verifier_tokens.shape
    total = np.zeros_like(k)
    for i in range(p):
        for text in np.unique(text_ids[i]):
            costs = verifier_tokens[i, text_ids[i] == text]  # in sample order: the first one was verified
            m = len(costs)
            if m > 1 and not costs[1:].any():
                drawn = np.array([1.0 - math.comb(n - m, int(j)) / math.comb(n, int(j)) for j in ks])  # (K,)
                total += costs[0] * drawn
            else:
                total += costs.sum() * k / n
    return total / p


def compute_axes(
    aggregation: str,
    ks: list[int],
    num_tokens: np.ndarray,
    verifier_tokens: np.ndarray,
    num_parameters: int | None,
    text_ids: np.ndarray | None = None,
) -> dict[str, list[float] | None]:
    """Axis -> one value per k (flops None without a parameter count); token arrays and text ids are (P, N)."""
    k = np.asarray(ks, dtype=np.float64)  # (K,)
    generated = k * float(num_tokens.mean()) if num_tokens.size else np.zeros_like(k)
    verifier = (
        expected_verifier_tokens(verifier_tokens, text_ids, ks) if uses_verifier(aggregation) else np.zeros_like(k)
    )
    tokens = generated + verifier
    return {
        "samples": k.tolist(),
        "generated_tokens": generated.tolist(),
        "verifier_tokens": verifier.tolist(),
        "tokens": tokens.tolist(),
        "flops": (2.0 * num_parameters * tokens).tolist() if num_parameters else None,
    }
