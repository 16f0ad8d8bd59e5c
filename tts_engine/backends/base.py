"""The backend protocol: every generation backend returns the same records."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from ..params import SamplingParams


@dataclass
class Sample:
    """One generated continuation of one prompt."""

    text: str
    """Decoded continuation (without the prompt, without a matched stop string)."""
    token_ids: list[int]
    """Generated token ids (what `text` decodes from, stop string included if one matched)."""
    finish_reason: str
    """"stop" (end-of-sequence token or stop string), "length" (hit max_new_tokens) or "low_confidence" (stopped
    early: its window confidence fell below `SamplingParams.stop_below`)."""
    logprobs: list[float] = field(default_factory=list)
    """Log-probability of each generated token under the model (temperature 1, before top_p)."""
    num_prompt_tokens: int = 0
    """Tokens in the prompt this sample continued."""
    num_cached_tokens: int = 0
    """Of those, tokens whose keys and values came from a prefix cache (not computed for this sample)."""
    confidences: list[float] = field(default_factory=list)
    """Token confidence of each generated token, -mean of its top-k log-probs (`SamplingParams.top_logprobs`;
    tts_engine/pipeline/confidence.py); empty when not asked for."""

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


def token_confidence(top_logprobs: Sequence[float]) -> float:
    """C = -mean of the top-k log-probs of one position (non-finite entries, e.g. -inf of an empty tail, skipped).

    >>> round(token_confidence([-0.1, -2.0, -3.9]), 3)
    2.0
    """
    values = [float(v) for v in top_logprobs if math.isfinite(v)]
    return -sum(values) / len(values) if values else 0.0


def window_confidence(confidences: Sequence[float], window: int) -> float | None:
    """Mean C of the last `window` tokens, or None while fewer than `window` were generated (the online stop: the hf backend checks it after every token)."""
    if len(confidences) < window:
        return None
    return sum(confidences[-window:]) / window


@runtime_checkable
class Backend(Protocol):
    """What the engine needs from a model server.

    `generate` returns, for each prompt in input order, `params.n` samples.
    `yes_no_logprobs` returns, for each prompt, log P(yes_id) and log P(no_id) as the next token under the
    full-vocabulary softmax: the unified verifier's scores come from it.
    `continuation_logprobs(prompts, continuations)` and `continuation_token_logprobs` read each continuation
    teacher-forced after its prompt (the checking verifiers' reads).
    What a backend can do beyond these, it declares (`BackendBase` holds the defaults; the engine reads these,
    never probes for them).
    """

    name: str
    device: Any
    """Where the model runs (a PRM for a search loads there); None for a remote server."""
    tokenizer: Any
    """The local Hugging Face tokenizer (prompts are measured before any generation); None when there is none."""
    remembers_reads: bool
    """Teacher-forced reads can keep their keys and values for the reads that extend them (a prefix cache)."""
    stops_in_loop: bool
    """`SamplingParams.stop_below` is checked at every token inside the decoding loop (else a strategy checks by
    chunks)."""

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str], **options) -> list[float]: ...

    def continuation_token_logprobs(
        self, prompts: Sequence[str], continuations: Sequence[str]
    ) -> list[list[float]]: ...

    def cached_prefix_tokens(self, prompts: Sequence[str]) -> list[int]:
        """Tokens of each prompt whose keys and values a prefix cache already holds (not computed again)."""
        ...

    def close(self) -> None:
        """Release what the backend holds (vLLM's engine processes and threads)."""
        ...

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[list[Sample]]: ...

    def yes_no_logprobs(self, prompts: Sequence[str], yes_id: int, no_id: int) -> list[tuple[float, float]]: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, token_ids: Sequence[int]) -> str: ...

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str | None:
        """The prompt text for chat `messages` ending with a generation prompt; None without a chat template."""
        ...

    @property
    def num_parameters(self) -> int: ...

    @property
    def max_model_len(self) -> int: ...


class PromptTooLongError(ValueError):
    """A prompt does not fit in the model's context; `index` is its position in the request."""

    def __init__(self, index: int, num_tokens: int, max_model_len: int):
        self.index, self.num_tokens, self.max_model_len = index, num_tokens, max_model_len
        super().__init__(
            f"prompt {index} has {num_tokens} tokens, but the model's context is {max_model_len} tokens "
            "(shorten the problem or the prompt template, or use a model with a longer context)"
        )


class PromptFailedError(RuntimeError):
    """A prompt whose samples (or scores) could not be computed even alone: e.g. one row that does not fit in
    memory, or a server request that failed after its retries. `index` is its position in the request; the
    engine records that problem as failed with `reason` and goes on with the others."""

    def __init__(self, index: int, reason: str):
        self.index, self.reason = index, reason
        super().__init__(f"prompt {index} failed: {reason}")


def is_out_of_memory(err: BaseException) -> bool:
    """Whether `err` is an allocation failure (CUDA out of memory, or the CPU allocator's), which a smaller batch
    may avoid."""
    import torch

    if isinstance(err, torch.OutOfMemoryError):
        return True
    text = str(err)
    return isinstance(err, (RuntimeError, MemoryError)) and (
        isinstance(err, MemoryError) or "out of memory" in text or "can't allocate memory" in text
    )


class BackendBase:
    """The defaults of the capabilities a backend declares (`Backend`): a backend inherits this and overrides what
    it has."""

    name = "backend"
    device: Any = None
    tokenizer: Any = None
    remembers_reads = False
    stops_in_loop = False

    def cached_prefix_tokens(self, prompts: Sequence[str]) -> list[int]:
        return [0] * len(prompts)

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str | None:
        return None

    def close(self) -> None:
        pass


class TokenizerMethods(BackendBase):
    """encode / decode / apply_chat_template of a backend holding a Hugging Face tokenizer as `self.tokenizer`."""

    tokenizer: object

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str | None:
        if not getattr(self.tokenizer, "chat_template", None):
            return None
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
