"""Plain-torch subset voting, vectorised: a scatter-add over a (P, R, C) table per block of problems.

For every problem p and subset r it finds the winning answer class under
- majority: most samples; ties -> the class whose smallest sample index in the subset is smallest;
- weighted: largest sum of scores; ties -> larger count, then as majority;
- best_of_n: the class of the highest-scored sample; ties -> the smallest sample index.
Samples of class -1 (no answer) vote for nothing; a subset without an answer gives -1.

Exact ties. Weighted sums are taken over scores quantised to multiples of 2**-SCORE_QUANTUM_BITS and held
as int64, so every sum is exact and independent of summation order: the torch and Triton paths (and any
order of the samples) see the same ties. Two classes whose float sums differ by less than about
N * 2**-32 count as tied. best_of_n compares the scores themselves (comparisons are exact already).
"""

from __future__ import annotations

import torch

SCORE_QUANTUM_BITS = 32
"""Weighted voting sums round(score * 2**32) as int64: exact for any N below 2**31."""

BLOCK_ELEMENTS = 1 << 22
"""Most elements per (problems, R, max(M, C + 1)) block: about 32 MB per int64 tensor."""


def quantize_scores(scores: torch.Tensor) -> torch.Tensor:
    """(P, N) float scores in [0, 1] -> (P, N) int64 multiples of 2**-SCORE_QUANTUM_BITS."""
    return torch.round(scores.double() * float(1 << SCORE_QUANTUM_BITS)).long()


def subset_vote_reference(
    class_ids: torch.Tensor, scores: torch.Tensor, subsets: torch.Tensor, num_classes: int,
    *, block_elements: int = BLOCK_ELEMENTS,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(majority, weighted, best_of_n), each (P, R) int64, for validated inputs.

    class_ids (P, N) int, -1 = no answer, ids below num_classes; scores (P, N) in [0, 1];
    subsets (P, R, k) int64 sample indices, or (P, R, N) bool membership mask.
    """
    problems, repeats, width = subsets.shape
    per_problem = max(1, repeats * max(width, num_classes + 1))
    block = max(1, block_elements // per_problem)
    qscores = quantize_scores(scores)
    outs = [torch.full((problems, repeats), -1, dtype=torch.long, device=subsets.device) for _ in range(3)]
    if width == 0 or num_classes == 0:  # no sample, or no sample with an answer: nothing wins
        return tuple(outs)
    for p0 in range(0, problems, block):
        rows = slice(p0, p0 + block)
        members = _members(subsets[rows], class_ids.shape[1])
        winners = _vote_block(class_ids[rows].long(), scores[rows], qscores[rows], *members, num_classes)
        for out, winner in zip(outs, winners):
            out[rows] = winner
    return tuple(outs)


def _members(subsets: torch.Tensor, n_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(sample, member): (p, R, M) sample indices and whether each is in the subset."""
    if subsets.dtype == torch.bool:
        sample = torch.arange(n_samples, device=subsets.device).expand(subsets.shape)  # (p, R, N)
        return sample, subsets
    return subsets.long(), torch.ones(subsets.shape, dtype=torch.bool, device=subsets.device)


def _vote_block(
    class_ids: torch.Tensor, scores: torch.Tensor, qscores: torch.Tensor,
    sample: torch.Tensor, member: torch.Tensor, num_classes: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Winners for one block of problems; class_ids etc. (p, N), sample and member (p, R, M)."""
    p, repeats, width = sample.shape
    n_samples = class_ids.shape[1]
    flat = sample.reshape(p, repeats * width)
    cls = class_ids.gather(1, flat).view(p, repeats, width)  # (p, R, M)
    voting = member & (cls >= 0)
    # 1. per-class count, exact score sum and first (smallest) sample index; slot 0 collects non-votes
    slot = torch.where(voting, cls + 1, 0)
    table = (p, repeats, num_classes + 1)
    count = torch.zeros(table, dtype=torch.long, device=cls.device).scatter_add_(2, slot, voting.long())
    q = torch.where(voting, qscores.gather(1, flat).view(p, repeats, width), 0)
    total = torch.zeros(table, dtype=torch.long, device=cls.device).scatter_add_(2, slot, q)
    seen = torch.where(voting, sample, n_samples)
    first = torch.full(table, n_samples, dtype=torch.long, device=cls.device)
    first = first.scatter_reduce_(2, slot, seen, reduce="amin")
    count, total, first = count[..., 1:], total[..., 1:], first[..., 1:]  # (p, R, C)
    # 2. lexicographic winners; `first` differs between present classes, so there is one winner
    present = count > 0
    majority = _lexicographic_argmax(present, (count, -first))
    weighted = _lexicographic_argmax(present, (total, count, -first))
    # 3. best_of_n: highest score, then smallest sample index
    s = torch.where(voting, scores.gather(1, flat).view(p, repeats, width), -1.0)
    top = voting & (s == s.amax(dim=2, keepdim=True))
    pick = torch.where(top, sample, n_samples).argmin(dim=2, keepdim=True)  # (p, R, 1) position
    best_of_n = torch.where(voting.any(dim=2), cls.gather(2, pick).squeeze(2), -1)
    return majority, weighted, best_of_n


def _lexicographic_argmax(present: torch.Tensor, keys: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Index along the last dim of the present entry with the largest keys, in order; -1 if none."""
    candidate = present
    for key in keys:
        floor = torch.iinfo(key.dtype).min
        masked = torch.where(candidate, key, floor)
        candidate = candidate & (masked == masked.amax(dim=-1, keepdim=True))
    winner = candidate.to(torch.uint8).argmax(dim=-1)
    return torch.where(present.any(dim=-1), winner, -1)
