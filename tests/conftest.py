"""Shared fixtures: tiny models built from configs in code (no network, no downloads), and the committed
checkpoints, whose absence fails a test instead of skipping it."""

from __future__ import annotations

import os

# Triton kernels run in its CPU interpreter in tests; the flag must be set before triton is first imported.
os.environ.setdefault("TRITON_INTERPRET", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tts_engine.inputs.models import (  # noqa: E402
    DEFAULT_MODEL,
    TANGO_GENERATOR,
    TANGO_VERIFIER,
    MissingAssetError,
    require_checkpoint,
)
from tts_engine.inputs.tiny import TinyModelConfig, save_tiny_checkpoint  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random 1M-parameter Qwen2 with the character tokenizer, saved in Hugging Face format."""
    path = tmp_path_factory.mktemp("tiny_model")
    return str(
        save_tiny_checkpoint(path, TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128))
    )


@pytest.fixture(scope="session")
def thinking_model_dir(tmp_path_factory):
    """A random tiny Qwen2 in a thinking model's shape: `<think>` and `</think>` single non-special tokens and a chat
    template whose generation prompt opens the trace (as DeepSeek-R1's does)."""
    path = tmp_path_factory.mktemp("thinking_model")
    config = TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)
    return str(save_tiny_checkpoint(path, config, thinking=True))


@pytest.fixture(scope="session")
def hf_backend(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    return HFBackend(tiny_model_dir)


RESOLVING_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "joint_resolve"
"""The previous default (it re-solves each problem and reads verifier_path), kept in the repository's
checkpoints/ folder: the real model behind the re-solving verifier's tests."""


def committed_checkpoint(path: Path, what: str) -> str:
    """`path` as a string if every serving file of the committed checkpoint is there; else the test FAILS
    (never skips): a missing committed asset is a broken checkout, not an optional feature."""
    try:
        return str(require_checkpoint(path, what))
    except MissingAssetError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def resolving_checkpoint():
    return committed_checkpoint(RESOLVING_CHECKPOINT, "the re-solving checkpoint (checkpoints/joint_resolve)")


@pytest.fixture(scope="session")
def default_model_dir():
    """The embedded default model (tts_engine/assets/default_model), checked: the test fails if it is missing."""
    return committed_checkpoint(DEFAULT_MODEL, "the embedded default model")


@pytest.fixture(scope="session")
def tango_pair():
    """(generator, verifier) paths of the shipped Tango pair (tts_engine/assets/tango), checked."""
    return (
        committed_checkpoint(TANGO_GENERATOR, "the shipped Tango generator"),
        committed_checkpoint(TANGO_VERIFIER, "the shipped Tango verifier"),
    )


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
