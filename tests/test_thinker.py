"""The thinker's trace (tasks/arith/thinking.py) and its training data: a solution, then solutions again after
"wait" until two agree, the agreed answer after the trace (or, where none agree, the first solution's); a
solution's lines from its first wrong one on never learned; the solution read back (and checked by the recompute verifier); cut traces' forced answers; the independent
solutions a training trace is made of."""

from __future__ import annotations

import json
import random

import pytest

from tts_engine.tasks.arith.recompute import transcribe
from tts_engine.tasks.arith.thinking import ANSWER_FORCING, current_answer, final_chain, first_wrong, trace
from tts_engine.training.thinker.trainer import cut_trace, load_chains, right_rates, solutions_for

PROBLEM = "Compute left to right: 28*4-18+80."
WRONG = ["28*4=112", "112-18=93", "93+80=173"]
RIGHT = ["28*4=112", "112-18=94", "94+80=174"]


def text_of(solutions: list[list[str]]) -> str:
    return "".join(p.text for p in trace(PROBLEM, solutions))


def test_a_trace_solves_again_until_two_solutions_agree():
    pieces = trace(PROBLEM, [WRONG, RIGHT, RIGHT])
    text = "".join(p.text for p in pieces)
    assert text == (
        "28*4=112\n112-18=93\n93+80=173\nwait\n"
        + PROBLEM
        + "\n28*4=112\n112-18=94\n94+80=174\nwait\n"
        + PROBLEM
        + "\n28*4=112\n112-18=94\n94+80=174\n</think>\n\\boxed{174}"
    )
    assert [p.text for p in pieces if not p.learn] == ["112-18=93\n", "93+80=173\n"]  # from the first wrong line on
    assert final_chain(text) == RIGHT
    assert final_chain("no solution here") is None
    assert final_chain("28*4=112\n112-18=93\n93+80=173\n\\boxed{173}") == WRONG  # a plain solution: itself


def test_a_trace_stops_where_two_solutions_agree_or_answers_with_its_first_solution():
    with pytest.raises(ValueError, match="agree"):
        trace(PROBLEM, [RIGHT, RIGHT, RIGHT])  # it would have stopped after the second
    with pytest.raises(ValueError, match="lines"):
        trace(PROBLEM, [RIGHT[:2]])
    capped = text_of([RIGHT, WRONG])  # the most solutions a trace holds, none agreeing: the first one's answer
    assert capped.endswith("93+80=173\n</think>\n\\boxed{174}")
    assert final_chain(capped) == RIGHT


def test_the_recompute_check_reads_a_trace_as_the_solution_its_answer_comes_from():
    text = text_of([WRONG, RIGHT, RIGHT])
    plain = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"
    assert transcribe(text) == transcribe(plain)  # the earlier solutions left out
    assert transcribe(text).lines == ("820*400=211", "211-810=490", "490+080=471")
    assert transcribe(text[: text.index("</think>")]) is None  # a cut trace holds no answer to check


def test_the_answer_a_cut_trace_holds_is_its_first_complete_solutions():
    text = text_of([WRONG, RIGHT, RIGHT])
    assert current_answer(text[: text.index("112-18=93")]) == 112  # no solution complete: its last complete line
    assert current_answer(text[: text.index("93+80=17")]) == 93  # a line cut before its line break is not read
    assert current_answer(text[: text.index("wait") + 2]) == 173
    assert current_answer(text[: text.index("94+80")]) == 173  # the second solution not complete yet
    assert current_answer(text[: text.rindex("wait") + 5]) == 173  # two complete, not agreeing: the first one's
    assert current_answer(text[: text.index("</think>")] + "wait\n") == 174  # two agree
    assert current_answer("28*4=1") is None
    cut = cut_trace(trace(PROBLEM, [WRONG, RIGHT, RIGHT]), random.Random(5))
    assert cut[0].text.endswith(ANSWER_FORCING) and not cut[0].learn  # the cut trace and the forcing: context
    assert cut[1].text == f"{current_answer(cut[0].text[: -len(ANSWER_FORCING)])}}}"  # the forced answer: learned


def test_a_training_trace_starts_with_the_sampled_solution_then_independent_ones_until_two_agree():
    record = {"problem": PROBLEM, "level": 1, "chains": [WRONG, RIGHT]}
    always = solutions_for(record, 1.0, 6, random.Random(0))
    assert always == [WRONG, RIGHT, RIGHT]  # the record's first chain, then exact ones until two agree
    never = solutions_for(record, 0.0, 4, random.Random(0))
    assert len(never) == 4 and never[0] == WRONG  # no two agree: as many as allowed
    assert all(first_wrong(PROBLEM, s) is not None for s in never)
    for seed in range(20):
        solutions = solutions_for(record, 0.5, 6, random.Random(seed))
        trace(PROBLEM, solutions)  # a trace that stops where two agree, never earlier


def test_records_whose_first_chain_is_not_the_problems_are_left_out(tmp_path):
    path = tmp_path / "chains.jsonl"
    rows = [
        {"problem": PROBLEM, "level": 1, "chains": [WRONG, RIGHT]},
        {"problem": PROBLEM, "level": 1, "chains": [RIGHT]},
        {"problem": PROBLEM, "level": 2, "chains": [RIGHT[:2]]},  # a line short
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    notes = []
    records = load_chains(path, notes.append)
    assert [r["chains"][0] for r in records] == [WRONG, RIGHT]
    assert "1 left out" in notes[0]
    assert right_rates(records) == {1: 0.5}
