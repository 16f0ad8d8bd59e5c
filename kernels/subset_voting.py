"""Batched subset voting: majority, weighted and best-of-N winners for R random subsets of every problem.

Compute-vs-accuracy curves need, for each k, the accuracy of each strategy over many random size-k subsets
of the N samples: P x R votes per k. One program takes one problem and BLOCK_R subsets as a
(BLOCK_R, BLOCK_M) tile of members, gathers their classes and scores, and makes one pass over the
problem's class ids (count, exact quantised score sum, first sample index per class), keeping the
running winner under the tie rules. Tie rules and exact sums: see subset_voting_reference.py.

Dispatch and the interpreter: see kernels/dispatch.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .dispatch import (
    interpreter_enabled,
    load_triton,
    next_power_of_2,
    require_triton_mode,
    resolve_impl,
)
from .subset_voting_reference import quantize_scores, subset_vote_reference

STRATEGIES = ("majority", "weighted", "best_of_n")


@dataclass
class SubsetVotes:
    """Winning class per (problem, subset) for each strategy, and the mean accuracy per problem."""

    majority: torch.Tensor
    """(P, R) int64: class with the most samples; -1 when the subset has no answer."""
    weighted: torch.Tensor
    """(P, R) int64: class with the largest score sum; -1 when the subset has no answer."""
    best_of_n: torch.Tensor
    """(P, R) int64: class of the highest-scored sample; -1 when the subset has no answer."""
    accuracy: dict[str, torch.Tensor] | None = None
    """Strategy name -> (P,) float32 mean correctness over the R subsets (-1 counts as wrong);
    None when no class_correct was given."""


@functools.cache
def _build_kernel(interpret: bool):
    """Define the @triton.jit kernel on first use (once per interpreter setting; see dispatch.py)."""
    require_triton_mode(interpret)
    triton, tl = load_triton()

    @triton.jit
    def subset_vote_kernel(
        cls_ptr,
        score_ptr,
        qscore_ptr,
        members_ptr,
        num_cls_ptr,
        maj_ptr,
        wtd_ptr,
        bon_ptr,
        repeats,
        n_samples,
        width,
        stride_mp,
        stride_mr,
        IS_MASK: tl.constexpr,
        BLOCK_R: tl.constexpr,
        BLOCK_M: tl.constexpr,
    ):
        p = tl.program_id(0).to(tl.int64)
        rows = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)  # (BLOCK_R,)
        cols = tl.arange(0, BLOCK_M)  # (BLOCK_M,)
        inside = (rows < repeats)[:, None] & (cols < width)[None, :]  # (BLOCK_R, BLOCK_M)
        member_ptrs = members_ptr + p * stride_mp + rows.to(tl.int64)[:, None] * stride_mr + cols[None, :]
        # 1. the subset's samples: given indices, or the positions where the mask is set
        if IS_MASK:
            member = inside & (tl.load(member_ptrs, mask=inside, other=0) != 0)
            sample = tl.zeros((BLOCK_R, BLOCK_M), tl.int32) + cols[None, :]
        else:
            member = inside
            sample = tl.load(member_ptrs, mask=inside, other=0).to(tl.int32)  # indices < N < 2**31
        # 2. their classes and scores; non-members and class -1 do not vote
        at = p * n_samples + sample
        cls = tl.load(cls_ptr + at, mask=member, other=-1)
        voting = member & (cls >= 0)
        score = tl.load(score_ptr + at, mask=voting, other=-1.0)
        qscore = tl.load(qscore_ptr + at, mask=voting, other=0)
        # 3. best_of_n: highest score, then smallest sample index
        top = tl.max(score, axis=1)
        pick = tl.min(tl.where(voting & (score == top[:, None]), sample, n_samples), axis=1)
        best_of_n = tl.max(tl.where(voting & (sample == pick[:, None]), cls, -1), axis=1)
        # 4. one pass per class id of this problem, keeping the running winners
        maj = tl.full((BLOCK_R,), -1, tl.int32)
        maj_count = tl.zeros((BLOCK_R,), tl.int32)
        maj_first = tl.zeros((BLOCK_R,), tl.int32) + n_samples
        wtd = tl.full((BLOCK_R,), -1, tl.int32)
        wtd_total = tl.full((BLOCK_R,), -1, tl.int64)
        wtd_count = tl.zeros((BLOCK_R,), tl.int32)
        wtd_first = tl.zeros((BLOCK_R,), tl.int32) + n_samples
        for c in range(0, tl.load(num_cls_ptr + p)):
            in_c = voting & (cls == c)
            count = tl.sum(in_c.to(tl.int32), axis=1)
            first = tl.min(tl.where(in_c, sample, n_samples), axis=1)
            total = tl.sum(tl.where(in_c, qscore, 0), axis=1)
            # 4a. majority: more samples, then the smaller first sample index
            win = (count > 0) & ((count > maj_count) | ((count == maj_count) & (first < maj_first)))
            maj = tl.where(win, c, maj)
            maj_count = tl.where(win, count, maj_count)
            maj_first = tl.where(win, first, maj_first)
            # 4b. weighted: larger exact sum, then more samples, then the smaller first sample index
            tie = (total == wtd_total) & ((count > wtd_count) | ((count == wtd_count) & (first < wtd_first)))
            win = (count > 0) & ((total > wtd_total) | tie)
            wtd = tl.where(win, c, wtd)
            wtd_total = tl.where(win, total, wtd_total)
            wtd_count = tl.where(win, count, wtd_count)
            wtd_first = tl.where(win, first, wtd_first)
        # 5. store (P, R) winners
        out = p * repeats + rows
        row_ok = rows < repeats
        tl.store(maj_ptr + out, maj.to(tl.int64), mask=row_ok)
        tl.store(wtd_ptr + out, wtd.to(tl.int64), mask=row_ok)
        tl.store(bon_ptr + out, best_of_n.to(tl.int64), mask=row_ok)

    return triton, subset_vote_kernel


def vote_tiles(repeats: int, width: int, interpret: bool) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_M, num_warps).

    GPU: 2048 members (BLOCK_R x BLOCK_M) per program with 8 warps. Not yet timed on a GPU (none was
    available when written); chosen by compiling for sm_90 (kernels/aot.py) and reading register use:
    at BLOCK_M = 16/64/256, 2048 members with 8 warps spill 0 B; 4096 members spill up to 664 B with
    4 warps and 168 B with 8; 2048 with 4 warps spills 168 B at BLOCK_M = 64.
    Interpreter: per-op cost dominates, so 2**16 members per program; measured here (2 CPU cores)
    P=8, R=512, N=64, k=32, 8 classes: 0.4-0.5 s with BLOCK_R = 512..2048, 1.2 s with 128, 6.2 s with 32.
    """
    block_m = max(16, next_power_of_2(width))
    members = (1 << 16) if interpret else 2048
    block_r = max(1, min(members // block_m, next_power_of_2(repeats)))
    return block_r, block_m, (1 if interpret else 8)


def subset_vote_triton(
    class_ids: torch.Tensor,
    scores: torch.Tensor,
    subsets: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Launch the kernel on validated inputs: (majority, weighted, best_of_n), each (P, R) int64."""
    interpret = interpreter_enabled()
    triton, kernel = _build_kernel(interpret)
    problems, repeats, width = subsets.shape
    is_mask = subsets.dtype == torch.bool
    members = subsets.contiguous().view(torch.uint8) if is_mask else subsets.long().contiguous()
    num_cls = (class_ids.amax(dim=1).clamp(min=-1) + 1).to(torch.int32)  # (P,) class ids per problem
    outs = [torch.full((problems, repeats), -1, dtype=torch.long, device=subsets.device) for _ in range(3)]
    if problems == 0 or repeats == 0 or width == 0:
        return tuple(outs)
    block_r, block_m, num_warps = vote_tiles(repeats, width, interpret)
    kernel[(problems, triton.cdiv(repeats, block_r))](
        class_ids.to(torch.int32).contiguous(),
        scores.float().contiguous(),
        quantize_scores(scores).contiguous(),
        members,
        num_cls,
        *outs,
        repeats,
        class_ids.shape[1],
        width,
        members.stride(0),
        members.stride(1),
        IS_MASK=is_mask,
        BLOCK_R=block_r,
        BLOCK_M=block_m,
        num_warps=num_warps,
    )
    return tuple(outs)


def _describe(t: torch.Tensor) -> str:
    return f"{t.dtype} {tuple(t.shape)}"


def _validate(class_ids, scores, subsets, class_correct) -> int:
    """ValueError naming the argument and value for bad input; else 1 + the largest class id (0 if none)."""
    if class_ids.dim() != 2 or class_ids.dtype.is_floating_point or class_ids.dtype == torch.bool:
        raise ValueError(f"class_ids must be a 2-D integer tensor (P, N), got {_describe(class_ids)}")
    problems, n_samples = class_ids.shape
    if scores.shape != class_ids.shape or not scores.dtype.is_floating_point:
        raise ValueError(f"scores must be a float tensor of shape {(problems, n_samples)}, got {_describe(scores)}")
    outside = ~((scores >= 0) & (scores <= 1))  # nan included
    if bool(outside.any()):
        raise ValueError(f"scores must lie in [0, 1], got {scores[outside][0].item()}")
    if class_ids.numel() and int(class_ids.min()) < -1:
        raise ValueError(f"class_ids must be >= -1 (-1 = no answer), got {int(class_ids.min())}")
    if subsets.dim() != 3 or subsets.shape[0] != problems:
        raise ValueError(f"subsets must be (P={problems}, R, k) indices or (P, R, N) bool, got {_describe(subsets)}")
    _validate_subsets(subsets, n_samples)
    top = max(int(class_ids.max()) + 1, 0) if class_ids.numel() else 0
    if class_correct is None:
        return top
    if class_correct.dim() != 2 or class_correct.shape[0] != problems or class_correct.dtype != torch.bool:
        raise ValueError(f"class_correct must be a bool tensor (P={problems}, C), got {_describe(class_correct)}")
    if top > class_correct.shape[1]:
        raise ValueError(f"class_ids must be below C={class_correct.shape[1]} (class_correct's width), got {top - 1}")
    return top


def _validate_subsets(subsets: torch.Tensor, n_samples: int) -> None:
    """Index subsets: k <= N and every index in [0, N). Mask subsets: width N. Distinctness is not checked."""
    if subsets.dtype == torch.bool:
        if subsets.shape[2] != n_samples:
            raise ValueError(f"a bool subsets mask must be (P, R, N={n_samples}), got {_describe(subsets)}")
        return
    if subsets.dtype.is_floating_point:
        raise ValueError(f"subsets must hold integer sample indices or be a bool mask, got {subsets.dtype}")
    k = subsets.shape[2]
    if k > n_samples:
        raise ValueError(f"subset size k must be <= N={n_samples}, got k={k}")
    if subsets.numel() and (int(subsets.min()) < 0 or int(subsets.max()) >= n_samples):
        bad = int(subsets.min()) if int(subsets.min()) < 0 else int(subsets.max())
        raise ValueError(f"subsets must hold sample indices in [0, {n_samples}), got {bad}")


def _accuracy(winners: dict[str, torch.Tensor], class_correct: torch.Tensor) -> dict[str, torch.Tensor]:
    """Strategy -> (P,) mean over R of class_correct[p, winner], a -1 winner counting as wrong."""
    out = {}
    for name, winner in winners.items():  # (P, R)
        right = class_correct.gather(1, winner.clamp(min=0)) & (winner >= 0)
        out[name] = right.float().mean(dim=1)
    return out


def subset_vote(
    class_ids: torch.Tensor,
    scores: torch.Tensor,
    subsets: torch.Tensor,
    class_correct: torch.Tensor | None = None,
    *,
    impl: str = "auto",
) -> SubsetVotes:
    """Majority, weighted and best-of-N winners of R subsets per problem, and their mean accuracies.

    class_ids: (P, N) int answer class per sample, -1 = no answer. scores: (P, N) float in [0, 1]
    (compared as float32). subsets: (P, R, k) int sample indices (distinct within a row), or a
    (P, R, N) bool membership mask. class_correct: optional (P, C) bool, whether each class id is right.
    impl: "auto", "triton" or "torch" (see kernels/dispatch.py).
    """
    num_classes = _validate(class_ids, scores, subsets, class_correct)  # the table needs ids present only
    scores = scores.float()
    if resolve_impl(impl, class_ids, scores, subsets) == "triton":
        winners = subset_vote_triton(class_ids, scores, subsets)
    else:
        winners = subset_vote_reference(class_ids, scores, subsets, num_classes)
    votes = SubsetVotes(*winners)
    if class_correct is not None:
        votes.accuracy = _accuracy(dict(zip(STRATEGIES, winners)), class_correct.to(subsets.device))
    return votes
