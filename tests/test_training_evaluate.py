"""`tts train evaluate` is Engine.solve + the curve code: its figures equal those of `tts curve` on its results."""

import json

import pytest
from click.testing import CliRunner

from tts_engine.eval.cli import curve
from tts_engine.problems import Problem, load_problems
from tts_engine.training.evaluate import evaluate, to_markdown
from tts_engine.tasks.arith.generator import bundled_problems_path, first_per_level


def test_evaluate_reports_the_curve_numbers(tiny_model_dir, tmp_path):
    problems = first_per_level(load_problems(bundled_problems_path()), 1)
    results = tmp_path / "results.jsonl"
    report = evaluate(tiny_model_dir, problems, n=4, progress=False, out=results)
    assert (
        report["problems"] == 5
        and report["n"] == 4
        and set(report["pass@1_by_level"]) == {f"L{i}" for i in range(1, 6)}
    )
    out = tmp_path / "curves"
    assert CliRunner().invoke(curve, [str(results), "--out", str(out), "--no-plots"]).exit_code == 0
    (c,) = json.loads((out / "curves.json").read_text())["curves"]
    assert report["pass@1"] == pytest.approx(c["strategies"]["pass@k"]["accuracy"][0])
    assert report["strategies"]["majority"][4] == pytest.approx(c["strategies"]["majority"]["accuracy"][-1])
    assert report["strategies"]["weighted (yes_no)"][4] == pytest.approx(
        c["strategies"]["weighted:verifier_yes_no"]["accuracy"][-1]
    )
    assert report["verifier"]["yes_no"]["auroc"] == c["verifier"]["verifier_yes_no"]["auroc"]
    text = to_markdown(json.loads(json.dumps(report)))  # sizes become strings in JSON
    assert "| majority |" in text and "N=4" in text


def test_first_per_level_on_problems_and_records():
    problems = [Problem(str(i), "t", "1", {"level": level}) for i, level in enumerate([1, 2, 1, 1])]
    assert [p.id for p in first_per_level(problems, 2)] == ["0", "1", "2"]
    assert [r["i"] for r in first_per_level([{"level": 1, "i": 0}, {"level": 1, "i": 1}], 1)] == [0]
