"""Triton scoring kernels, each beside a plain-torch reference, and the dispatch between them.

- fused_verifier_score: log P(Yes), log P(No) under the full-vocabulary softmax, without the (B, V) logits.
- yes_no_score: P(Yes) / (P(Yes) + P(No)) from those two log-probabilities.
- subset_vote: majority / weighted / best-of-N winners over R random subsets per problem (accuracy curves).

Importing this package never imports triton. impl="auto" uses Triton for CUDA tensors when triton is
installed and the torch reference otherwise; impl="triton" off a GPU runs Triton's interpreter, which
needs TRITON_INTERPRET=1 in the environment before triton is first imported (see dispatch.py).
"""

from .subset_voting import SubsetVotes, subset_vote
from .verifier_score import fused_verifier_score, yes_no_score

__all__ = ["SubsetVotes", "fused_verifier_score", "subset_vote", "yes_no_score"]
