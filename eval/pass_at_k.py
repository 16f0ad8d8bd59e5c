"""pass@k: the unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on Code".

With n samples of which c are correct, pass@k = 1 - C(n - c, k) / C(n, k), the chance that a random k-subset
holds a correct sample. Computed in the paper's numerically stable product form,
1 - prod_{i = n - c + 1}^{n} (1 - k / i), which never forms the large binomials.
"""

from __future__ import annotations

import numpy as np


def pass_at_k(num_correct: np.ndarray, n: int, k: int) -> np.ndarray:
    """(P,) pass@k per problem from (P,) correct-sample counts out of n samples each."""
    num_correct = np.asarray(num_correct, dtype=np.int64)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n={n}], got {k}")
    if num_correct.size and (num_correct.min() < 0 or num_correct.max() > n):
        raise ValueError(
            f"num_correct must lie in [0, n={n}], got values in [{num_correct.min()}, {num_correct.max()}]"
        )
    i = np.arange(1, n + 1, dtype=np.float64)  # (N,)
    in_product = i[None, :] > (n - num_correct)[:, None]  # (P, N): i runs over n-c+1 .. n
    factors = np.where(in_product, 1.0 - k / i[None, :], 1.0)
    estimate = 1.0 - np.prod(factors, axis=1)
    return np.where(n - num_correct < k, 1.0, estimate)  # every k-subset holds a correct sample
