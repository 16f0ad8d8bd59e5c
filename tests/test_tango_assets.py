"""The shipped Tango pair loads and serves: the generator answers in the task's format, and the verifier, served as
the process verifier, judges each step of it (the recompute form: its own probability of every line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.weights
def test_shipped_pair_serves_and_the_verifier_judges_steps(tango_pair):
    from tts_engine import Engine

    generator_dir, verifier_dir = tango_pair
    assert json.loads((Path(verifier_dir) / "tts_engine.json").read_text())["verify_form"] == "recompute"
    engine = Engine(str(generator_dir), verifier="process", verifier_model=str(verifier_dir))
    assert engine.verifier_name == "recompute"
    problem = "Compute left to right: 18+7*3."
    right, wrong_step = "18+7=25\n25*3=75\n\\boxed{75}", "18+7=24\n24*3=72\n\\boxed{72}"
    [[a, b]] = engine.verifier.score([problem], [problem + "\n"], [[right, wrong_step]])
    assert a.scores["verifier_recompute"] > 0.5 > b.scores["verifier_recompute"]
    assert len(a.step_scores) == len(b.step_scores) == 3
    assert b.first_error == 0 and min(a.step_scores) > 0.5  # the first line is where the wrong one goes wrong
