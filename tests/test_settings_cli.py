"""The one settings mechanism: dataclass fields as options, --config files, shared engine options, and a
one-line error for a bad value in every command."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from tts_engine.cli import main
from tts_engine.config import EngineConfig
from tts_engine.settings import Command, build, config_option, field_docs, options, setting


@dataclass
class Toy:
    """A config for the tests."""

    size: int = 3
    """How many."""
    mode: str = setting("a", choices=("a", "b"), flags=("--kind",))
    """Which mode."""
    weights: list[float] = setting(default_factory=lambda: [1.0, 2.0])
    """Per-level weights."""
    verbose: bool = False
    """Say more."""

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"size must be >= 1, got {self.size}")


@click.command(cls=Command)
@config_option
@options(Toy)
def toy(config_file, **settings):
    click.echo(json.dumps(build(Toy, settings, config_file=config_file).__dict__))


def run(command, args):
    result = CliRunner().invoke(command, args)
    return result.exit_code, result.output


def test_field_docstrings_become_help_with_defaults():
    assert field_docs(Toy)["size"] == "How many."
    code, out = run(toy, ["--help"])
    assert code == 0
    for text in (
        "--size INTEGER",
        "How many.  [default: 3]",
        "--mode, --kind [a|b]",
        "[default: 1.0,2.0]",
        "--verbose",
        "--config FILE",
    ):
        assert text in out


def test_defaults_then_config_file_then_options(tmp_path):
    assert json.loads(run(toy, [])[1]) == {"size": 3, "mode": "a", "weights": [1.0, 2.0], "verbose": False}
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("size: 7\nmode: b\nweights: [0.5]\n")
    assert json.loads(run(toy, ["--config", str(yaml_file)])[1]) == {
        "size": 7,
        "mode": "b",
        "weights": [0.5],
        "verbose": False,
    }
    got = json.loads(
        run(toy, ["--config", str(yaml_file), "--size", "9", "--kind", "a", "--weights", "1,2,3", "--verbose"])[1]
    )
    assert got == {"size": 9, "mode": "a", "weights": [1.0, 2.0, 3.0], "verbose": True}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--size", "0"], "Error: invalid value for --size: size must be >= 1, got 0"),
        (["--weights", "1,x"], "expected comma-separated float values"),
    ],
)
def test_bad_values_are_one_line_errors(args, message):
    code, out = run(toy, args)
    assert code != 0 and message in out and "Traceback" not in out


def test_unknown_or_malformed_config_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"size": 2, "colour": "red"}')
    code, out = run(toy, ["--config", str(bad)])
    assert code == 1 and "unknown settings ['colour']" in out and len(out.strip().splitlines()) == 1
    bad.write_text("{not json")
    code, out = run(toy, ["--config", str(bad)])
    assert code == 1 and "bad.json:1: invalid JSON" in out


def _option_names(command) -> set[str]:
    return {name for p in command.params for name in p.opts}


def test_bench_lists_the_same_engine_options_as_solve():
    from tts_engine.eval.cli import bench

    solve = main.get_command(click.Context(main), "solve")
    engine = {
        "--model",
        "--backend",
        "--verifier-kind",
        "--verifier-model",
        "--process-headline",
        "--score-norm",
        "--grader",
        "--judge-model",
        "--backend-option",
        "--n",
        "--temperature",
        "--top-p",
        "--max-new-tokens",
        "--seed",
    }
    assert engine <= _option_names(solve) and engine <= _option_names(bench)
    shared = {p.name for p in solve.params} & {p.name for p in bench.params}
    from tts_engine.settings import cli_fields

    assert {f.name for f in cli_fields(EngineConfig)} <= shared  # every engine setting a command line can set


@pytest.fixture
def malformed_problems(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_text('{"problem": "1+1=", "answer": "2"}\n{"problem": oops}\n')
    return path


def _one_line_error(args) -> str:
    result = CliRunner().invoke(main, args)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1, result.output
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.output, result.output
    return lines[0]


def test_every_command_rejects_a_bad_value_in_one_line(malformed_problems, tmp_path):
    assert "group_size and verifier_group must be >= 2, got 1, 4" in _one_line_error(
        ["train", "tango", "--group-size", "1"]
    )
    assert "--lr: lr must be > 0" in _one_line_error(["train", "sft", "--lr", "0"])
    assert "--ratio" in _one_line_error(["train", "tango", "--ratio", "0"])
    assert "--threads" in _one_line_error(["train", "tango", "--threads", "0"])
    assert "--lr" in _one_line_error(["train", "joint", "--lr", "-1"])
    assert "--structural-share: structural_share must be in [0, 1]" in _one_line_error(
        ["train", "recompute", "--structural-share", "2"]
    )
    assert "problems.jsonl:2: invalid JSON" in _one_line_error(["solve", str(malformed_problems)])
    assert "--tau" in _one_line_error(["solve", "--strategy", "adaptive-n", "--tau", "2"])
    assert "--budgets" in _one_line_error(["solve", "--strategy", "adaptive-length", "--budgets", "512,256"])
    assert "--n: n must be an integer >= 1" in _one_line_error(["solve", "--n", "0"])
    assert "--num-subsets" in _one_line_error(
        ["curve", str(malformed_problems), "--out-dir", str(tmp_path), "--subsets", "0"]
    )
    assert "--top-p" in _one_line_error(["bench", "--out-dir", str(tmp_path / "b"), "--top-p", "2"])
    assert "problems.jsonl:2" in _one_line_error(
        ["bench", "--out-dir", str(tmp_path / "b"), "--problems", str(malformed_problems)]
    )
    assert "not a results line" in _one_line_error(
        ["merge", str(malformed_problems), "--out", str(tmp_path / "m.jsonl")]
    )


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed: no error to show")
def test_missing_vllm_is_one_line(tmp_path):
    line = _one_line_error(["bench", "--backend", "vllm", "--out-dir", str(tmp_path / "b"), "--limit", "1"])
    assert "needs vLLM" in line
    assert "needs vLLM" in _one_line_error(["solve", "--backend", "vllm", "--limit", "1"])
