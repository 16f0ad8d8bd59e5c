"""The re-solve check of the arithmetic task, its planted errors and the joint trainer's targets."""

import random
from dataclasses import replace

import pytest

from tts_engine.inputs.tiny import build_char_tokenizer
from tts_engine.tasks.arith.chain import apply, problem_steps
from tts_engine.tasks.arith.generator import make_problem
from tts_engine.training.joint import check_targets, role_weights
from tts_engine.training.rederive import plant_error, resolve
from tts_engine.verifiers.process import parse_verification
from tts_engine.verifiers.steps import split_steps

PROBLEM = "Compute left to right: 28*4-18+80."
SOLUTION = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"


def test_planted_errors_are_wrong_and_caught():
    rng = random.Random(5)
    for k in range(300):
        problem = make_problem(rng, 1 + k % 5)
        solution = plant_error(problem.problem, rng)
        start, steps = problem_steps(problem.problem)
        value = start
        for op, operand in steps:
            value = apply(value, op, operand)
        assert solution != problem.solution and len(split_steps(solution)) == len(steps) + 1
        check = resolve(problem.problem, solution)
        assert any(check.disagrees), solution  # the re-solve differs from it where the error is
        assert check.verdict == (solution.split("\n")[-1] == f"\\boxed{{{value}}}")


def test_role_weights_balance_the_signs():
    roles = [["body", "mark+", "mark+", "mark+", "verdict+"], ["mark+", "mark-", "verdict-"]]
    weights = role_weights(roles, mark_weight=4.0, verdict_weight=2.0, wrong_line_weight=3.0)
    assert weights[0][0] == 1.0
    assert role_weights([["body-"]], 4.0, 2.0, wrong_line_weight=3.0) == [[3.0]]
    plus, minus = weights[0][1], weights[1][1]
    assert plus * 4 == pytest.approx(minus * 1)  # four "+" marks weigh as much as one "-" mark
    assert plus * 4 + minus == pytest.approx(4.0 * 5)
    assert weights[0][4] == weights[1][2] == pytest.approx(2.0)


def test_verification_examples_of_both_forms_share_the_solution_and_end_token():
    from tts_engine.training.checkpoint import task_prompt_config
    from tts_engine.training.joint import check_prompt_config, verification_example

    tokenizer = build_char_tokenizer()
    wrong = "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}"
    prompt_ids, target, roles = verification_example(
        tokenizer, check_prompt_config(task_prompt_config(), "yes_no"), PROBLEM, wrong, "yes_no"
    )
    text = tokenizer.decode(prompt_ids, skip_special_tokens=False)
    assert text == PROBLEM + "\n" + wrong + "<|endoftext|>Is this solution correct? Answer Yes or No.\n"
    assert tokenizer.decode(target) == "No" and roles == ["verdict-"]
    prompt_ids, target, roles = verification_example(
        tokenizer, check_prompt_config(task_prompt_config()), PROBLEM, SOLUTION
    )
    assert tokenizer.decode(prompt_ids, skip_special_tokens=False).endswith(
        "\\boxed{174}<|endoftext|>Solve it again and compare.\n" + PROBLEM + "\n"
    )
    assert tokenizer.decode(target, skip_special_tokens=True) == resolve(PROBLEM, SOLUTION).text


def test_resolve_solves_again_in_the_solutions_form_and_compares_the_answers():
    check = resolve(PROBLEM, SOLUTION)
    assert check.text == "28*4=112\n112-18=94\n94+80=174\nanswer 174 vs 174 +\nverdict:Yes"
    assert check.verdict and check.marks == (True,) and check.disagrees == (False,) * 4
    wrong = resolve(PROBLEM, "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}")
    assert wrong.text.split("\n")[1:] == ["112-18=94", "94+80=174", "answer 173 vs 174 -", "verdict:No"]
    assert not wrong.verdict and wrong.disagrees == (False, True, True, True)
    copied_wrong_answer = resolve(PROBLEM, SOLUTION.replace("{174}", "{175}"))
    assert copied_wrong_answer.disagrees == (False, False, False, True) and not copied_wrong_answer.verdict
    assert resolve(PROBLEM, "no idea").text.endswith("answer ? vs 174 -\nverdict:No")


def test_resolve_targets_weight_the_lines_after_the_first_difference():
    tokenizer = build_char_tokenizer()
    check = resolve(PROBLEM, "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}")
    ids, roles = check_targets(tokenizer, check)
    assert tokenizer.decode(ids, skip_special_tokens=True) == check.text
    assert [r for r in roles if not r.startswith("body")] == ["mark-", "verdict-"]
    wrong_part = "".join(tokenizer.decode([i]) for i, r in zip(ids, roles) if r == "body-")
    assert wrong_part == "112-18=9494+80=174answer 173 vs 174 "


def test_served_parser_reads_the_resolve_checks_single_mark():
    check = resolve(PROBLEM, "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}")
    parsed = parse_verification(check.text, 1)
    assert parsed.steps == [False] and parsed.final is False and parsed.status == "ok"


@pytest.mark.parametrize("form", ["resolve", "yes_no"])
def test_joint_trainer_runs_serves_its_form_and_resumes(tmp_path, form):
    import json

    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.inputs.tiny import TinyModelConfig
    from tts_engine.training import checkpoint as ckpt
    from tts_engine.training.joint import RESOLVE_SUFFIX, JointConfig, train_joint

    model, tok = ckpt.new_model(TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))
    ckpt.save_model(tmp_path / "init", model, tok, ckpt.task_prompt_config())
    config = JointConfig(
        init_dir=str(tmp_path / "init"),
        out_dir=str(tmp_path / "joint"),
        form=form,
        steps=2,
        gen_batch=2,
        own_problems=1,
        group_size=2,
        planted=2,
        max_new_tokens=8,
        eval_every=2,
        dev_per_level=1,
    )
    train_joint(config, progress=False, log=lambda _: None)
    records = [json.loads(line) for line in (tmp_path / "joint" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and records[0]["check_loss"] > 0
    assert 0 <= records[-1]["check_balanced"] <= 1
    served = PromptConfig.load(tmp_path / "joint")
    if form == "resolve":
        assert served.verify_form == "resolve" and served.check_suffix == RESOLVE_SUFFIX
    else:
        assert served.verify_form == "yes_no"
    train_joint(replace(config, steps=3), progress=False, log=lambda _: None)  # resumes at step 2
    records = [json.loads(line) for line in (tmp_path / "joint" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3]


def test_resolve_request_restates_the_problem_next_to_the_check():
    from tts_engine.training.checkpoint import task_prompt_config
    from tts_engine.training.joint import check_prompt_config, verification_example

    tokenizer = build_char_tokenizer()
    prompt_ids, target, _ = verification_example(
        tokenizer, check_prompt_config(task_prompt_config(), "resolve"), PROBLEM, SOLUTION, "resolve"
    )
    assert tokenizer.decode(prompt_ids, skip_special_tokens=False) == (
        PROBLEM + "\n" + SOLUTION + "<|endoftext|>Solve it again and compare.\n" + PROBLEM + "\n"
    )
    assert tokenizer.decode(target, skip_special_tokens=True) == resolve(PROBLEM, SOLUTION).text
