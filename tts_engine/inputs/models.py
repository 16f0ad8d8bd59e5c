"""Which checkpoint to serve: a path the user gave, else the embedded default shipped in the package.

The shipped assets (the default model, the Tango pair, the thinker, the bundled problems) are part of the package:
when one is missing the installation is broken, and that is an error that says what is missing and how to restore
it, never a silent stand-in. An untrained model is only ever built on request (`tts_engine.inputs.tiny`).
"""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets"
DEFAULT_MODEL = ASSETS / "default_model"
DEFAULT_PROBLEMS = ASSETS / "problems"
TANGO_GENERATOR = ASSETS / "tango" / "generator"
TANGO_VERIFIER = ASSETS / "tango" / "verifier"
THINKER = ASSETS / "thinker"
DEFAULT_MODEL_LABEL = "embedded default (tts_engine/assets/default_model)"

SERVING_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "tts_engine.json",
)
"""The files every shipped checkpoint has (what `tts train export` copies); without one it would not load, or
would load with default prompt settings instead of its own."""

_LFS_POINTER = b"version https://git-lfs"


class MissingAssetError(FileNotFoundError):
    """A file the package ships (a checkpoint or the bundled problems) is not on disk."""


def _restore_hint(path: Path) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        where = path.resolve().relative_to(root).as_posix()
    except ValueError:
        return f"restore {path} or pass another model"
    checkout = f"in a git checkout restore it with `git checkout -- {where}`"
    if _is_shipped(path):
        return (
            "the package ships it, so the installation is incomplete: reinstall it (`bash scripts/install.sh`, or "
            f"`pip install --force-reinstall tts-engine`), or {checkout}"
        )
    return f"it is committed to the repository: {checkout}"


def _is_lfs_pointer(path: Path) -> bool:
    """A Git LFS pointer left in place of the weights (a clone without `git lfs pull`)."""
    if path.stat().st_size > 1024:
        return False
    with path.open("rb") as f:
        return f.read(len(_LFS_POINTER)) == _LFS_POINTER


def require_checkpoint(path: str | Path, what: str) -> Path:
    """`path` if it holds every serving file of a shipped checkpoint, else MissingAssetError naming what is
    missing (`what` says which checkpoint, for the message)."""
    path = Path(path)
    if not path.is_dir():
        raise MissingAssetError(f"{what} is missing: no folder {path}; {_restore_hint(path)}")
    missing = [name for name in SERVING_FILES if not (path / name).is_file()]
    if missing:
        raise MissingAssetError(f"{what} is incomplete: {path} has no {', '.join(missing)}; {_restore_hint(path)}")
    weights = path / "model.safetensors"
    if _is_lfs_pointer(weights):
        raise MissingAssetError(
            f"{what} is incomplete: {weights} is a Git LFS pointer, not the weights; run `git lfs pull`, or "
            f"{_restore_hint(path)}"
        )
    return path


def default_model_path() -> Path:
    """The embedded default checkpoint, checked: MissingAssetError if any of its files is missing."""
    return require_checkpoint(DEFAULT_MODEL, "the embedded default model")


def default_problems_path() -> Path:
    """The bundled evaluation set of the synthetic task."""
    files = sorted(DEFAULT_PROBLEMS.glob("*.jsonl"))
    if not files:
        raise MissingAssetError(
            f"the bundled problem set is missing: no *.jsonl in {DEFAULT_PROBLEMS} (or pass a problems file); "
            f"{_restore_hint(DEFAULT_PROBLEMS)}"
        )
    return files[0]


def _is_shipped(path: Path) -> bool:
    try:
        path.resolve().relative_to(ASSETS.resolve())
    except ValueError:
        return False
    return True


def resolve_model(model: str | Path | None) -> tuple[str, str]:
    """(path to load, label for results): the given model, else the embedded default. A missing shipped
    checkpoint (the default, or one under tts_engine/assets asked for by path) raises MissingAssetError."""
    if model is None:
        return str(default_model_path()), DEFAULT_MODEL_LABEL
    if _is_shipped(Path(model)):
        require_checkpoint(model, f"the shipped checkpoint {model}")
    return str(model), str(model)
