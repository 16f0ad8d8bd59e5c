"""Generation backends behind one protocol, chosen by name (`--backend`), never by accident."""

from __future__ import annotations

from .base import Backend, PromptTooLongError, Sample

BACKENDS = ("hf", "vllm", "openai")


def make_backend(name: str, model: str, **options) -> Backend:
    """A backend by name: `hf` (transformers), `vllm` (offline LLM), `openai` (a compatible server)."""
    if name == "hf":
        from .hf import HFBackend

        return HFBackend(model, **options)
    if name == "vllm":
        from .vllm import VLLMBackend

        return VLLMBackend(model, **options)
    if name == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend(model=model, **options)
    raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")


__all__ = ["Backend", "Sample", "PromptTooLongError", "make_backend", "BACKENDS"]
