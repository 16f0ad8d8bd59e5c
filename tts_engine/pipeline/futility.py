"""Will more samples help? The chance that a problem's next samples bring one the verifier accepts.

p_correct answers "is this answer right?"; an adaptive strategy also needs "will more samples change that?". A
problem whose every sample the verifier rejected is, most often, one no number of samples fixes (a chain longer
than the model was trained on). Its acceptance rate q, the share of its samples the verifier accepts (headline
score >= .5), is unknown; across problems it follows a Beta(alpha, beta) distribution, fitted on labelled runs
(`fit_acceptance`, by `tts calibrate`: a beta-binomial maximum likelihood over the problems' accepted counts). After
a of n samples accepted, q's posterior is Beta(alpha + a, beta + n - a), and the chance that R more samples bring
at least one accepted sample is

    1 - B(alpha + a, beta + n - a + R) / B(alpha + a, beta + n - a).

An adaptive strategy stops a problem as futile once that chance, for the samples it may still draw, falls below its
threshold. Across problems the rates are mostly near 0 or near 1, so the fitted Beta is U-shaped, and a run of
rejected samples quickly makes more of the same likely.

The counts alone cannot tell a problem that is out of the model's reach (every sample scored ~0) from one it almost
solves (rejected samples the verifier scored .01 or .3): on the default's fit set s8101 at N = 64, after 16
rejections the prior gives both .150, and later samples brought an accepted one to none of the first (26 problems)
and a third of the second (15; `python scripts/futility_check.py`). So where labelled runs with many samples per
problem exist, `tts calibrate` also fits the chance itself for a problem whose every sample was rejected: a logistic
model (`Fit`, as p_correct's) over how many were seen, how many more may come, and the log-odds of the best and mean
verifier score so far (`calibration.rejected_features`), on every state a fixed run passes through. The Beta
posterior stays for problems with an accepted sample, and wherever no such fit was made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

ACCEPT_AT = 0.5
"""A sample is accepted when its headline verifier score is at least this."""


@dataclass
class AcceptancePrior:
    """Beta(alpha, beta) over the share of a problem's samples the verifier accepts, for one score kind."""

    kind: str
    alpha: float
    beta: float
    fitted_on: dict[str, Any] | None = None
    """What it was fitted on: problems, samples."""


DEFAULT_PRIOR = (0.2, 0.2)
"""(alpha, beta) where no fit was made: U-shaped, as fitted priors of this kind are (most problems' samples are
almost all accepted or almost all rejected)."""


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def chance_of_acceptance(alpha: float, beta: float, accepted: int, seen: int, remaining: int) -> float:
    """The chance that `remaining` more samples bring at least one the verifier accepts, after `accepted` of `seen`
    were (see the module docstring)."""
    if remaining <= 0:
        return 0.0
    a, b = alpha + accepted, beta + seen - accepted
    return 1.0 - math.exp(_log_beta(a, b + remaining) - _log_beta(a, b))


def accepted_count(scores: Sequence[float]) -> int:
    return sum(score >= ACCEPT_AT for score in scores)


def fit_acceptance(counts: Sequence[tuple[int, int]], kind: str) -> AcceptancePrior:
    """The beta-binomial maximum-likelihood Beta(alpha, beta) of problems' (accepted, samples) counts: a log grid,
    then a finer one around its best point (no optimiser needed for two parameters)."""
    counts = [(a, n) for a, n in counts if n > 0]
    if not counts:
        raise ValueError("no problem with samples to fit the acceptance prior on")

    def log_likelihood(alpha: float, beta: float) -> float:
        return sum(_log_beta(alpha + a, beta + n - a) for a, n in counts) - len(counts) * _log_beta(alpha, beta)

    best = (0.0, 0.0)
    centre, span = (0.0, 0.0), 4.0  # log alpha, log beta
    for _ in range(3):  # each pass: an 11 x 11 grid, then a grid 4x finer around the best point
        grid = [span * (k / 5 - 1) for k in range(11)]
        points = [(centre[0] + x, centre[1] + y) for x in grid for y in grid]
        best = max(points, key=lambda p: log_likelihood(math.exp(p[0]), math.exp(p[1])))
        centre, span = best, span / 4
    alpha, beta = math.exp(best[0]), math.exp(best[1])
    samples = sum(n for _, n in counts)
    return AcceptancePrior(kind, round(alpha, 4), round(beta, 4), {"problems": len(counts), "samples": samples})
