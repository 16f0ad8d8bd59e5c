"""scripts/verdict_signal.py: silent GRPO groups and each verifier loss's weight on errors, from P(Yes) alone."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "verdict_signal.py"
spec = importlib.util.spec_from_file_location("verdict_signal", SCRIPT)
vs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vs)


def test_silent_groups_and_errors_of_a_class():
    fig = vs.class_figures([1.0, 0.0, 0.5], groups=[2])
    assert fig["n"] == 3 and fig["judged_wrong"] == pytest.approx(1 / 3)  # .5 is accepted
    assert fig["silent@2"] == pytest.approx((1 + 1 + 0.5) / 3)  # 1^2, 1^2 (all "No"), .5^2 + .5^2
    assert fig["silent@2|judged_wrong"] == pytest.approx(1.0)


def test_loss_weights_on_errors_per_class():
    # right answers: expected reward weighs by P, GRPO by sqrt(P / (1 - P)), cross-entropy uniformly
    assert vs.loss_weight_on_errors([0.9, 0.1], right=True) == pytest.approx((0.1 / 1.0, (1 / 3) / (3 + 1 / 3), 0.5))
    # wrong answers: the error is the accepted one (P = .9); cross-entropy weighs P / (1 - P)
    reward, grpo, ce = vs.loss_weight_on_errors([0.9, 0.2], right=False)
    assert reward == pytest.approx(0.9 / 1.1) and grpo == pytest.approx(3 / 3.5) and ce == pytest.approx(9 / 9.25)


def test_a_wrong_answer_matches_with_one_minus_p():
    out = vs.verdict_signal([0.9, 0.2, 0.3], truth=[True, False, False], groups=[8])
    assert out["right"]["n"] == 1 and out["right"]["judged_wrong"] == 0.0
    assert out["wrong"]["n"] == 2 and out["wrong"]["judged_wrong"] == 0.0  # both rejected: right verdicts
    assert out["wrong"]["silent@8"] == pytest.approx((0.8**8 + 0.2**8 + 0.7**8 + 0.3**8) / 2)


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_bad_samples_files_are_named(tmp_path):
    bad = tmp_path / "samples.json"
    bad.write_text("{not json")
    result = run("--samples", bad, "--verifier", "v=nowhere")
    assert result.returncode != 0 and f"{bad}: not a samples file of process_eval" in result.stderr
    bad.write_text(json.dumps({"prompts": ["p"], "texts": [["t"]]}))
    result = run("--samples", bad, "--verifier", "v=nowhere")
    assert result.returncode != 0 and "samples of 1 problems, the problem set has 200" in result.stderr
