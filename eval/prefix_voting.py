"""Voting accuracy at every k in one pass over nested random subsets: the CPU path of the curves.

The random subsets of `subsets.py` are prefixes of R random orders of each problem's samples. Walking the
orders one position at a time, each (problem, order) row keeps per-class tables (count, first sample index,
score sum per score kind) and its running winner of each strategy: adding a sample of class c only improves
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
TABLE_ENTRIES = 1 << 20
"""Rows x (classes + 1) per chunk of problems: each int64 table <= 8 MB. CPU time at 500 problems x 256
samples was flat from 2**17 to 2**20 (about 1.1 s per 100 problems) and rose by 70% at 2**24."""


def prefix_vote_accuracy(class_ids: np.ndarray, class_correct: np.ndarray, scores: dict[str, np.ndarray],
                         relabel: np.ndarray, shared: np.ndarray,
                         checkpoints: list[int]) -> dict[int, dict[str, np.ndarray]]:
    """k -> strategy -> (P,) mean correctness over R subsets: those of problem p are relabel[p, shared[r, :k]].

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
        rows = order[start:start + max(1, int((cost <= TABLE_ENTRIES).sum()))]
        part = _walk(class_ids[rows], class_correct[rows], {kd: v[rows] for kd, v in scores.items()},
                     np.asarray(relabel)[rows], shared[:, :depth], checkpoints)
        for k, by_name in part.items():
            for name, values in by_name.items():
                out[k].setdefault(name, np.zeros(p))[rows] = values
        start += len(rows)
    return out


def _walk(class_ids, class_correct, scores, relabel, shared, checkpoints):
    """One chunk of problems: running winner keys along the orders, graded at each checkpoint.

    A key's low bits hold n - 1 - (a sample index of the winning class), so the key alone names the winner;
    key 0 means no answer yet (every real key is > 0).
    """
    p, n = class_ids.shape
    r, depth = shared.shape
    m = p * r
    bits = n.bit_length()  # sample indices < 2**bits, counts <= n < 2**bits
    quant_bits = min(QUANT_BITS, 62 - 3 * bits)
    width = int(class_ids.max(initial=-1)) + 1
    offsets = (np.arange(p) * n)[:, None]  # (p, 1)
    relabel_flat = (relabel + offsets).reshape(-1)  # (p*N,) flat sample position of each relabelled index
    cls_flat = np.where(class_ids >= 0, class_ids, width).reshape(-1)  # class -1 -> spare column `width`
    count = np.zeros((width + 1) * m, dtype=np.int64)  # (C + 1, M) tables, flattened
    first = np.full((width + 1) * m, n, dtype=np.int64)
    totals = {kind: np.zeros((width + 1) * m, dtype=np.int64) for kind in scores}
    quant = {kind: _quantise(v, quant_bits).reshape(-1) for kind, v in scores.items()}  # (p*N,)
    names = ["majority"] + [f"weighted:{kind}" for kind in scores]
    key = {name: np.zeros(m, dtype=np.int64) for name in names}  # (M,)
    steps = _Steps(relabel_flat, offsets, shared)
    column = np.arange(m)
    out: dict[int, dict[str, np.ndarray]] = {}
    for t in range(depth):
        flat = steps.at(t)  # (M,) flat sample positions of the t-th member of every subset
        cls = cls_flat.take(flat)  # (M,)
        voting = cls < width
        at = cls * m + column
        tally = count.take(at) + 1
        count[at] = tally
        earliest = np.minimum(first.take(at), flat % n)
        first[at] = earliest
        tiebreak = ((tally << bits) | (n - 1 - earliest)) * voting  # more samples, then smaller first index
        np.maximum(key["majority"], tiebreak, out=key["majority"])
        for kind in scores:
            total = totals[kind].take(at) + quant[kind].take(flat)
            totals[kind][at] = total
            np.maximum(key[f"weighted:{kind}"], ((total << (2 * bits)) | tiebreak) * voting,
                       out=key[f"weighted:{kind}"])
        if t + 1 in checkpoints:
            out[t + 1] = {name: _grade(k, class_ids, class_correct, r, bits) for name, k in key.items()}
    for kind, values in scores.items():
        for k, graded in _best_of_n(values, class_ids, class_correct, steps, checkpoints, r, bits).items():
            out[k][f"best_of_n:{kind}"] = graded
    return {k: {name: by_name[name] for name in _strategy_order(scores)} for k, by_name in out.items()}


