"""What a new user trips on, each a one-line error or a refusal that says what to do: a rerun with other settings,
options of another strategy, a misspelled strategy, an empty problems file, a problems file given where results are
read, a bad checkpoint config; and `tts --help` that imports nothing heavy."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tts_engine.cli import main

SMALL = ["--n", "2", "--max-new-tokens", "24", "--quiet"]


@pytest.fixture
def problems(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [
        {"id": f"p{i}", "problem": f"Compute left to right: {i}+{i + 1}.", "answer": str(2 * i + 1)} for i in range(3)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def tts(*args: str):
    return CliRunner().invoke(main, list(args))


def error_line(result) -> str:
    """The one error line of a failed command (the lines before it are its progress notes), with no traceback."""
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert result.exit_code == 1 and len(errors) == 1 and "Traceback" not in result.output, result.output
    assert result.output.strip().splitlines()[-1] == errors[0], result.output
    return errors[0]


def test_a_rerun_with_other_settings_is_refused_and_names_them(problems, tmp_path, tiny_model_dir):
    out = str(tmp_path / "r.jsonl")
    model = ["--model", tiny_model_dir]
    assert tts("solve", str(problems), *model, *SMALL, "--out", out).exit_code == 0
    line = error_line(tts("solve", str(problems), *model, *SMALL, "--out", out, "--n", "4", "--temperature", "0.5"))
    assert "holds a run with other settings (n 2 -> 4, temperature 1.0 -> 0.5)" in line and "--overwrite" in line
    line = error_line(tts("solve", str(problems), *model, *SMALL, "--out", out, "--seed", "7"))
    assert "seed 0 -> 7" in line
    assert tts("solve", str(problems), *model, *SMALL, "--out", out).exit_code == 0  # the same settings resume
    assert tts("solve", str(problems), *model, *SMALL, "--out", out, "--n", "4", "--overwrite").exit_code == 0
    assert [len(json.loads(line)["samples"]) for line in open(out)] == [4, 4, 4]


def test_a_rerun_with_another_strategy_is_refused(problems, tmp_path, tiny_model_dir):
    out = str(tmp_path / "r.jsonl")
    model = ["--model", tiny_model_dir, "--verifier-kind", "none"]
    assert tts("solve", str(problems), *model, *SMALL, "--out", out).exit_code == 0
    line = error_line(tts("solve", str(problems), *model, *SMALL, "--out", out, "--strategy", "adaptive-n"))
    assert "strategy fixed -> adaptive-n" in line


def test_settings_of_another_strategy_are_an_error_naming_who_takes_them(problems):
    line = error_line(tts("solve", str(problems), "--tau", "0.7", "--beam-width", "3", "--warmup", "2"))
    assert "strategy 'fixed' takes no --tau, --beam-width, --warmup" in line
    assert "--tau is a setting of adaptive-length, adaptive-n" in line and "--warmup is a setting of deepconf" in line


def test_help_marks_each_strategy_setting_with_its_strategies():
    text = tts("solve", "--help").output
    assert "[deepconf] full-length warm-up samples" in " ".join(text.split())
    assert "[adaptive-length] increasing token budgets" in " ".join(text.split())


def test_a_misspelled_strategy_gets_did_you_mean(problems):
    assert "(did you mean 'beam'?)" in error_line(tts("solve", str(problems), "--strategy", "beem"))


def test_an_empty_problems_file_is_an_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert f"{empty}: no problems in the file" in error_line(tts("solve", str(empty)))


def test_results_readers_name_the_file_and_line_of_a_problems_file(problems, tmp_path):
    line = error_line(tts("curve", str(problems), "--out-dir", str(tmp_path / "c")))
    assert f"{problems}:1: not a results line: it has no samples (a problems file?" in line
    line = error_line(tts("view", str(problems), "--out", str(tmp_path / "v.html")))
    assert f"{problems}:1: not a results line" in line


def test_a_bad_checkpoint_config_names_its_file(tmp_path, tiny_model_dir, problems):
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir, checkpoint)
    (checkpoint / "tts_engine.json").write_text(json.dumps({"template": "no placeholder"}))
    line = error_line(tts("solve", str(problems), "--model", str(checkpoint)))
    assert f"{checkpoint / 'tts_engine.json'}: template must contain '{{problem}}'" in line


def test_tts_help_imports_nothing_heavy():
    code = (
        "import sys\nfrom tts_engine.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'numpy', 'tts_engine.engine') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "solve" in done.stdout and done.stdout.strip().splitlines()[-1] == "[]"
