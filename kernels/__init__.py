"""Triton scoring kernels, each beside a plain-torch reference, and the dispatch between them.

- token_logprobs: log P(target) at many positions (T,) or (T, K) under the full-vocabulary softmax of
  hidden @ weight.T, without the (T, V) logits: the one op every verifier that scores tokens reads through.
- fused_verifier_score: log P(Yes), log P(No) at one position per prompt (token_logprobs with K = 2).
- yes_no_score: P(Yes) / (P(Yes) + P(No)) from those two log-probabilities.
- subset_vote: majority / weighted / best-of-N winners over R random subsets per problem (accuracy curves).

Importing this package never imports triton. impl="auto" uses Triton for CUDA tensors when triton is
installed and the torch reference otherwise; impl="triton" off a GPU runs Triton's interpreter, which
needs TRITON_INTERPRET=1 in the environment before triton is first imported (see dispatch.py).
"""

from .subset_voting import SubsetVotes, subset_vote
from .token_scores import token_logprobs
from .verifier_score import fused_verifier_score, yes_no_score

__all__ = ["SubsetVotes", "fused_verifier_score", "subset_vote", "token_logprobs", "yes_no_score"]
