"""The efficiency ratio: how much less compute an aggregation needs to match majority voting at N.

For an aggregation, find the smallest compute at which its curve reaches majority@N's accuracy, interpolating
accuracy linearly in log2(compute) between measured points, and divide majority's compute at N by it.

"Reaches" allows for the Monte Carlo noise of the curve itself: a point whose accuracy is an estimate over random
subsets counts as reaching the target when it lies within Z_TOLERANCE of its subset-sampling standard errors
below it (points computed over every subset are exact and get no slack). Without it, when the target is near
1.000, one unlucky subset in a thousand decides whether the crossing is at k = 8 or k = 32.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

TOLERANCE = 1e-12
"""Accuracies this close to the target count as reaching it (floating-point sums of equal means)."""
Z_TOLERANCE = 2.0
"""Standard errors of the subset sampling a point may lie below the target and still reach it."""


def tolerances(se_subsets: Sequence[float] | None, length: int, z: float = Z_TOLERANCE) -> list[float]:
    """The slack of each point: z times its subset-sampling standard error (0 for exact points)."""
    if se_subsets is None:
        return [TOLERANCE] * length
    return [max(TOLERANCE, z * float(se)) for se in se_subsets]


def first_reach(
    compute: list[float], accuracy: list[float], target: float, slack: Sequence[float] | None = None
) -> tuple[float | None, str]:
    """Smallest compute where the curve reaches `target` (within each point's `slack`), and a note when that
    figure needs one."""
    slack = list(slack) if slack is not None else [TOLERANCE] * len(accuracy)
    for i, (x, y) in enumerate(zip(compute, accuracy)):
        if y + slack[i] < target:
            continue
        if i == 0:
            return x, "reached at the first measured point: the true crossing may lie lower, the ratio is a lower bound"
        x0, y0 = compute[i - 1], accuracy[i - 1]
        if y < target or x0 <= 0 or x <= 0:  # reached within its slack only: no crossing to interpolate
            return x, ""
        fraction = (target - y0) / (y - y0)
        log_x = math.log2(x0) + fraction * (math.log2(x) - math.log2(x0))
        return 2.0**log_x, ""
    best = max(accuracy) if accuracy else float("nan")
    return None, f"never reaches {target:.4f} (best {best:.4f})"


def efficiency_ratio(
    compute: list[float],
    accuracy: list[float],
    target: float,
    reference_compute: float,
    se_subsets: Sequence[float] | None = None,
) -> dict[str, Any]:
    """{"reaches_at", "ratio" (reference_compute / reaches_at), "tolerance" (the slack where it reached), "note"};
    nulls when the target is never reached or is 0 (every curve starts there: no ratio means anything)."""
    if target <= 0:
        return {"reaches_at": None, "ratio": None, "tolerance": None, "note": "the target accuracy is 0: no ratio"}
    slack = tolerances(se_subsets, len(accuracy))
    reaches_at, note = first_reach(compute, accuracy, target, slack)
    ratio = reference_compute / reaches_at if reaches_at else None
    used = next(((y, s) for y, s in zip(accuracy, slack) if y + s >= target), None)
    tolerance = float(f"{used[1]:.3g}") if used is not None and used[0] < target else None  # None: reached outright
    return {"reaches_at": reaches_at, "ratio": ratio, "tolerance": tolerance, "note": note}
