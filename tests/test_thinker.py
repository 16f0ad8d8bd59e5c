"""The thinker's trace (tasks/arith/thinking.py) and its training data: a sampled solution, its check line by line
(each line copied, then its step recomputed units digit first and ok or no), after "wait" the rejected line fixed
and the rest written again, then the new lines checked; a chain's lines from its first wrong one on never learned;
the chain read back (and checked by the recompute verifier); cut traces' forced answers; chains whose errors no
check can see left out."""

from __future__ import annotations

import json
import random

from tts_engine.tasks.arith.recompute import transcribe
from tts_engine.tasks.arith.thinking import ANSWER_FORCING, current_answer, final_chain, trace
from tts_engine.training.thinker.trainer import cut_trace, load_chains

PROBLEM = "Compute left to right: 28*4-18+80."
WRONG = ["28*4=112", "112-18=93", "93+80=173"]
RIGHT = ["28*4=112", "112-18=94", "94+80=174"]


def text_of(chains: list[list[str]]) -> str:
    return "".join(p.text for p in trace(PROBLEM, chains))


def test_a_trace_checks_its_solution_fixes_the_first_wrong_line_and_checks_again():
    pieces = trace(PROBLEM, [WRONG, RIGHT])
    text = "".join(p.text for p in pieces)
    assert text == (
        "<think>\n28*4=112\n112-18=93\n93+80=173\ncheck\n28*4=112|820*400=211 ok\n112-18=93|211-810=490 no\nwait\n"
        "112-18=94\n94+80=174\ncheck\n94+80=174|490+080=471 ok\n</think>\n\\boxed{174}"
    )
    assert [p.text for p in pieces if not p.learn] == ["112-18=93\n", "93+80=173\n"]  # from the first wrong line on
    assert final_chain(text) == RIGHT
    assert final_chain("no trace here") is None


def test_a_right_solution_is_checked_once_and_a_second_error_is_fixed_too():
    right = text_of([RIGHT])
    assert right.endswith("94+80=174|490+080=471 ok\n</think>\n\\boxed{174}") and "wait" not in right
    twice = text_of([WRONG, ["28*4=112", "112-18=94", "94+80=175"], RIGHT])
    assert "94+80=175|490+080=471 no\nwait\n94+80=174\n</think>" in twice  # a fixed last line: nothing to check
    assert final_chain(twice) == RIGHT


def test_the_recompute_check_reads_a_trace_as_the_chain_it_ends_with():
    text = text_of([WRONG, RIGHT])
    plain = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"
    assert transcribe(text) == transcribe(plain)  # the checks and the wrong lines left out
    assert transcribe(text).lines == ("820*400=211", "211-810=490", "490+080=471")
    assert transcribe(text[: text.index("</think>")]) is None  # a cut trace holds no answer to check


def test_the_answer_a_cut_trace_holds_is_the_last_line_of_the_chain_it_holds():
    text = text_of([WRONG, RIGHT])
    assert current_answer(text[: text.index("112-18=93")]) == 112
    assert current_answer(text[: text.index("wait")]) == 173  # rejected, not yet fixed
    assert current_answer(text[: text.index("94+80")]) == 94  # fixed: the chain from the fixed line
    assert current_answer(text[: text.index("</think>")]) == 174
    assert current_answer("<think>\n28*4=1") is None
    cut = cut_trace(trace(PROBLEM, [WRONG, RIGHT]), random.Random(5))
    assert cut[0].text.endswith(ANSWER_FORCING) and not cut[0].learn  # the cut trace and the forcing: context
    assert cut[1].text == f"{current_answer(cut[0].text[: -len(ANSWER_FORCING)])}}}"  # the forced answer: learned


def test_chains_whose_errors_no_check_can_see_are_left_out(tmp_path):
    path = tmp_path / "chains.jsonl"
    operand = ["28*4=112", "112-19=93", "93+80=173"]  # an operand copied wrong: the line's own arithmetic is right
    rows = [{"problem": PROBLEM, "chains": [WRONG, RIGHT]}, {"problem": PROBLEM, "chains": [operand, RIGHT]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    notes = []
    assert [r["chains"] for r in load_chains(path, notes.append)] == [[WRONG, RIGHT]]
    assert "1 left out" in notes[0]
