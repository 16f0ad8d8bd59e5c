"""The arithmetic task pack: levels beyond the trained ones, and the pack registering its verify form."""

import pytest

from tts_engine.tasks.arith.chain import apply, problem_steps
from tts_engine.tasks.arith.generator import make_problem_set, parse_levels


def test_levels_parse_ranges_and_lists():
    assert parse_levels("1-5") == (1, 2, 3, 4, 5)
    assert parse_levels("1,2,6-8") == (1, 2, 6, 7, 8)
    for bad in ("", "0-2", "a", "3-x"):
        with pytest.raises(ValueError, match="levels must"):
            parse_levels(bad)


@pytest.mark.parametrize("level", [6, 8])
def test_levels_above_the_trained_ones_have_more_operations_and_right_answers(level):
    for problem in make_problem_set(seed=3, levels=(level,), per_level=20):
        start, steps = problem_steps(problem.problem)
        assert len(steps) == level + 1
        value = start
        for op, operand in steps:
            value = apply(value, op, operand)
            assert 0 <= value <= 999  # the recompute check's three-digit transcription holds
        assert str(value) == problem.answer and problem.solution.endswith(f"\\boxed{{{value}}}")


def test_the_pack_registers_its_verify_form_and_score_kind():
    from tts_engine.verifiers import score_kinds, verify_forms

    assert "recompute" in verify_forms()
    assert score_kinds()["verifier_recompute"].written_by == "recompute"


def test_make_problems_writes_the_levels_asked_for(tmp_path):
    from click.testing import CliRunner

    from tts_engine.cli import main
    from tts_engine.problems import load_problems

    out = tmp_path / "long.jsonl"
    result = CliRunner().invoke(
        main, ["train", "make-problems", "--out", str(out), "--levels", "6-7", "--per-level", "3"]
    )
    assert result.exit_code == 0, result.output
    assert [p.fields["level"] for p in load_problems(out)] == [6, 6, 6, 7, 7, 7]
