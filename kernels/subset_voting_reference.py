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

CPU_BLOCK_ELEMENTS = 1 << 18
"""Most elements per (problems, R, max(M, C + 1)) block on a CPU, where cache-sized blocks win. Measured
(1 thread, P=100, N=256, R=1000): k=4: 123 ms at 2**18, 345 ms at 2**22; k=64: 240 vs 657 ms;
k=256: 730 vs 1495 ms (2**17: 878 ms)."""

GPU_BLOCK_ELEMENTS = 1 << 24
"""The same on a GPU, where each block costs ~15 kernel launches: 128 MB per int64 tensor. Not timed."""


def quantize_scores(scores: torch.Tensor) -> torch.Tensor:
    """(P, N) float scores in [0, 1] -> (P, N) int64 multiples of 2**-SCORE_QUANTUM_BITS."""
    return torch.round(scores.double() * float(1 << SCORE_QUANTUM_BITS)).long()


def subset_vote_reference(
    class_ids: torch.Tensor,
    scores: torch.Tensor,
    subsets: torch.Tensor,
    num_classes: int,
    *,
    block_elements: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(majority, weighted, best_of_n), each (P, R) int64, for validated inputs.

    class_ids (P, N) int, -1 = no answer, ids below num_classes; scores (P, N) in [0, 1];
    subsets (P, R, k) int64 sample indices, or (P, R, N) bool membership mask.
    """
    problems, repeats, width = subsets.shape
    outs = [torch.full((problems, repeats), -1, dtype=torch.long, device=subsets.device) for _ in range(3)]
    if width == 0 or num_classes == 0:  # no sample, or no sample with an answer: nothing wins
        return tuple(outs)
    class_ids = class_ids.long()
    qscores, rank = quantize_scores(scores), best_of_n_rank(class_ids, scores)  # (P, N) each
    if block_elements is None:
        block_elements = GPU_BLOCK_ELEMENTS if subsets.is_cuda else CPU_BLOCK_ELEMENTS
    block = max(1, block_elements // max(1, repeats * max(width, num_classes + 1)))
    for p0 in range(0, problems, block):
        rows = slice(p0, p0 + block)
        block_classes = int(class_ids[rows].max()) + 1  # tables only as wide as this block needs
        if block_classes == 0:
            continue  # no answers in this block: the winners stay -1
        sample, member = _members(subsets[rows], class_ids.shape[1])
        winners = _vote_block(class_ids[rows], qscores[rows], rank[rows], sample, member, block_classes)
        for out, winner in zip(outs, winners):
            out[rows] = winner
    return tuple(outs)


def best_of_n_rank(class_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """(P, N) int64: 0 for samples without an answer, else 1 + rank by (score, then smaller index).

    The highest rank in a subset is its best_of_n sample: one gather and one max per subset instead of a
    max over scores and a second pass for ties. Ranks only compare scores, so they are exact.
    """
    n_samples = class_ids.shape[1]
    descending_index = torch.arange(n_samples - 1, -1, -1, device=scores.device)
    # a stable ascending sort of samples listed by descending index: equal scores keep the smaller
    # index last, that is, ranked higher
    order = descending_index[scores[:, descending_index].argsort(dim=1, stable=True)]  # (P, N) sample ids
    rank = torch.empty_like(order).scatter_(
        1, order, torch.arange(1, n_samples + 1, device=scores.device).expand_as(order).contiguous()
    )
    return torch.where(class_ids >= 0, rank, 0)


def _members(subsets: torch.Tensor, n_samples: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(sample, member): (p, R, M) sample indices, and a membership mask (None: all are members)."""
    if subsets.dtype == torch.bool:
        sample = torch.arange(n_samples, device=subsets.device).expand(subsets.shape)  # (p, R, N)
        return sample, subsets
    return subsets.long(), None


def _vote_block(
    class_ids: torch.Tensor,
    qscores: torch.Tensor,
    rank: torch.Tensor,
    sample: torch.Tensor,
    member: torch.Tensor | None,
    num_classes: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Winners for one block of problems; class_ids etc. (p, N), sample and member (p, R, M)."""
    p, repeats, width = sample.shape
    n_samples = class_ids.shape[1]
    flat = sample.reshape(p, repeats * width)
    cls = class_ids.gather(1, flat).view(p, repeats, width)  # (p, R, M)
    # 1. per-class count, exact score sum and smallest sample index in a (p, R, 1 + C) table; slot 0
    #    collects samples without an answer and non-members and is dropped
    slot = cls + 1 if member is None else (cls + 1) * member
    table = (p, repeats, num_classes + 1)
    count = torch.zeros(table, dtype=torch.long, device=cls.device)
    count.scatter_add_(2, slot, torch.ones_like(slot))
    total = torch.zeros(table, dtype=torch.long, device=cls.device)
    total.scatter_add_(2, slot, qscores.gather(1, flat).view(p, repeats, width))
    first = torch.full(table, n_samples, dtype=torch.long, device=cls.device)
    first.scatter_reduce_(2, slot, sample if sample.is_contiguous() else sample.contiguous(), reduce="amin")
    count, total, first = count[..., 1:], total[..., 1:], first[..., 1:]  # (p, R, C)
    # 2. winners by lexicographic keys; `first` differs between present classes: one winner each
    majority = _argmax_or_none(count * (n_samples + 1) + (n_samples - first))
    weighted = _weighted_winner(count, total, first, n_samples)
    # 3. best_of_n: the member with the highest rank (0 = no answer, or not a member)
    key = rank.gather(1, flat).view(p, repeats, width)
    key = key if member is None else key * member
    top, pos = key.max(dim=2, keepdim=True)
    best_of_n = torch.where(top > 0, cls.gather(2, pos), -1).squeeze(2)
    return majority, weighted, best_of_n


def _argmax_or_none(key: torch.Tensor) -> torch.Tensor:
    """Argmax over the last dim of keys that are 0 for absent classes and > 0 for present ones; -1 if none."""
    top, winner = key.max(dim=-1)
    return torch.where(top > 0, winner, -1)


def _weighted_winner(count, total, first, n_samples: int) -> torch.Tensor:
    """Largest total, then count, then smaller first; one packed int64 key when it fits, else in turn."""
    base = n_samples + 1
    if (n_samples << SCORE_QUANTUM_BITS) * base * base < (1 << 62):  # N up to about 1000
        return _argmax_or_none((total * base + count) * base + (n_samples - first))
    candidate = count > 0
    for key in (total, count, -first):
        masked = torch.where(candidate, key, torch.iinfo(key.dtype).min)
        candidate = candidate & (masked == masked.amax(dim=-1, keepdim=True))
    winner = candidate.to(torch.uint8).argmax(dim=-1)
    return torch.where(candidate.any(dim=-1), winner, -1)
