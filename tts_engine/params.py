"""Sampling parameters: one dataclass, validated field by field (vLLM's SamplingParams style)."""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"n must be an integer >= 1, got {self.n!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {self.max_new_tokens!r}")
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if any(not s for s in self.stop):
            raise ValueError(f"stop strings must be non-empty, got {self.stop!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0
