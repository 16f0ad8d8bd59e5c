"""The efficiency ratio: how much less compute a strategy needs to match majority voting at N.

For a strategy, find the smallest compute at which its curve reaches majority@N's accuracy, interpolating
accuracy linearly in log2(compute) between measured points, and divide majority's compute at N by it.
"""

from __future__ import annotations

import math
from typing import Any

TOLERANCE = 1e-12
"""Accuracies this close to the target count as reaching it (floating-point sums of equal means)."""


def first_reach(compute: list[float], accuracy: list[float], target: float) -> tuple[float | None, str]:
    """Smallest compute where the curve reaches `target`, and a note when that figure needs one."""
    for i, (x, y) in enumerate(zip(compute, accuracy)):
        if y + TOLERANCE < target:
            continue
        if i == 0:
            return x, "reached at the first measured point: the true crossing may lie lower, the ratio is a lower bound"
        x0, y0 = compute[i - 1], accuracy[i - 1]
        if x0 <= 0 or x <= 0:
            return x, ""
        fraction = (target - y0) / (y - y0)
        log_x = math.log2(x0) + fraction * (math.log2(x) - math.log2(x0))
        return 2.0**log_x, ""
    best = max(accuracy) if accuracy else float("nan")
    return None, f"never reaches {target:.4f} (best {best:.4f})"


def efficiency_ratio(
    compute: list[float], accuracy: list[float], target: float, reference_compute: float
) -> dict[str, Any]:
    """{"reaches_at", "ratio" (reference_compute / reaches_at), "note"}; nulls when the target is never reached
    or is 0 (every curve starts there: no ratio means anything)."""
    if target <= 0:
        return {"reaches_at": None, "ratio": None, "note": "the target accuracy is 0: no ratio"}
    reaches_at, note = first_reach(compute, accuracy, target)
    ratio = reference_compute / reaches_at if reaches_at else None
    return {"reaches_at": reaches_at, "ratio": ratio, "note": note}