class _Steps:
    """Flat sample positions (into (p*N,) arrays) of the t-th members of all M = p x R subsets."""

    def __init__(self, relabel_flat: np.ndarray, offsets: np.ndarray, shared: np.ndarray):
        self.relabel_flat, self.offsets = relabel_flat, offsets
        self.by_step = np.ascontiguousarray(shared.T)  # (K, R)

    def at(self, t: int) -> np.ndarray:
        return self.relabel_flat.take((self.offsets + self.by_step[t]).reshape(-1))  # (M,)

    def block(self, start: int, stop: int) -> np.ndarray:
        """(stop - start, M) positions for steps start..stop-1."""
        index = self.offsets[None, :, :] + self.by_step[start:stop, None, :]  # (T, p, R)
        return self.relabel_flat.take(index.reshape(stop - start, -1))


def _best_of_n(scores, class_ids, class_correct, steps, checkpoints, r, bits) -> dict[int, np.ndarray]:
    """Highest float32 score, then smallest sample index: the maximum of one key per sample over each prefix."""
    n = class_ids.shape[1]
    sample_key = (_float32_bits(scores) << bits) | (n - 1 - np.arange(n))  # (p, N)
    sample_key = np.where(class_ids >= 0, sample_key + 1, 0).reshape(-1)  # +1: every answer's key > 0
    running = np.zeros(class_ids.shape[0] * r, dtype=np.int64)  # (M,)
    out, done = {}, 0
    per_block = max(1, TABLE_ENTRIES // len(running))  # steps per (T, M) block
    for k in sorted(checkpoints):
        for start in range(done, k, per_block):
            block = steps.block(start, min(k, start + per_block))  # (T, M)
            np.maximum(running, sample_key.take(block).max(axis=0), out=running)
        done = k
        out[k] = _grade(np.maximum(running - 1, 0), class_ids, class_correct, r, bits, empty=running == 0)
    return out


def _grade(key, class_ids, class_correct, r, bits, empty=None) -> np.ndarray:
    """(p,) mean over each problem's R rows of: the key's winning class is correct (key 0: no answer, wrong)."""
    p, n = class_ids.shape
    empty = key == 0 if empty is None else empty
    sample = n - 1 - (key & ((1 << bits) - 1))  # (M,)
    rows = np.repeat(np.arange(p), r)
    winner = class_ids[rows, np.clip(sample, 0, n - 1)]
    right = class_correct[rows, np.maximum(winner, 0)] & (winner >= 0) & ~empty
    return right.reshape(p, r).mean(axis=1)


def _strategy_order(scores) -> list[str]:
    return ["majority"] + [f"{s}:{kind}" for kind in scores for s in ("weighted", "best_of_n")]


def _quantise(values: np.ndarray, quant_bits: int) -> np.ndarray:
    clean = np.nan_to_num(values, nan=0.0).astype(np.float32).astype(np.float64)
    return np.round(clean * float(1 << quant_bits)).astype(np.int64)


def _float32_bits(values: np.ndarray) -> np.ndarray:
    """Bit patterns of non-negative float32 scores as int64: ordered as the scores are."""
    clean = np.nan_to_num(values, nan=0.0).astype(np.float32) + np.float32(0.0)  # -0.0 -> 0.0
    return clean.view(np.int32).astype(np.int64)
