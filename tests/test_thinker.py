"""The thinker's trace (tasks/arith/thinking.py) and its training data: a solution, then its check written units
digit first (the problem in that form, each step, the check's answer), the check's answer after the trace; the
solution's lines from its first wrong one on never learned; the chain an answer comes from read back (and checked by
the recompute verifier); the answer a cut trace holds, and the cut traces training forces answers at."""

from __future__ import annotations

import json
import random

import pytest

from tts_engine.tasks.arith.recompute import transcribe
from tts_engine.tasks.arith.thinking import (
    ANSWER_FORCING,
    current_answer,
    final_chain,
    most_significant_first,
    read_trace,
    trace,
)
from tts_engine.training.thinker.trainer import cut_trace, load_chains

PROBLEM = "Compute left to right: 28*4-18+80."
WRONG = ["28*4=112", "112-18=93", "93+80=173"]
RIGHT = ["28*4=112", "112-18=94", "94+80=174"]
CHECK = "Check units first.\n820*400-810+080\n820*400=211\n211-810=490\n490+080=471\nanswer 471\n"


def text_of(solution: list[str]) -> str:
    return "".join(p.text for p in trace(PROBLEM, solution))


def test_a_trace_is_the_solution_then_its_check_units_first_then_the_checks_answer():
    pieces = trace(PROBLEM, WRONG)
    assert "".join(p.text for p in pieces) == "28*4=112\n112-18=93\n93+80=173\n" + CHECK + "</think>\n\\boxed{174}"
    assert [p.text for p in pieces if not p.learn] == ["112-18=93\n", "93+80=173\n"]  # from the first wrong line on
    assert [p.part for p in pieces][3:6] == ["check request", "problem units first", "check steps"]
    assert text_of(RIGHT).endswith(CHECK + "</think>\n\\boxed{174}")  # a right solution is checked the same way
    with pytest.raises(ValueError, match="lines"):
        trace(PROBLEM, RIGHT[:2])


def test_numbers_past_three_digits_and_with_zeros_read_back_as_written():
    problem = "Compute left to right: 2000+10*5."
    text = "".join(p.text for p in trace(problem, ["2000+10=2010", "2010*5=10050"]))
    assert "0002+010*500\n0002+010=0102\n0102*500=05001\nanswer 05001\n" in text
    assert final_chain(text) == ["2000+10=2010", "2010*5=10050"] and current_answer(text) == 10050
    assert most_significant_first("0102*500=05001") == "2010*5=10050"
    assert most_significant_first("0002+010") is None


def test_the_recompute_check_reads_a_trace_as_the_chain_its_answer_comes_from():
    text = text_of(WRONG)
    assert final_chain(text) == RIGHT  # the check's steps, read back: the wrong solution left out
    plain = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"
    assert transcribe(text) == transcribe(plain)
    assert transcribe(text[: text.index("</think>")]) is None  # a cut trace holds no answer to check
    assert final_chain("28*4=112\n112-18=93\n93+80=173\n\\boxed{173}") == WRONG  # a plain solution: itself
    assert final_chain("no solution here") is None


def test_the_answer_a_cut_trace_holds_is_its_solutions_until_the_check_has_answered():
    text = text_of(WRONG)
    assert current_answer(text[: text.index("112-18=93")]) == 112  # its last complete line
    assert current_answer(text[: text.index("93+80=17")]) == 93  # a line cut before its line break is not read
    assert current_answer(text[: text.index("211-810")]) == 173  # inside the check: still the solution's
    assert current_answer(text[: text.index("answer 471") + 9]) == 173  # the answer line not complete
    assert current_answer(text[: text.index("answer 471") + 11]) == 174
    assert read_trace(text[: text.index("490+080")]).check == ["28*4=112", "112-18=94"]
    assert current_answer("28*4=1") is None
    for seed in range(10):
        cut = cut_trace(trace(PROBLEM, WRONG), random.Random(seed))
        if cut is None:
            continue
        assert cut[0].text.endswith(ANSWER_FORCING) and not cut[0].learn  # the cut trace and the forcing: context
        assert cut[1].text == f"{current_answer(cut[0].text[: -len(ANSWER_FORCING)])}}}"  # the forced answer: learned


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


def test_the_shipped_thinker_checks_its_solution_and_answers_with_the_check():
    from tts_engine import Engine
    from tts_engine.inputs.models import THINKER
    from tts_engine.inputs.problems import Problem
    from tts_engine.strategies.thinking import ThinkingConfig

    engine = Engine(str(THINKER), verifier="none")
    problems = [Problem("a", PROBLEM, "174"), Problem("b", "Compute left to right: 7+5*3.", "36")]
    records = engine.solve(
        problems, strategy="thinking-budget", config=ThinkingConfig(thinking_budget=512), n=1, temperature=0.0
    )
    for record in records:
        [sample] = record["samples"]
        reading = read_trace(sample["text"])
        assert reading.solution and reading.check, sample["text"]  # it solved, then checked units digit first
        assert sample["answer"] == str(reading.check_answer) == record["reference"], sample["text"]
        assert record["thinking"]["stopped"] == {"ended": 1}  # its trace ended well within the budget
