"""Shared fixtures: tiny models built from configs in code (no network, no downloads)."""

from __future__ import annotations

import pytest

from tts_engine.tiny import TinyModelConfig, save_tiny_checkpoint


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random 1M-parameter Qwen2 with the character tokenizer, saved in Hugging Face format."""
    path = tmp_path_factory.mktemp("tiny_model")
    return str(save_tiny_checkpoint(path, TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2,
                                                          intermediate_size=128)))


@pytest.fixture(scope="session")
def hf_backend(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    return HFBackend(tiny_model_dir)
