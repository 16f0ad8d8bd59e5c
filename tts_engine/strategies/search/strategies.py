"""The search strategies, each a plan of groups over one problem's N beams (search-and-learn's definitions).

Every group grows the same way: each round its kept beams get M children each, finished children leave the
pool, the best unfinished children are kept; a group ends once it holds `target` finished beams.
- **beam**: one group; the root gets N children, then the best ceil(still needed / M) <= N/M beams are kept.
- **dvts** (diverse verifier tree search): N/M independent subtrees; each keeps only its best child (greedy),
  so the subtrees explore different parts of the tree.
A new search is one function `(n, beam_width) -> list[GroupPlan]` and its registration beside beam's and dvts's
(`plan.py`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GroupPlan:
    """How one group of beams grows."""

    root_children: int
    """Children of the root (the first step's samples)."""
    keep: int
    """Most beams kept after a round."""
    branch: int
    """Children of each kept beam per round (M)."""
    target: int
    """Finished beams the group returns."""


def beam_groups(n: int, beam_width: int) -> list[GroupPlan]:
    return [GroupPlan(root_children=n, keep=n // beam_width, branch=beam_width, target=n)]


def dvts_groups(n: int, beam_width: int) -> list[GroupPlan]:
    return [
        GroupPlan(root_children=beam_width, keep=1, branch=beam_width, target=beam_width)
        for _ in range(n // beam_width)
    ]
