"""One problem never sinks a run: over-long prompts and rows that fail are recorded, the others are solved."""

import json

import pytest
from click.testing import CliRunner

from tts_engine.backends.base import PromptFailedError
from tts_engine.cli import main
from tts_engine.engine import Engine
from tts_engine.eval.table import load_results
from tts_engine.inputs.problems import load_problems
from tts_engine.running.results import read_results
from tts_engine.running.summary import format_summary, summarize

LONG = "Compute " + "+".join(["1"] * 700) + "."  # about 1,400 characters: more than the tiny model's 1,024


@pytest.fixture
def mixed_file(tmp_path):
    """Six problems, the fourth too long for the model's context."""
    rows = [{"id": f"p{i}", "problem": f"Compute {i}+{i}.", "answer": str(2 * i)} for i in range(6)]
    rows[3] = {"id": "p3", "problem": LONG, "answer": "700"}
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return Engine(tiny_model_dir, verifier="none")


def solve(engine, path, out, **kwargs):
    return engine.solve(load_problems(path), n=2, max_new_tokens=4, out=out, progress=False, **kwargs)


def test_an_over_long_prompt_is_recorded_and_the_others_are_solved(engine, mixed_file, tmp_path):
    out = tmp_path / "r.jsonl"
    records = solve(engine, mixed_file, out)
    on_disk = list(read_results(out))
    assert sorted(r["id"] for r in on_disk) == [f"p{i}" for i in range(6)]
    assert [r["id"] for r in records] == [f"p{i}" for i in range(6)]
    failed = records[3]
    assert failed["status"] == "prompt_too_long" and failed["samples"] == []
    assert failed["failure"]["max_model_len"] == 1024 and failed["failure"]["num_tokens"] > 1024
    assert all(r["status"] == "ok" and len(r["samples"]) == 2 for i, r in enumerate(records) if i != 3)
    summary = summarize(records)
    assert summary["graded"] == 6 and summary["failures"]["counts"] == {"prompt_too_long": 1}
    # the failed problem counts as not solved: the accuracy's denominator is all six
    solved = sum(bool(r["aggregations"]["majority"]["correct"]) for r in records if r["status"] == "ok")
    assert summary["accuracy"]["majority"] == pytest.approx(solved / 6)
    assert "1 prompts did not fit the model's context" in format_summary(summary)


def test_strict_fails_as_before(engine, mixed_file, tmp_path):
    with pytest.raises(ValueError, match=r"problem 'p3': prompt \d+ has \d+ tokens, but the model's context is 1024"):
        solve(engine, mixed_file, tmp_path / "r.jsonl", strict=True)


def test_a_resumed_run_keeps_failures_and_retry_failed_redoes_them(engine, mixed_file, tmp_path):
    out = tmp_path / "r.jsonl"
    solve(engine, mixed_file, out)
    lines = out.read_text().splitlines()
    solve(engine, mixed_file, out)  # nothing left to do: failures count as done
    assert out.read_text().splitlines() == lines
    rows = [json.loads(line) for line in mixed_file.read_text().splitlines()]
    rows[3]["problem"] = "Compute 3+3."  # the problem fixed by the user: --retry-failed solves it
    mixed_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    solve(engine, mixed_file, out, retry_failed=True)
    on_disk = list(read_results(out))
    assert sorted(r["id"] for r in on_disk) == [f"p{i}" for i in range(6)]  # no line twice
    assert all(r.get("status") == "ok" for r in on_disk)
    first_p0 = [line for line in lines if '"id":"p0"' in line]
    assert [line for line in out.read_text().splitlines() if '"id":"p0"' in line] == first_p0  # kept as it was


class FailingRows:
    """Wraps a backend: generating for a prompt that contains `marker` fails even alone."""

    def __init__(self, inner, marker: str):
        self.inner, self.marker, self.calls = inner, marker, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, prompts, params):
        self.calls += 1
        for i, prompt in enumerate(prompts):
            if self.marker in prompt:
                raise PromptFailedError(i, "out of memory at one row")
        return self.inner.generate(prompts, params)


@pytest.mark.parametrize("strategy", ["fixed", "adaptive-n"])
def test_a_failing_row_is_recorded_and_its_chunk_goes_on(tiny_model_dir, mixed_file, tmp_path, strategy):
    engine = Engine(tiny_model_dir, verifier="none")
    engine.backend = FailingRows(engine.backend, "Compute 4+4.")
    problems = [p for p in load_problems(mixed_file) if p.id != "p3"]
    records = engine.solve(problems, strategy=strategy, n=2, max_new_tokens=4, progress=False)
    statuses = {r["id"]: r.get("status") for r in records}
    assert statuses == {"p0": "ok", "p1": "ok", "p2": "ok", "p4": "failed", "p5": "ok"}
    failed = next(r for r in records if r["id"] == "p4")
    assert failed["failure"]["reason"] == "out of memory at one row"


def test_a_verification_prompt_that_does_not_fit_fails_its_problem_alone(tiny_model_dir, mixed_file, tmp_path):
    engine = Engine(tiny_model_dir)  # the yes/no verifier asks its question after prompt + sample
    verify = engine.verifier.score

    def score(questions, prompts, outputs):
        from tts_engine.backends.base import PromptTooLongError

        if any("4+4" in q for q in questions):
            raise PromptTooLongError(0, 2000, 1024)
        return verify(questions, prompts, outputs)

    engine.verifier.score = score
    problems = [p for p in load_problems(mixed_file) if p.id != "p3"]
    records = engine.solve(problems, n=2, max_new_tokens=4, progress=False)
    assert [r.get("status") for r in records] == ["ok", "ok", "ok", "prompt_too_long", "ok"]


def test_tts_solve_and_curve_report_failures(tiny_model_dir, mixed_file, tmp_path):
    out = tmp_path / "r.jsonl"
    args = ["solve", str(mixed_file), "--model", tiny_model_dir, "--n", "2", "--max-new-tokens", "4", "--quiet"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 prompts did not fit the model's context" in result.output
    assert len(out.read_text().splitlines()) == 6
    strict = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "s.jsonl"), "--strict"])
    assert strict.exit_code != 0 and "prompt" in strict.output and "context is 1024" in strict.output
    table = load_results(out)
    assert table.num_problems == 6 and table.has_reference.sum() == 6
    assert (table.class_ids[table.ids.index("p3")] == -1).all()
    assert any("1 problems failed (prompt_too_long: 1)" in note for note in table.notes)
