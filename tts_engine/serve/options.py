"""The settings of `tts serve` that are not the engine's: where it listens, what a request may ask, how requests
are gathered into batches, and the defaults of the per-request test-time scaling parameters.

The engine options (`EngineConfig`), the run's (`RunConfig`: a request's default strategy and abstention), the
sampling defaults (`SamplingParams`) and the strategies' settings (`AdaptiveConfig`, `SearchConfig`) are the same
dataclasses `tts solve` takes, so both commands list the same options (`tts_engine.settings`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..config import RunConfig
from ..pipeline.aggregate import AGGREGATIONS
from ..settings import check_int, setting

API_KEY_ENV = "TTS_API_KEY"
"""Environment variable holding the bearer key when --api-key is not given."""


@dataclass
class ServeConfig(RunConfig):
    """How `tts serve` listens, batches and bounds requests; the run settings (the strategy, the abstention
    threshold) are the defaults of requests that do not set them."""

    host: str = "127.0.0.1"
    """Address to listen on (loopback by default; 0.0.0.0 exposes the server to the network)."""
    port: int = 8000
    """TCP port to listen on."""
    api_key: str | None = None
    """Bearer key clients must send (Authorization: Bearer KEY); default: the TTS_API_KEY environment variable;
    none: no key is asked."""
    served_model_name: str | None = None
    """Model name clients send and /v1/models lists. Default: 'tts-default' for the embedded model, else --model."""
    aggregation: str = setting("weighted", choices=tuple(AGGREGATIONS))
    """Default vote that picks the answer: majority, weighted (sum of scores per answer class) or best_of_n."""
    score_kind: str | None = None
    """Default score kind that weighted / best_of_n use. Default: the verifier's headline kind (likelihood without
    a verifier)."""
    return_candidates: bool = False
    """Return every sample's answer, scores and class by default."""
    max_queue: int = 256
    """Requests waiting for the engine at most; a request past it gets 429 with Retry-After."""
    max_batch_rows: int = 512
    """Samples (problems x n) gathered into one Engine.solve call at most (the engine's chunk: a client that
    disconnects before its batch starts frees its rows)."""
    batch_wait_ms: float = 10.0
    """How long the first request of a batch waits for others with the same sampling settings (not at all when a
    lone client is sending)."""
    batch_wait_share: float = 0.05
    """...or this share of the recent batch time when longer (at most 0.5 s), so that the clients of the batch that
    just finished rejoin the next one."""
    max_request_samples: int = 64
    """Largest n (samples per problem) a request may ask."""
    max_request_tokens: int = 4096
    """Largest max_tokens a request may ask (the model's context also bounds it)."""
    max_request_prompts: int = 64
    """Most prompts in one /v1/completions request."""
    max_body_bytes: int = 1_048_576
    """Largest request body, in bytes."""
    log_level: str = setting("warning", choices=("critical", "error", "warning", "info", "debug"))
    """uvicorn's log level (info logs every request)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in (
            "max_queue",
            "max_batch_rows",
            "max_request_samples",
            "max_request_tokens",
            "max_request_prompts",
            "max_body_bytes",
        ):
            check_int(name, getattr(self, name))
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be in [1, 65535], got {self.port}")
        if self.batch_wait_ms < 0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {self.batch_wait_ms}")
        if not 0 <= self.batch_wait_share <= 1:
            raise ValueError(f"batch_wait_share must be in [0, 1], got {self.batch_wait_share}")
        if self.api_key is None:
            self.api_key = os.environ.get(API_KEY_ENV) or None

    def model_name(self, model: str | None) -> str:
        """The name the server answers to."""
        return self.served_model_name or (model if model else "tts-default")
