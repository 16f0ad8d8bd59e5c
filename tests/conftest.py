"""Shared fixtures: tiny models built from configs in code (no network, no downloads)."""

from __future__ import annotations

import os

# Triton kernels run in its CPU interpreter in tests; the flag must be set before triton is first imported.
os.environ.setdefault("TRITON_INTERPRET", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tts_engine.tiny import TinyModelConfig, save_tiny_checkpoint  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random 1M-parameter Qwen2 with the character tokenizer, saved in Hugging Face format."""
    path = tmp_path_factory.mktemp("tiny_model")
    return str(
        save_tiny_checkpoint(path, TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128))
    )


@pytest.fixture(scope="session")
def hf_backend(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    return HFBackend(tiny_model_dir)


RESOLVING_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "joint_resolve"
"""The previous default (it re-solves each problem and reads verifier_path), kept in the repository's
checkpoints/ folder: the real model behind the re-solving verifier's tests."""


@pytest.fixture(scope="session")
def resolving_checkpoint():
    if not (RESOLVING_CHECKPOINT / "model.safetensors").is_file():
        pytest.skip(f"{RESOLVING_CHECKPOINT} is not in this checkout")
    return str(RESOLVING_CHECKPOINT)


SHARED_DATA = Path(os.environ.get("TTS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
"""The real problem sets (MATH500, GSM8K, ProcessBench, ...): ../shared/data beside the checkout, or
$TTS_SHARED_DATA."""


@pytest.fixture(scope="session")
def shared_data():
    """A function name -> path of a file in the shared data folder. A missing file skips the test on a
    developer's machine and FAILS it in CI (CI=true), where the data must be present."""

    def path_of(name: str) -> Path:
        path = SHARED_DATA / name
        if not path.is_file():
            message = f"shared data set {path} is missing (set TTS_SHARED_DATA to the folder holding it)"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(message)
            pytest.skip(message)
        return path

    return path_of
