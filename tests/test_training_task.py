import json
import random

import pytest

from tts_engine.answers import extract_answer
from tts_engine.answers.rewards import answer_key, solution_reward
from tts_engine.tasks.arith.generator import (
    EVAL_PER_LEVEL,
    EVAL_SEED,
    LEVELS,
    ProblemStream,
    bundled_problems_path,
    held_out_texts,
    make_problem,
    make_problem_set,
    max_value,
)


def test_problem_set_is_deterministic_per_seed():
    a = make_problem_set(5, LEVELS, 6)
    b = make_problem_set(5, LEVELS, 6)
    c = make_problem_set(6, LEVELS, 6)
    assert a == b
    assert [p.problem for p in a] != [p.problem for p in c]
    assert [p.level for p in a] == [lvl for lvl in LEVELS for _ in range(6)]
    assert len({p.id for p in a}) == len(a)


def _apply(value, op, operand):
    return value + operand if op == "+" else value - operand if op == "-" else value * operand


@pytest.mark.parametrize("level", LEVELS)
def test_solutions_are_correct_step_by_step_and_grade_correct(level):
    rng = random.Random(level)
    for _ in range(50):
        p = make_problem(rng, level)
        lines = p.solution.split("\n")
        assert len(lines) == level + 2  # level + 1 steps and the boxed answer
        assert lines[-1] == f"\\boxed{{{p.answer}}}"
        expression = p.problem.removeprefix("Compute left to right: ").removesuffix(".")
        value = None
        for line in lines[:-1]:
            left, result = line.split("=")
            op = next(ch for ch in left[1:] if ch in "+-*")
            a, b = left.split(op, 1) if op != "-" else left.rsplit("-", 1)
            assert value is None or int(a) == value
            assert _apply(int(a), op, int(b)) == int(result)
            value = int(result)
        assert str(value) == p.answer and 0 <= value <= max_value(level)
        assert expression.startswith(lines[0].split("=")[0])
        assert solution_reward(p.answer, p.solution) == 1.0
        assert solution_reward(p.answer, p.solution.replace(f"{{{p.answer}}}", f"{{{int(p.answer) + 1}}}")) == 0.0


def test_stream_excludes_held_out_problems():
    first = ProblemStream(3).batch(20)
    stream = ProblemStream(3, exclude={first[0].problem})
    assert first[0].problem not in {p.problem for p in stream.batch(20)}


def test_bundled_set_is_the_documented_command_output():
    records = [json.loads(line) for line in bundled_problems_path().read_text().splitlines()]
    expected = [p.to_record() for p in make_problem_set(EVAL_SEED, LEVELS, EVAL_PER_LEVEL)]
    assert records == expected
    assert set(records[0]) == {"id", "problem", "answer", "level"}
    assert sorted({r["level"] for r in records}) == list(range(1, 9))


def test_the_levels_1_to_5_set_is_kept_and_both_sets_are_held_out_of_training():
    path = bundled_problems_path().with_name("arith_levels1-5.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records == [p.to_record() for p in make_problem_set(EVAL_SEED, (1, 2, 3, 4, 5), 40)]
    held_out = held_out_texts()
    bundled = {json.loads(line)["problem"] for line in bundled_problems_path().read_text().splitlines()}
    assert {r["problem"] for r in records} | bundled == held_out


def test_answer_helpers():
    assert extract_answer("a \\boxed{3} then \\boxed{ 12 }") == "12"
    assert extract_answer("no answer") is None
    assert answer_key("012") == "12" and answer_key(None) is None
    assert answer_key("--1") == "--1" and answer_key("-3") == "-3"  # malformed text stays text, never raises
    assert solution_reward("2", "\\boxed{--1}") == 0.0  # no crash; ("--1" vs "1" is the shared checker's call: equal)
    assert solution_reward("9", "12-3=9\n") == 0.0  # no boxed answer: no reward
    assert solution_reward("12", "\\boxed{012}") == 1.0
    assert solution_reward("1/2", "\\boxed{\\frac{1}{2}}") == 1.0  # equivalence, not string equality
