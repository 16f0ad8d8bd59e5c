"""Per-problem accuracy of every voting aggregation over given subsets, batched through the subset-vote kernel.

On a GPU (impl "auto" or "triton") the tensors go to CUDA and the Triton kernel votes; otherwise the
kernel's plain-torch version does.
"""

from __future__ import annotations

import numpy as np
import torch

from tts_engine.pipeline.aggregate import CURVE_AGGREGATIONS, aggregation_keys

ELEMENTS_PER_CALL = 1 << 22
"""Problems go to the kernel in chunks of at most this many subset entries (P x R x k), bounding memory."""


def aggregation_names(score_kinds: list[str]) -> list[str]:
    """`majority`, then `weighted:<kind>` and `best_of_n:<kind>` for every score kind (results-format keys)."""
    return aggregation_keys(score_kinds, CURVE_AGGREGATIONS)


def vote_accuracy(
    class_ids: np.ndarray,
    class_correct: np.ndarray,
    scores: dict[str, np.ndarray],
    subsets: np.ndarray,
    *,
    impl: str = "auto",
) -> dict[str, np.ndarray]:
    """Strategy -> (P,) mean correctness of its winner over the R subsets of each problem.

    class_ids (P, N) int64 (-1: no answer); class_correct (P, C) bool; scores: kind -> (P, N) float, NaN
    counted as 0; subsets (P, R, k) int64 sample indices. A subset whose winner is -1 counts as wrong.
    """
    from tts_engine.kernels import subset_vote

    kinds = list(scores)
    device = "cuda" if impl in ("auto", "triton") and torch.cuda.is_available() else "cpu"
    ids = torch.from_numpy(np.ascontiguousarray(class_ids, dtype=np.int64)).to(device)
    correct = torch.from_numpy(np.ascontiguousarray(class_correct, dtype=bool)).to(device)
    chosen = torch.from_numpy(np.ascontiguousarray(subsets, dtype=np.int64)).to(device)
    out: dict[str, np.ndarray] = {}
    for position, kind in enumerate(kinds or [None]):
        values = np.zeros(class_ids.shape) if kind is None else np.nan_to_num(scores[kind], nan=0.0)
        values = torch.from_numpy(values.astype(np.float32)).to(device)
        votes = subset_vote(ids, values, chosen, correct, impl=impl)
        accuracy = {name: np.asarray(votes.accuracy[name].cpu(), dtype=np.float64) for name in CURVE_AGGREGATIONS}
        if position == 0:
            out["majority"] = accuracy["majority"]
        if kind is not None:
            out[f"weighted:{kind}"] = accuracy["weighted"]
            out[f"best_of_n:{kind}"] = accuracy["best_of_n"]
    return out


def vote_accuracy_chunked(
    class_ids: np.ndarray,
    class_correct: np.ndarray,
    scores: dict[str, np.ndarray],
    subsets_of,
    num_subsets: int,
    k: int,
    *,
    impl: str = "auto",
) -> dict[str, np.ndarray]:
    """vote_accuracy over all P problems in chunks; `subsets_of(rows)` gives (p, R, k) indices for row indices.

    Problems are taken in order of their number of answer classes, and each chunk's class table is cut to its
    own widest problem: voting costs grow with the class count, so few-class problems stay cheap.
    """
    p = class_ids.shape[0]
    widths = class_ids.max(axis=1, initial=-1) + 1  # (P,) classes per problem
    order = np.argsort(widths, kind="stable")
    step = max(1, ELEMENTS_PER_CALL // max(1, num_subsets * k))
    out: dict[str, np.ndarray] = {}
    for start in range(0, p, step):
        rows = order[start : start + step]
        width = max(1, int(widths[rows].max()))
        part = vote_accuracy(
            class_ids[rows],
            class_correct[rows, :width],
            {kind: values[rows] for kind, values in scores.items()},
            subsets_of(rows),
            impl=impl,
        )
        for name, values in part.items():
            out.setdefault(name, np.zeros(p))[rows] = values
    return out
