"""The shipped checkpoints are complete, and a missing one is an error that says what is missing and how to
restore it, never a silent stand-in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tts_engine.inputs import models
from tts_engine.inputs.models import (
    ASSETS,
    DEFAULT_MODEL,
    SERVING_FILES,
    TANGO_GENERATOR,
    TANGO_VERIFIER,
    THINKER,
    MissingAssetError,
    require_checkpoint,
    resolve_model,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "path",
    [DEFAULT_MODEL, TANGO_GENERATOR, TANGO_VERIFIER, THINKER, REPO / "checkpoints" / "joint_resolve"],
    ids=["default_model", "tango_generator", "tango_verifier", "thinker", "joint_resolve"],
)
def test_every_committed_checkpoint_has_its_serving_files(path):
    assert require_checkpoint(path, "a committed checkpoint") == path
    assert all((path / name).is_file() for name in SERVING_FILES)
    assert (path / "model.safetensors").stat().st_size > 100_000  # weights, not a Git LFS pointer


def test_the_default_is_served_when_no_model_is_given():
    path, label = resolve_model(None)
    assert Path(path) == DEFAULT_MODEL and "embedded default" in label
    assert models.default_problems_path().is_file()


def test_a_missing_default_model_fails_and_says_how_to_restore_it(monkeypatch, tmp_path):
    monkeypatch.setattr(models, "DEFAULT_MODEL", tmp_path / "default_model")
    with pytest.raises(MissingAssetError, match="the embedded default model is missing"):
        resolve_model(None)


def test_a_missing_shipped_checkpoint_names_the_reinstall_and_the_checkout():
    with pytest.raises(MissingAssetError) as err:
        resolve_model(ASSETS / "no_such_model")  # asked for by path, under the package's assets
    message = str(err.value)
    assert "reinstall" in message and "git checkout -- tts_engine/assets/no_such_model" in message


def test_an_incomplete_checkpoint_names_the_missing_files(tmp_path):
    copy = Path(shutil.copytree(DEFAULT_MODEL, tmp_path / "model"))
    (copy / "model.safetensors").unlink()
    (copy / "tts_engine.json").unlink()
    with pytest.raises(MissingAssetError, match=r"has no model\.safetensors, tts_engine\.json"):
        require_checkpoint(copy, "the test checkpoint")


def test_a_git_lfs_pointer_is_not_taken_for_weights(tmp_path):
    copy = Path(shutil.copytree(DEFAULT_MODEL, tmp_path / "model"))
    (copy / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 7\n")
    with pytest.raises(MissingAssetError, match="Git LFS pointer"):
        require_checkpoint(copy, "the test checkpoint")


def test_a_missing_bundled_problem_set_fails(monkeypatch, tmp_path):
    monkeypatch.setattr(models, "DEFAULT_PROBLEMS", tmp_path)
    with pytest.raises(MissingAssetError, match="the bundled problem set is missing"):
        models.default_problems_path()


def test_tts_solve_without_the_default_model_is_a_one_line_error(monkeypatch, tmp_path):
    from tts_engine.cli import main

    problems = tmp_path / "p.jsonl"
    problems.write_text('{"problem": "Compute left to right: 1+2.", "answer": "3"}\n')
    monkeypatch.setattr(models, "DEFAULT_MODEL", tmp_path / "default_model")
    result = CliRunner().invoke(main, ["solve", str(problems), "--n", "1", "--out", str(tmp_path / "r.jsonl")])
    assert result.exit_code != 0
    assert "the embedded default model is missing" in result.output
    assert not (tmp_path / "r.jsonl").exists() or not (tmp_path / "r.jsonl").read_text().strip()
