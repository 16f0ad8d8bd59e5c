"""`tts solve --strategy adaptive-length|adaptive-n` end to end on a tiny random model."""

import json

import pytest
from click.testing import CliRunner

from tts_engine.cli import main
from tts_engine.running.results import read_results


@pytest.fixture
def problems_file(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [{"id": f"p{i}", "problem": f"Compute {i}+{i}.", "answer": str(2 * i)} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_adaptive_length(tiny_model_dir, problems_file, tmp_path):
    out = tmp_path / "length.jsonl"
    args = [
        "solve",
        str(problems_file),
        "--model",
        tiny_model_dir,
        "--n",
        "2",
        "--strategy",
        "adaptive-length",
        "--budgets",
        "3,6",
        "--tau",
        "1.0",
        "--confidence-from",
        "majority",
        "--out",
        str(out),
        "--quiet",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "adaptive-length (p_correct of majority, tau=1.0)" in result.output and "budget reached" in result.output
    records = list(read_results(out))
    assert len(records) == 3 and all(r["adaptive"]["budget_reached"] in (3, 6) for r in records)
    assert all(r["run"]["adaptive"]["budgets"] == [3, 6] for r in records)


def test_cli_adaptive_n(tiny_model_dir, problems_file, tmp_path):
    out = tmp_path / "n.jsonl"
    args = [
        "solve",
        str(problems_file),
        "--model",
        tiny_model_dir,
        "--strategy",
        "adaptive-n",
        "--wave",
        "2",
        "--min-n",
        "2",
        "--max-n",
        "4",
        "--tau",
        "1.0",
        "--max-new-tokens",
        "4",
        "--out",
        str(out),
        "--quiet",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "mean N used: 4.0" in result.output
    assert [len(r["samples"]) for r in read_results(out)] == [4, 4, 4]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--strategy", "adaptive-length", "--budgets", "8,4"], "budgets must be strictly increasing"),
        (["--strategy", "adaptive-n", "--tau", "2"], "tau must be in [0, 1], got 2.0"),
        (["--strategy", "adaptive-n", "--min-n", "8", "--max-n", "4"], "max_n must be >= min_n"),
        (["--strategy", "adaptive-n", "--confidence-from", "vibes"], "confidence_from must be one of"),
    ],
)
def test_cli_rejects_bad_adaptive_settings(tiny_model_dir, problems_file, extra, message):
    result = CliRunner().invoke(main, ["solve", str(problems_file), "--model", tiny_model_dir, "--quiet", *extra])
    assert result.exit_code != 0 and message in result.output
