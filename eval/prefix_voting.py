"""Voting accuracy at every k in one pass over nested random subsets: the CPU path of the curves.

The random subsets of `subsets.py` are prefixes of R random orders of each problem's samples. Walking the
orders one position at a time, each (problem, order) row keeps per-class tables (count, first sample index,
score sum per score kind) and its running winner of each aggregation: adding a sample of class c only improves
c's keys, so the new winner is the old one or c. At each k the winners are graded. This costs
O(P x R x k_max) instead of the O(P x R x (sum of k) x C) of voting every subset from scratch, which is what
makes MATH500-sized curves take seconds on a CPU.

Tie rules and exact sums match tts_engine.kernels.subset_vote: majority: most samples, then smallest first
sample index; weighted: largest sum of scores quantised to 2**-QUANT_BITS (exact int64 sums), then more
samples, then smallest first index; best_of_n: highest float32 score, then smallest sample index; samples of
class -1 vote for nothing and a row without an answer has winner -1 (wrong). Each rule is one int64 key
compared with `>`, built from bit fields.
"""

from __future__ import annotations

import numpy as np

QUANT_BITS = 32
"""Score quantum 2**-32, as the subset-vote kernel uses (lowered only when N > 512 to keep keys in 63 bits)."""
TABLE_ENTRIES = 1 << 17
"""Rows x (classes + 1) per chunk of problems (each int64 table <= 1 MB, cache-sized). CPU seconds for
200 problems x 256 samples, R = 1000, 3 score kinds (this 2-core machine, shared): 2**16: 1.73,
2**17: 1.52, 2**18: 1.67, 2**20: 1.73, 2**22: 2.06 (mean of two runs)."""


def prefix_vote_accuracy(
    class_ids: np.ndarray,
    class_correct: np.ndarray,
    scores: dict[str, np.ndarray],
    relabel: np.ndarray,
    shared: np.ndarray,
    checkpoints: list[int],
) -> dict[int, dict[str, np.ndarray]]:
    """k -> aggregation -> (P,) mean correctness over R subsets: those of problem p are relabel[p, shared[r, :k]].

    class_ids (P, N) int (-1: no answer); class_correct (P, C) bool; scores kind -> (P, N) in [0, 1] (NaN: 0);
    relabel (P, N) a permutation of 0..N-1 per problem; shared (R, K) rows of distinct sample indices,
    K >= max(checkpoints) (see SubsetDrawer.plan).
    """
    p, r = class_ids.shape[0], shared.shape[0]
    depth = max(checkpoints)
    widths = class_ids.max(axis=1, initial=-1) + 1  # (P,) classes per problem
    order = np.argsort(widths, kind="stable")
    out: dict[int, dict[str, np.ndarray]] = {k: {} for k in checkpoints}
    start = 0
    while start < p:
        cost = (widths[order[start:]] + 1) * r * np.arange(1, p - start + 1)  # table entries, rising
        rows = order[start : start + max(1, int((cost <= TABLE_ENTRIES).sum()))]
        part = _walk(
            class_ids[rows],
            class_correct[rows],
            {kd: v[rows] for kd, v in scores.items()},
            np.asarray(relabel)[rows],
            shared[:, :depth],
            checkpoints,
        )
        for k, by_name in part.items():
            for name, values in by_name.items():
                out[k].setdefault(name, np.zeros(p))[rows] = values
        start += len(rows)
    return out


