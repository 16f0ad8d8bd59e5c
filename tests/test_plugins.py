"""One plug-in mechanism: a throwaway distribution installed into a folder on the path adds a verifier (a verify
form and its score kind) or a backend through its entry-point group, and `Engine`, `tts solve` and the registries
reach it with no edit to the package (strategies: tests/test_strategy_registry.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tts_engine import Engine, plugins
from tts_engine.backends import backend_names
from tts_engine.inputs.problems import Problem
from tts_engine.running.results import read_results
from tts_engine.verifiers import registry as verifier_registry
from tts_engine.verifiers.registry import score_kinds, verify_forms

PROBLEMS = [Problem("p0", "Compute left to right: 2+3.", "5"), Problem("p1", "Compute left to right: 4+4.", "8")]

VERIFIER = '''
"""A verify form from another package: every solution scores its length over 100, capped at 1."""
from tts_engine.verifiers import register_score_kind, register_verify_form
from tts_engine.verifiers.base import SampleScore


class LengthVerifier:
    name = "length"
    kinds = ("verifier_length",)
    headline_kind = "verifier_length"
    scores_by_text = True

    def __init__(self, backend, prompt_config):
        self.backend = backend

    def score(self, questions, prompts, outputs):
        return [[SampleScore({"verifier_length": min(1.0, len(o) / 100)}) for o in row] for row in outputs]

    def step_scorer(self, prompt_for, delimiter, score_norm):
        raise ValueError("the length verifier scores whole solutions only")


register_verify_form("length", LengthVerifier)
register_score_kind("verifier_length", "the solution's length over 100, capped at 1", "length")
'''

BACKEND = '''
"""A backend from another package: the hf backend under its own name, counting its generate calls."""
from tts_engine.backends import register_backend
from tts_engine.backends.hf import HFBackend


class CountingBackend(HFBackend):
    name = "counting"
    calls = 0

    def generate(self, prompts, params):
        CountingBackend.calls += 1
        return super().generate(prompts, params)


register_backend("counting", lambda model, **options: CountingBackend(model, **options))
'''


def install(site, package: str, group: str, source: str) -> None:
    """A distribution `package` in folder `site` whose entry point in `group` names its module."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(source)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{package} = {package}\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on the path that throwaway distributions are installed into; the registries are restored after."""
    folder = tmp_path / "site"
    folder.mkdir()
    verify_forms(), backend_names()  # the built-ins, loaded before the copies below
    monkeypatch.setattr(plugins, "_loaded", set())
    monkeypatch.setattr(verifier_registry, "_FORMS", dict(verifier_registry._FORMS))
    monkeypatch.setattr(verifier_registry, "_KINDS", dict(verifier_registry._KINDS))
    from tts_engine import backends

    monkeypatch.setattr(backends, "_FACTORIES", dict(backends._FACTORIES))
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in ("tts_length", "tts_counting"):
        sys.modules.pop(name, None)


def run_solve(site, args: list[str]) -> subprocess.CompletedProcess:
    """`tts solve ARGS` in a fresh process that sees the distributions only through the path."""
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}  # no empty entry: the root's kernels/ would come first
    command = [sys.executable, "-P", "-c", "from tts_engine.cli import main; main()", "solve", *args, "--quiet"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_an_installed_package_adds_a_verify_form(site, tiny_model_dir, tmp_path):
    install(site, "tts_length", "tts_engine.verifiers", VERIFIER)
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir, checkpoint)
    (checkpoint / "tts_engine.json").write_text(json.dumps({"verify_form": "length", "use_chat_template": False}))
    assert "length" in verify_forms() and "verifier_length" in score_kinds()

    records = Engine(str(checkpoint)).solve(PROBLEMS, n=2, max_new_tokens=12, progress=False)
    sample = records[0]["samples"][0]
    assert sample["scores"]["verifier_length"] == pytest.approx(min(1.0, len(sample["text"]) / 100))
    assert records[0]["run"]["verifier"] == "length" and records[0]["run"]["headline_kind"] == "verifier_length"

    problems = tmp_path / "p.jsonl"
    problems.write_text(
        "".join(json.dumps({"id": p.id, "problem": p.text, "answer": p.reference}) + "\n" for p in PROBLEMS)
    )
    out = tmp_path / "r.jsonl"
    args = [str(problems), "--model", str(checkpoint), "--n", "2", "--max-new-tokens", "12", "--out", str(out)]
    done = run_solve(site, args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all("verifier_length" in r["samples"][0]["scores"] for r in read_results(out))


def test_an_installed_package_adds_a_backend(site, tiny_model_dir, tmp_path):
    install(site, "tts_counting", "tts_engine.backends", BACKEND)
    assert "counting" in backend_names()
    engine = Engine(tiny_model_dir, backend="counting", verifier="none")
    records = engine.solve(PROBLEMS, n=2, max_new_tokens=12, progress=False)
    assert records[0]["run"]["backend"] == "counting" and type(engine.backend).calls >= 1

    out = tmp_path / "r.jsonl"
    args = ["--model", tiny_model_dir, "--backend", "counting", "--verifier-kind", "none", "--n", "2"]
    done = run_solve(site, [*args, "--max-new-tokens", "12", "--limit", "2", "--out", str(out)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["run"]["backend"] for r in read_results(out)] == ["counting", "counting"]


def test_a_plugin_that_fails_to_import_is_left_out_and_named(site, caplog):
    install(site, "tts_broken", "tts_engine.backends", "raise RuntimeError('no GPU here')\n")
    assert "hf" in backend_names() and "tts_broken" not in backend_names()
    assert any("tts_broken" in r.getMessage() and "no GPU here" in r.getMessage() for r in caplog.records)


def test_a_plugin_that_takes_a_taken_name_stops_the_run(site):
    install(
        site,
        "tts_clash",
        "tts_engine.backends",
        "from tts_engine.backends import register_backend\nregister_backend('hf', lambda model, **options: None)\n",
    )
    with pytest.raises(ValueError, match="tts_clash.*already registered"):
        backend_names()
