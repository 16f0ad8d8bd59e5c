"""The backend protocol: every generation backend returns the same records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from ..params import SamplingParams


@dataclass
class Sample:
    """One generated continuation of one prompt."""

    text: str
    """Decoded continuation (without the prompt, without a matched stop string)."""
    token_ids: list[int]
    """Generated token ids (what `text` decodes from, stop string included if one matched)."""
    finish_reason: str
    """"stop" (end-of-sequence token or stop string) or "length" (hit max_new_tokens)."""
    logprobs: list[float] = field(default_factory=list)
    """Log-probability of each generated token under the model (temperature 1, before top_p)."""
    num_prompt_tokens: int = 0
    """Tokens in the prompt this sample continued."""

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


@runtime_checkable
class Backend(Protocol):
    """What the engine needs from a model server.

    `generate` returns, for each prompt in input order, `params.n` samples.
    `next_token_logprobs` returns, for each prompt, the log-probability (full-vocabulary softmax) of each
    of `token_ids` as the next token: the unified verifier's P("Yes") and P("No") come from it.
    """

    name: str

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[list[Sample]]: ...

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> list[list[float]]: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, token_ids: Sequence[int]) -> str: ...

    @property
    def num_parameters(self) -> int: ...

    @property
    def max_model_len(self) -> int: ...


class PromptTooLongError(ValueError):
    """A prompt does not fit in the model's context."""
