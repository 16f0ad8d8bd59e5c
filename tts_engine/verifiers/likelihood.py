"""The free baseline: a sample's own mean token log-probability, mapped to (0, 1]."""

from __future__ import annotations

import math
from typing import Sequence


def likelihood_score(logprobs: Sequence[float]) -> float:
    """exp(mean token log-prob): the geometric-mean token probability; 0 for an empty sample."""
    if not logprobs:
        return 0.0
    return math.exp(sum(logprobs) / len(logprobs))
