"""The thinker's trace (tasks/arith/thinking.py) and its training data: built from sampled chains, every line
checked on its own line and followed by the operations left, a wrong line fixed after "wait", never learned; the chain read back (and checked by the
recompute verifier); cut traces' forced
answers; chains whose errors the checks cannot see left out."""

from __future__ import annotations

import json
import random

from tts_engine.tasks.arith.recompute import transcribe
from tts_engine.tasks.arith.thinking import ANSWER_FORCING, current_answer, final_chain, trace
from tts_engine.training.thinker.trainer import cut_trace, load_chains

PROBLEM = "Compute left to right: 28*4-18+80."
CHAINS = [["28*4=112", "112-18=93", "93+80=173"], ["28*4=112", "112-18=94", "94+80=174"]]


def test_a_trace_checks_every_line_and_fixes_the_first_wrong_one():
    pieces = trace(PROBLEM, CHAINS)
    text = "".join(p.text for p in pieces)
    assert text == (
        "<think>\n28*4=112|820*400=211 ok|-18+80\n112-18=93|211-810=490 no\nwait\n"
        "112-18=94|211-810=490 ok|+80\n94+80=174|490+080=471 ok|end\n</think>\n\\boxed{174}"
    )
    assert [p.text for p in pieces if not p.learn] == ["112-18=93"]  # the wrong line is context, never a target
    assert final_chain(text) == ["28*4=112", "112-18=94", "94+80=174"]
    assert final_chain("no trace here") is None


def test_the_recompute_check_reads_a_trace_as_the_chain_it_ends_with():
    text = "".join(p.text for p in trace(PROBLEM, CHAINS))
    plain = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"
    assert transcribe(text) == transcribe(plain)  # the checks and the fixed line left out
    assert transcribe(text).lines == ("820*400=211", "211-810=490", "490+080=471")
    assert transcribe(text[: text.index("</think>")]) is None  # a cut trace holds no answer to check


def test_the_answer_a_cut_trace_holds_is_its_last_complete_solution_line():
    text = "".join(p.text for p in trace(PROBLEM, CHAINS))
    assert current_answer(text[: text.index("112-18=93")]) == 112
    assert current_answer(text[: text.index("wait")]) == 93  # before the check's verdict is acted on
    assert current_answer(text[: text.index("</think>")]) == 174
    cut = cut_trace(trace(PROBLEM, CHAINS), random.Random(5))
    assert cut[0].text.endswith(ANSWER_FORCING) and not cut[0].learn  # the cut trace and the forcing: context
    assert cut[1].text == f"{current_answer(cut[0].text[: -len(ANSWER_FORCING)])}}}"  # the forced answer: learned


def test_chains_whose_errors_no_check_can_see_are_left_out(tmp_path):
    path = tmp_path / "chains.jsonl"
    operand = ["28*4=112", "112-19=93", "93+80=173"]  # an operand copied wrong: the line's own arithmetic is right
    rows = [{"problem": PROBLEM, "chains": CHAINS}, {"problem": PROBLEM, "chains": [operand, CHAINS[1]]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    notes = []
    assert [r["chains"] for r in load_chains(path, notes.append)] == [CHAINS]
    assert "1 left out" in notes[0]