def _walk(class_ids, class_correct, scores, relabel, shared, checkpoints):
    """One chunk of problems: running winner keys along the orders, graded at each checkpoint.

    Keys are int64 bit fields compared with `>`; their low bits hold n - 1 - (a sample index of the winning
    class), so a key alone names its winner. Key 0: no answer yet (every real key is > 0).
    majority: count | n-1-first;  weighted: score sum | count | n-1-first;  best_of_n: 1 + (score | n-1-index).
    """
    p, n = class_ids.shape
    r, depth = shared.shape
    m, kinds = p * r, list(scores)
    bits = n.bit_length()  # sample indices < 2**bits, counts <= n < 2**bits
    width = int(class_ids.max(initial=-1)) + 1
    cls_of, low_of, quant_of, best_of = _sample_attributes(class_ids, scores, width, bits)  # each (p*N,)
    offsets = (np.arange(p) * n)[:, None]  # (p, 1)
    steps = _Steps((relabel + offsets).reshape(-1), offsets, shared)
    tiebreaks = np.zeros((width + 1) * m, dtype=np.int64)  # per (class, row): count | n-1-first, 0 if empty
    totals = [np.zeros((width + 1) * m, dtype=np.int64) for _ in kinds]  # per (class, row): score sums
    keys = {name: np.zeros(m, dtype=np.int64) for name in _aggregation_order(kinds)}  # (M,) running winners
    column, low = np.arange(m), (1 << bits) - 1
    out: dict[int, dict[str, np.ndarray]] = {}
    for t in range(depth):
        flat = steps.at(t)  # (M,) the t-th sample of every subset
        cls = cls_of.take(flat)
        voting = cls < width
        at = cls * m + column
        old = tiebreaks.take(at)
        tiebreak = (((old >> bits) + 1) << bits) | np.maximum(old & low, low_of.take(flat))
        tiebreaks[at] = tiebreak
        tiebreak *= voting
        np.maximum(keys["majority"], tiebreak, out=keys["majority"])
        for j, kind in enumerate(kinds):
            total = totals[j].take(at) + quant_of[j].take(flat)
            totals[j][at] = total
            candidate = (total << (2 * bits)) | tiebreak
            np.maximum(keys[f"weighted:{kind}"], candidate * voting, out=keys[f"weighted:{kind}"])
            np.maximum(keys[f"best_of_n:{kind}"], best_of[j].take(flat), out=keys[f"best_of_n:{kind}"])
        if t + 1 in checkpoints:
            out[t + 1] = {name: _grade(key, name, class_ids, class_correct, r, bits) for name, key in keys.items()}
    return out


def _sample_attributes(class_ids, scores, width, bits):
    """Per sample, flattened to (p*N,) int64: class (-1 -> `width`), n-1-index, and per score kind the
    quantised score and the best-of-N key (0 for samples without an answer)."""
    p, n = class_ids.shape
    quant_bits = min(QUANT_BITS, 62 - 3 * bits)
    low = np.broadcast_to(n - 1 - np.arange(n), (p, n))
    quant = [_quantise(v, quant_bits).reshape(-1) for v in scores.values()]
    best = [np.where(class_ids >= 0, ((_float32_bits(v) << bits) | low) + 1, 0).reshape(-1) for v in scores.values()]
    return np.where(class_ids >= 0, class_ids, width).reshape(-1), low.reshape(-1), quant, best


class _Steps:
    """Flat sample positions (into (p*N,) arrays) of the t-th members of all M = p x R subsets."""

    def __init__(self, relabel_flat: np.ndarray, offsets: np.ndarray, shared: np.ndarray):
        self.relabel_flat, self.offsets = relabel_flat, offsets
        self.by_step = np.ascontiguousarray(shared.T)  # (K, R)

    def at(self, t: int) -> np.ndarray:
        return self.relabel_flat.take((self.offsets + self.by_step[t]).reshape(-1))  # (M,)


def _grade(key, name, class_ids, class_correct, r, bits) -> np.ndarray:
    """(p,) mean over each problem's R rows of: the key's winning class is correct (key 0, no answer: wrong)."""
    p, n = class_ids.shape
    empty = key == 0
    value = key - 1 if name.startswith("best_of_n:") else key  # best-of-N keys carry a +1
    sample = n - 1 - (np.maximum(value, 0) & ((1 << bits) - 1))  # (M,)
    rows = np.repeat(np.arange(p), r)
    winner = class_ids[rows, np.clip(sample, 0, n - 1)]
    right = class_correct[rows, np.maximum(winner, 0)] & (winner >= 0) & ~empty
    return right.reshape(p, r).mean(axis=1)


def _aggregation_order(scores) -> list[str]:
    return ["majority"] + [f"{s}:{kind}" for kind in scores for s in ("weighted", "best_of_n")]


def _quantise(values: np.ndarray, quant_bits: int) -> np.ndarray:
    clean = np.nan_to_num(values, nan=0.0).astype(np.float32).astype(np.float64)
    return np.round(clean * float(1 << quant_bits)).astype(np.int64)


def _float32_bits(values: np.ndarray) -> np.ndarray:
    """Bit patterns of non-negative float32 scores as int64: ordered as the scores are."""
    clean = np.nan_to_num(values, nan=0.0).astype(np.float32) + np.float32(0.0)  # -0.0 -> 0.0
    return clean.view(np.int32).astype(np.int64)
