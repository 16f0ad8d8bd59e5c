"""Which checkpoint to serve: a path the user gave, else the embedded default shipped in the package."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

ASSETS = Path(__file__).parent / "assets"
DEFAULT_MODEL = ASSETS / "default_model"
DEFAULT_PROBLEMS = ASSETS / "problems"
PLACEHOLDER_LABEL = "untrained placeholder (random tiny model built from a config)"


def default_problems_path() -> Path:
    """The bundled evaluation set of the synthetic task."""
    files = sorted(DEFAULT_PROBLEMS.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no bundled problem set in {DEFAULT_PROBLEMS}; pass a problems file")
    return files[0]


def resolve_model(model: str | Path | None) -> tuple[str, str]:
    """(path to load, label for results): the given model, the shipped checkpoint, or a placeholder."""
    if model is not None:
        return str(model), str(model)
    if (DEFAULT_MODEL / "config.json").is_file():
        return str(DEFAULT_MODEL), "embedded default (tts_engine/assets/default_model)"
    from .tiny import save_tiny_checkpoint

    path = Path(tempfile.gettempdir()) / "tts_engine_placeholder_model"
    if not (path / "config.json").is_file():
        save_tiny_checkpoint(path)
    log.warning("no trained default checkpoint is installed: serving an %s", PLACEHOLDER_LABEL)
    return str(path), PLACEHOLDER_LABEL
