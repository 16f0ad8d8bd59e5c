"""The recompute verifier (each step recomputed units digit first, read teacher-forced) and its trainer's targets."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from tts_engine.backends.base import BackendBase
from tts_engine.tasks.arith.chain import restate, units_first
from tts_engine.tasks.arith.recompute import (
    RECOMPUTE_REQUEST,
    RecomputeVerifier,
    step_pieces,
    transcribe,
    transcribe_line,
)

PROBLEM = "Compute left to right: 28*4-18+80."
RIGHT = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"


def config():
    from tts_engine.inputs.prompts import PromptConfig

    return PromptConfig(use_chat_template=False, verify_form="recompute", check_suffix=RECOMPUTE_REQUEST)


def test_numbers_are_written_units_digit_first_in_three_digits():
    assert [units_first(n) for n in (112, 94, 4, 0, 1006)] == ["211", "490", "400", "000", "6001"]
    assert restate(PROBLEM) == "820*400-810+080"
    assert transcribe_line("112-18=94") == "211-810=490"
    assert transcribe_line(" 7 * 8 = 56 ") == "700*800=650"
    assert transcribe_line("so the answer is 5") == "so the answer is 5"  # kept as written
    with pytest.raises(ValueError, match="not an arithmetic task problem"):
        restate("What is 2+2?")


def test_a_solution_is_transcribed_line_by_line_then_its_answer():
    t = transcribe(RIGHT)
    assert t.text == "820*400=211\n211-810=490\n490+080=471\nanswer 471\n"
    assert t.pieces == step_pieces(RIGHT.split("\n"))
    assert transcribe("28*4=112\n112-18=") is None  # no boxed answer: nothing to check
    odd = transcribe("28*4=112\n\nwhat now\n\\boxed{x+1}")
    assert odd.lines == ("820*400=211", "what now") and odd.answer_line == "answer x+1" and odd.steps[1] is None


class TokenBackend(BackendBase):
    """Character tokens; log P of a continuation token = -1 for "9", -0.01 for any other (so a line's score
    says how many nines it has)."""

    name = "fake"
    max_model_len = 512

    def __init__(self):
        self.reads = []

    def encode(self, text):
        return [ord(c) for c in text]

    def cached_prefix_tokens(self, texts):
        return [10] * len(texts)

    def continuation_token_logprobs(self, prompts, continuations):
        self.reads.extend(zip(prompts, continuations))
        return [[-1.0 if ch == "9" else -0.01 for ch in c] for c in continuations]

    def continuation_logprobs(self, prompts, continuations):
        return [sum(row) for row in self.continuation_token_logprobs(prompts, continuations)]


def test_the_score_is_the_probability_of_the_transcript_and_steps_are_its_lines():
    backend = TokenBackend()
    prompt = PROBLEM + "\n"
    [[right, wrong_line]] = RecomputeVerifier(backend, config()).score(
        [PROBLEM], [prompt], [[RIGHT, "28*4=112\n112-18=99\n99+80=179\n\\boxed{179}"]]
    )
    query, continuation = backend.reads[0]
    assert query == prompt + "<|endoftext|>Check units first.\n820*400-810+080\n"
    assert continuation == transcribe(RIGHT).text
    # Lines of 12 characters with their line breaks; 211-810=490 and 490+080=471 have a nine each.
    lines = [-0.01 * 12, -1 - 0.01 * 11, -1 - 0.01 * 11, -0.01 * 11]
    assert right.step_scores == pytest.approx([math.exp(v) for v in lines])
    assert right.scores["verifier_recompute"] == pytest.approx(math.exp(sum(lines)))
    assert right.first_error == 1 and right.text == continuation and right.status == "ok"
    assert right.tokens == len(query) + len(continuation) - 10  # less what the prefix cache holds
    assert wrong_line.scores["verifier_recompute"] < right.scores["verifier_recompute"]


def test_unreadable_samples_are_recorded_not_raised():
    backend = TokenBackend()
    verifier = RecomputeVerifier(backend, config())
    [[no_answer], [other_task]] = verifier.score(
        [PROBLEM, "What is 2+2?"], ["p\n", "q\n"], [["28*4=112\n"], ["\\boxed{4}"]]
    )
    assert (no_answer.status, no_answer.scores["verifier_recompute"], no_answer.tokens) == ("no_answer", 0.0, 0)
    assert other_task.status == "not_a_task_problem" and backend.reads == []
    backend.max_model_len = 20
    [[too_long]] = verifier.score([PROBLEM], ["p\n"], [[RIGHT]])
    assert too_long.status == "too_long" and too_long.scores["verifier_recompute"] == 0.0


def test_a_checkpoint_with_the_recompute_form_gets_this_verifier():
    from tts_engine.verifiers import make_verifier

    assert isinstance(make_verifier(TokenBackend(), config()), RecomputeVerifier)
    with pytest.raises(ValueError, match=r"writes nothing: \['check_samples', 'check_temperature'\]"):
        RecomputeVerifier(TokenBackend(), replace(config(), check_samples=4, check_temperature=1.0))


def test_the_step_scorer_reads_each_new_step_after_the_earlier_ones():
    from tts_engine.tasks.arith.recompute import RecomputeStepScorer

    backend = TokenBackend()
    scorer = RecomputeStepScorer(RecomputeVerifier(backend, config()), lambda p: p + "\n")
    [scores] = scorer.score_batch([PROBLEM], [["28*4=112", "112-18=94", "\\boxed{94}"]])
    head = PROBLEM + "\n<|endoftext|>Check units first.\n820*400-810+080\n"
    assert backend.reads[-1] == (head + "820*400=211\n211-810=490\n", "answer 490\n")
    assert scores.scores == pytest.approx([math.exp(-0.12), math.exp(-1.11), math.exp(-1 - 0.1)])
    reads = len(backend.reads)
    scorer.score_batch([PROBLEM], [["28*4=112", "112-18=94"]])
    assert len(backend.reads) == reads  # steps read before cost nothing


# --- the trainer's targets ----------------------------------------------------------------------------------
def targets_of(solution):
    from tts_engine.training.recompute import check_targets

    t = transcribe(solution)
    return t.text, check_targets(PROBLEM, t)


def wrong_positions(text, targets):
    """(position, written, wanted) wherever a checker would write something else."""
    return [(i, c, t) for i, (c, t) in enumerate(zip(text, targets)) if t is not None and t != c]


def test_a_right_solutions_targets_are_its_own_transcript():
    text, targets = targets_of(RIGHT)
    assert "".join(targets) == text


@pytest.mark.parametrize(
    "solution, wanted",
    [
        ("28*4=112\n112-18=93\n93+80=173\n\\boxed{173}", [(20, "3", "4")]),  # wrong result 93 (units-first "390")
        ("28*4=112\n112-13=99\n99+80=179\n\\boxed{179}", [(16, "3", "8")]),  # wrong operand 13
        ("28*4=112\n113-18=95\n95+80=175\n\\boxed{175}", [(12, "3", "2")]),  # wrong value carried: 113 for 112
        ("28*4=112\n112-18=94\n94+80=174\n\\boxed{175}", [(43, "5", "4")]),  # wrong answer copy
        ("28*4=112\n112-18=94\n\\boxed{94}", [(24, "a", "4")]),  # a line too few: the next line was due
        ("28*4=112\n112-18=94\n94+80=174\n174+1=175\n\\boxed{175}", [(36, "4", "a")]),  # a line too many
    ],
)
def test_the_checker_target_differs_exactly_where_the_solution_is_wrong(solution, wanted):
    text, targets = targets_of(solution)
    assert wrong_positions(text, targets) == wanted


def test_a_line_whose_length_is_off_is_judged_at_its_first_difference_then_skipped():
    text, targets = targets_of("28*4=1120\n1120-18=1102\n1102+80=1182\n\\boxed{1182}")
    assert wrong_positions(text, targets) == [(8, "0", "2")]
    assert targets[9:13] == [None] * 4  # the rest of that line
    assert "".join(targets[13:]) == text[13:]  # later lines follow from what was written


def test_planted_errors_are_all_caught_by_the_targets():
    from tts_engine.tasks.arith.generator import make_problem_set
    from tts_engine.training.recompute import planted_solution

    rng = random.Random(0)
    for problem in make_problem_set(seed=11, per_level=4):
        for _ in range(5):
            solution = planted_solution(problem.problem, rng, structural_share=0.5)
            t = transcribe(solution)
            from tts_engine.training.recompute import check_targets

            assert wrong_positions(t.text, check_targets(problem.problem, t)), solution


def test_the_trainer_runs_serves_the_recompute_form_and_resumes(tmp_path):
    import json

    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.inputs.tiny import TinyModelConfig
    from tts_engine.training import checkpoint as ckpt
    from tts_engine.training.recompute import RecomputeConfig, train_recompute

    model, tok = ckpt.new_model(TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))
    ckpt.save_model(tmp_path / "init", model, tok, ckpt.task_prompt_config())
    config = RecomputeConfig(
        init_dir=str(tmp_path / "init"),
        out_dir=str(tmp_path / "run"),
        steps=2,
        gen_batch=2,
        own_problems=1,
        group_size=2,
        references=1,
        planted=2,
        max_new_tokens=8,
        eval_every=2,
        dev_per_level=1,
        threads=1,
    )
    train_recompute(config, progress=False, log=lambda _: None)
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and records[0]["check_loss"] > 0
    assert 0 <= records[-1]["dev_planted_rejected"] <= 1
    assert PromptConfig.load(tmp_path / "run").verify_form == "recompute"
    train_recompute(replace(config, steps=3), progress=False, log=lambda _: None)  # resumes at step 2
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3]


def test_the_check_loss_teaches_the_checkers_targets():
    """A few steps on one wrong solution: the right digit ends far more likely than the written wrong one."""
    import torch

    from tts_engine.inputs.tiny import TinyModelConfig
    from tts_engine.training import checkpoint as ckpt
    from tts_engine.training.recompute import check_example, check_loss

    torch.manual_seed(0)
    model, tok = ckpt.new_model(TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))
    prompt_config = replace(config(), template="{problem}\n")
    wrong = "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}"
    query, ids, targets, judged = check_example(tok, prompt_config, PROBLEM, wrong)
    at = judged.index(True)

    def written_and_wanted():
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([query + ids])).logits[0, len(query) + at - 1]
        logp = torch.log_softmax(logits, -1)
        return logp[ids[at]].item(), logp[targets[at]].item()

    before = written_and_wanted()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(60):
        loss, stats = check_loss(model, tok, prompt_config, [(PROBLEM, wrong)], judgment_weight=2.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    after = written_and_wanted()
    assert stats["wrong_tokens"] == 1
    assert after[1] - after[0] > 2.0 and after[1] - after[0] > before[1] - before[0] + 2.0
