"""Subsets of k of the N samples of each problem: every subset when there are few, else R random ones.

Random subsets: R index sets of size k are drawn once (the first k entries of R seeded random permutations
of 0..N-1), then relabelled for each problem by a random permutation of that problem's samples, seeded by
the problem id. Each subset is then a uniformly random k-subset of that problem's samples, problems get
independent subsets, and one problem's subsets do not change when other problems are added or removed.
The same permutations serve every k (prefixes), so curves over k share their randomness.
"""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np


def subset_sizes(n: int) -> list[int]:
    """k = 1, 2, 4, ... up to n, and n itself if it is not a power of 2."""
    if n < 1:
        raise ValueError(f"the number of samples per problem must be >= 1, got {n}")
    sizes = [1 << i for i in range(n.bit_length()) if 1 << i <= n]
    return sizes if sizes[-1] == n else sizes + [n]


def is_enumerated(n: int, k: int, num_subsets: int) -> bool:
    """True when all C(n, k) subsets are used (there are at most `num_subsets` of them)."""
    return math.comb(n, k) <= num_subsets


def subsets_per_k(n: int, k: int, num_subsets: int) -> int:
    """How many subsets of size k are used: C(n, k) when they are enumerated, else num_subsets."""
    return math.comb(n, k) if is_enumerated(n, k, num_subsets) else num_subsets


def all_subsets(n: int, k: int) -> np.ndarray:
    """(C(n, k), k) int64: every k-subset of 0..n-1, in lexicographic order."""
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)), dtype=np.int64)
    return flat.reshape(-1, k)


class SubsetDrawer:
    """Seeded subsets for P problems of N samples each."""

    def __init__(self, ids: list[str], n: int, num_subsets: int, seed: int = 0):
        if num_subsets < 1:
            raise ValueError(f"num_subsets must be >= 1, got {num_subsets}")
        self.n, self.num_subsets, self.seed = n, num_subsets, seed
        self._relabel = np.stack([_problem_permutation(seed, pid, n) for pid in ids])  # (P, N)
        self._orders: np.ndarray | None = None  # (R, N) shared random orders, drawn on first use

    def plan(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(relabel (P, N), shared (R_k, k)): subset r of problem p is relabel[p, shared[r]].

        Enumerated k: every k-subset, relabel the identity. Otherwise shared holds the first k entries of the
        R shared random orders, and relabel each problem's own random permutation.
        """
        if not 1 <= k <= self.n:
            raise ValueError(f"k must be in [1, {self.n}], got {k}")
        if is_enumerated(self.n, k, self.num_subsets):
            identity = np.broadcast_to(np.arange(self.n), self._relabel.shape)
            return identity, all_subsets(self.n, k)
        return self._relabel, self._shared_orders()[:, :k]

    def subsets(self, k: int, rows: np.ndarray) -> np.ndarray:
        """(p, R_k, k) int64 sample indices for the problems at indices `rows` (R_k = C(n, k) when enumerated)."""
        relabel, shared = self.plan(k)
        return np.asarray(relabel)[rows][:, shared]  # (p, R_k, k)

    def _shared_orders(self) -> np.ndarray:
        if self._orders is None:
            rng = np.random.default_rng([self.seed, 0x5EB5E7])
            self._orders = np.argsort(rng.random((self.num_subsets, self.n)), axis=1)  # (R, N)
        return self._orders


def _problem_permutation(seed: int, problem_id: str, n: int) -> np.ndarray:
    rng = np.random.default_rng([seed, zlib.crc32(problem_id.encode("utf-8"))])
    return rng.permutation(n)
