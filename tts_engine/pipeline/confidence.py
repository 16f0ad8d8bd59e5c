"""Confidence from the model's own tokens (DeepConf, arXiv 2508.15260): pure functions and their score kinds.

Definitions (DeepConf's):
- token confidence C_i = -(1/k) * sum_{j=1..k} log P_i(j), the negative mean log-prob of the k most likely tokens
  at position i (k = `SamplingParams.top_logprobs`). A peaked distribution (the model is sure) has a tiny
  tail among its top k, so a large C; a flat one a small C.
- a group is a window of `window` consecutive tokens; its confidence is the mean C over it. Groups slide one
  token at a time over the trace (every full window); a trace shorter than the window is one group.
- mean confidence: mean C over the trace; lowest group: the smallest group confidence; bottom 10%: the mean of
  the lowest 10% of group confidences (at least one); tail: mean C over the last `tail` tokens.

The score kinds (`conf_mean`, `conf_lowest_group`, `conf_bottom10`, `conf_tail`) hold each of those as
C / (1 + C): in [0, 1), increasing in C (C = s / (1 - s) gives it back), so they vote, rank and filter like
every score kind of the catalogue ("higher is better, in [0, 1]"). Thresholds of the online strategy compare
raw C values (the map is monotone: the same samples pass either way).

Defaults (`SamplingParams`): k = 20 (DeepConf's; vLLM's default `max_logprobs`); window 8 tokens (the embedded
default writes a step line in about 10 tokens and a solution in 15-80, so a group is about one step, as DeepConf's
2048-token groups are a few percent of its 10k-30k-token traces); tail 16 tokens (the last step and the boxed
answer). Raise window and tail with the trace lengths of a real model.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..backends.base import token_confidence, window_confidence  # noqa: F401  (with the backends that compute them)
from ..verifiers.registry import register_score_kind

BOTTOM_FRACTION = 0.1
"""Share of the groups whose mean is the bottom-10% group confidence."""

CONFIDENCE_KINDS = ("conf_mean", "conf_lowest_group", "conf_bottom10", "conf_tail")
"""The score kinds every sample with per-token top-k log-probs carries."""


def group_confidences(confidences: Sequence[float], window: int) -> list[float]:
    """Mean C of every full window of `window` consecutive tokens `# (T - window + 1,)`; one group (the whole
    trace) when it is shorter than the window; [] for an empty trace.

    >>> group_confidences([1.0, 2.0, 3.0, 6.0], 2)
    [1.5, 2.5, 4.5]
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    n = len(confidences)
    if n == 0:
        return []
    if n <= window:
        return [sum(confidences) / n]
    out, total = [], sum(confidences[:window])
    out.append(total / window)
    for i in range(window, n):
        total += confidences[i] - confidences[i - window]
        out.append(total / window)
    return out


def trace_confidences(confidences: Sequence[float], window: int, tail: int) -> dict[str, float]:
    """The four trace confidences (raw C, not mapped) of one sample's per-token confidences `# (T,)` (all 0 for
    an empty trace)."""
    if not confidences:
        return dict.fromkeys(CONFIDENCE_KINDS, 0.0)
    groups = group_confidences(confidences, window)
    lowest = sorted(groups)[: max(1, math.ceil(BOTTOM_FRACTION * len(groups)))]
    last = confidences[-tail:]
    return {
        "conf_mean": sum(confidences) / len(confidences),
        "conf_lowest_group": min(groups),
        "conf_bottom10": sum(lowest) / len(lowest),
        "conf_tail": sum(last) / len(last),
    }


def to_score(confidence: float) -> float:
    """C -> C / (1 + C) in [0, 1) (negative C, impossible for a true top-k, clipped to 0)."""
    c = max(0.0, float(confidence))
    return c / (1.0 + c) if math.isfinite(c) else 1.0


def from_score(score: float) -> float:
    """The inverse of `to_score`: C = s / (1 - s)."""
    return score / (1.0 - score) if score < 1.0 else math.inf


def confidence_scores(confidences: Sequence[float], window: int, tail: int) -> dict[str, float]:
    """The score kinds of one sample (C / (1 + C) of each trace confidence, rounded)."""
    return {kind: round(to_score(c), 6) for kind, c in trace_confidences(confidences, window, tail).items()}


def percentile_threshold(values: Sequence[float], keep: float) -> float:
    """The threshold that keeps the top `keep` share of `values`: their (1 - keep) quantile, linear
    interpolation (numpy's default). keep = 0.1 -> the 90th percentile (DeepConf-low), 0.9 -> the 10th.

    >>> percentile_threshold([1.0, 2.0, 3.0, 4.0, 5.0], 0.5)
    3.0
    """
    if not values:
        raise ValueError("percentile_threshold needs at least one value")
    if not 0 < keep <= 1:
        raise ValueError(f"keep must be in (0, 1], got {keep}")
    ordered = sorted(values)
    position = (1.0 - keep) * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


register_score_kind(
    "conf_mean", "mean token confidence C/(1+C), C = -mean top-k log-prob (DeepConf)", "every run with top_logprobs > 0"
)
register_score_kind(
    "conf_lowest_group",
    "lowest sliding-window (group) token confidence, as C/(1+C) (DeepConf)",
    "every run with top_logprobs > 0",
)
register_score_kind(
    "conf_bottom10",
    "mean of the lowest 10% of group confidences, as C/(1+C) (DeepConf)",
    "every run with top_logprobs > 0",
)
register_score_kind(
    "conf_tail",
    "token confidence over the trace's last tokens, as C/(1+C) (DeepConf)",
    "every run with top_logprobs > 0",
)
