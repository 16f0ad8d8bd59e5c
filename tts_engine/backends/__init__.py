"""Generation backends behind one protocol (`base.Backend`), chosen by name (`--backend`), never by accident.

The built-ins register here, each imported only when it is made (vLLM and the OpenAI client are heavy and
optional); another installed package adds one through the entry-point group `tts_engine.backends`
(`tts_engine.plugins`): its module calls `register_backend(name, factory)`.
"""

from __future__ import annotations

from typing import Callable

from ..plugins import load_plugins
from .base import Backend, BackendBase, PromptTooLongError, Sample

ENTRY_POINT_GROUP = "tts_engine.backends"
BUILTIN_BACKENDS = ("hf", "vllm", "openai")
"""hf (transformers), vllm (offline LLM on GPUs), openai (a compatible server)."""

_FACTORIES: dict[str, Callable[..., Backend]] = {}


def register_backend(name: str, factory: Callable[..., Backend]) -> None:
    """`factory(model, **options) -> Backend` answers `--backend name`."""
    if name in _FACTORIES and _FACTORIES[name] is not factory:
        raise ValueError(f"backend {name!r} is already registered")
    _FACTORIES[name] = factory


def _hf(model: str, **options) -> Backend:
    from .hf import HFBackend

    return HFBackend(model, **options)


def _vllm(model: str, **options) -> Backend:
    from .vllm import VLLMBackend

    return VLLMBackend(model, **options)


def _openai(model: str, **options) -> Backend:
    from .openai import OpenAIBackend

    return OpenAIBackend(model=model, **options)


for _name, _factory in zip(BUILTIN_BACKENDS, (_hf, _vllm, _openai)):
    register_backend(_name, _factory)


def backend_names() -> list[str]:
    """Every backend that can be named: the built-ins, then those of installed packages."""
    load_plugins(ENTRY_POINT_GROUP)
    return list(_FACTORIES)


def check_backend(name: str) -> str:
    if name not in backend_names():
        raise ValueError(f"backend must be one of {backend_names()}, got {name!r}")
    return name


def make_backend(name: str, model: str, **options) -> Backend:
    """The backend `name` serving `model`; an option the backend does not take is a ValueError naming it."""
    factory = _FACTORIES[check_backend(name)]
    try:
        return factory(model, **options)
    except TypeError as err:  # an unknown option reaches the backend's constructor as a keyword
        if "unexpected keyword argument" not in str(err):
            raise
        raise ValueError(f"backend option: {err}") from None


__all__ = [
    "Backend",
    "BackendBase",
    "Sample",
    "PromptTooLongError",
    "make_backend",
    "register_backend",
    "backend_names",
    "BUILTIN_BACKENDS",
]
