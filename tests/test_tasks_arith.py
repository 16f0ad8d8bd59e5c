"""The arithmetic task pack: levels beyond the trained ones, and the pack registering its verify form."""

import pytest

from tts_engine.tasks.arith.chain import apply, problem_steps
from tts_engine.tasks.arith.generator import EVAL_SEED, make_problem_set, parse_levels


def test_levels_parse_ranges_and_lists():
    assert parse_levels("1-5") == (1, 2, 3, 4, 5)
    assert parse_levels("1,2,6-8") == (1, 2, 6, 7, 8)
    for bad in ("", "0-2", "a", "3-x"):
        with pytest.raises(ValueError, match="levels must"):
            parse_levels(bad)


def _values(problem):
    start, steps = problem_steps(problem.problem)
    values = [start]
    for op, operand in steps:
        values.append(apply(values[-1], op, operand))
    assert str(values[-1]) == problem.answer and problem.solution.endswith(f"\\boxed{{{values[-1]}}}")
    return steps, values


@pytest.mark.parametrize("level", [6, 8])
def test_levels_above_five_have_more_operations_and_four_digit_values(level):
    problems = make_problem_set(seed=3, levels=(level,), per_level=40)
    tops = []
    for problem in problems:
        steps, values = _values(problem)
        assert len(steps) == level + 1 and 0 <= min(values) and max(values) <= 9999
        tops.append(max(values))
    assert sum(top > 999 for top in tops) > len(problems) // 2


@pytest.mark.parametrize("cap", [999, 50])
def test_max_value_caps_every_level(cap):
    for problem in make_problem_set(seed=3, levels=(1, 4, 7), per_level=20, cap=cap):
        _, values = _values(problem)
        assert 0 <= min(values) and max(values) <= cap
    with pytest.raises(ValueError, match="max value"):
        make_problem_set(seed=3, levels=(1,), per_level=1, cap=5)


def test_the_pack_registers_its_verify_form_and_score_kind():
    from tts_engine.verifiers import score_kinds, verify_forms

    assert "recompute" in verify_forms()
    assert score_kinds()["verifier_recompute"].written_by == "recompute"


def test_make_problems_writes_the_levels_asked_for(tmp_path):
    from click.testing import CliRunner

    from tts_engine.cli import main
    from tts_engine.inputs.problems import load_problems

    out = tmp_path / "long.jsonl"
    args = ["train", "make-problems", "--out", str(out), "--levels", "6-7", "--per-level", "3", "--max-value", "999"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    written = load_problems(out)
    assert [p.fields["level"] for p in written] == [6, 6, 6, 7, 7, 7]
    assert [p.text for p in written] == [p.problem for p in make_problem_set(EVAL_SEED, (6, 7), 3, cap=999)]
