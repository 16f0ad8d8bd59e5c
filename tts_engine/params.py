"""Sampling parameters: one dataclass, validated field by field (vLLM's SamplingParams style)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .settings import check_int, setting


@dataclass
class SamplingParams:
    """How N samples are drawn for each prompt."""

    n: int = 1
    """Number of samples per prompt."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding."""

    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability mass reaches top_p."""

    max_new_tokens: int = 256
    """Largest number of tokens generated per sample (the sample then finishes with reason "length")."""

    seed: int | None = 0
    """Seed for the sampler; with a fixed seed, a run is reproducible."""

    stop: list[str] = field(default_factory=list)
    """Strings that end a sample when generated (the stop string is kept out of the text)."""

    top_logprobs: int = 20
    """k of the token confidence: the backend returns the k largest log-probs of every generated token, from
    which each sample's confidence score kinds (conf_mean, conf_lowest_group, conf_bottom10, conf_tail) are
    computed; 0 turns them off. Servers cap it (vLLM: --max-logprobs, 20 by default; OpenAI: 5)."""

    confidence_window: int = 8
    """Tokens per group of the group confidences (sliding window) and of the online stop (deepconf)."""

    confidence_tail: int = 16
    """Last tokens of a sample that its tail confidence (conf_tail) averages."""

    stop_below: float | list[float] | None = setting(None, cli=False)
    """Stop a sample (finish reason "low_confidence") as soon as the mean token confidence of its last
    confidence_window tokens falls below this (raw C = -mean top-k log-prob; one value, or one per prompt of
    the generate call; None: never). Needs top_logprobs > 0; the hf backend checks it inside its decoding loop;
    the deepconf strategy sets it (vllm and openai: by chunked continuation instead)."""

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"n must be an integer >= 1, got {self.n!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        check_int("max_new_tokens", self.max_new_tokens)
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if any(not s for s in self.stop):
            raise ValueError(f"stop strings must be non-empty, got {self.stop!r}")
        for name in ("top_logprobs", "confidence_window", "confidence_tail"):
            value, least = getattr(self, name), 0 if name == "top_logprobs" else 1
            check_int(name, value, least)
        self._check_stop_below()

    def _check_stop_below(self) -> None:
        """stop_below needs the confidences it reads; every value a number."""
        if self.stop_below is None:
            return
        values = self.stop_below if isinstance(self.stop_below, (list, tuple)) else [self.stop_below]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v != v for v in values):
            raise ValueError(f"stop_below must be a number or a list of numbers, got {self.stop_below!r}")
        if self.top_logprobs < 1:
            raise ValueError(f"stop_below needs top_logprobs >= 1 (the confidences it reads), got {self.top_logprobs}")

    def stop_threshold(self, prompt_index: int) -> float | None:
        """The stop_below of prompt `prompt_index` of a generate call (None: never stopped early)."""
        if isinstance(self.stop_below, (list, tuple)):
            return float(self.stop_below[prompt_index])
        return None if self.stop_below is None else float(self.stop_below)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


SOLVE_DEFAULTS = {"n": 16}
"""Where `Engine.solve`, `tts solve` and `tts serve` differ from `SamplingParams`' own defaults (one sample per
prompt is what a backend call is asked; a solve samples 16 per problem)."""
