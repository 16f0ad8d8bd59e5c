"""The re-derivation check of the arithmetic task, its planted errors and the joint trainer's targets."""

import random
from dataclasses import replace

import pytest

from tts_engine.steps import split_steps
from tts_engine.tiny import build_char_tokenizer
from tts_engine.training.joint import check_targets, role_weights
from tts_engine.training.rederive import apply, plant_error, problem_steps, rederive, resolve
from tts_engine.tasks.arith.generator import make_problem
from tts_engine.verifiers.process import parse_verification

PROBLEM = "Compute left to right: 28*4-18+80."
SOLUTION = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"


def test_reference_solution_checks_out_in_a_form_it_does_not_contain():
    check = rederive(PROBLEM, SOLUTION)
    assert check.text.split("\n") == [
        "4*28=112 vs 112 +",
        "94+18=112 vs 112 +",
        "80+94=174 vs 174 +",
        "boxed 174 vs 174 +",
        "verdict:Yes",
    ]
    assert check.marks == (True, True, True, True) and check.verdict
    for line in check.text.split("\n")[:3]:  # the re-derivation never repeats a solution line
        assert line.split(" vs ")[0] not in SOLUTION


@pytest.mark.parametrize(
    "solution, bad_line",
    [
        ("28*4=112\n112-18=93\n93+80=173\n\\boxed{173}", 1),  # wrong result of a subtraction
        ("28*4=102\n102-18=84\n84+80=164\n\\boxed{164}", 0),  # wrong product
        ("28*4=112\n112-18=94\n94+80=175\n\\boxed{175}", 2),  # wrong sum
        ("28*4=112\n112-18=94\n95+80=175\n\\boxed{175}", 2),  # carried the wrong value into the step
        ("28*4=112\n112-19=93\n93+80=173\n\\boxed{173}", 1),  # used the wrong operand
        ("28*4=112\n112-18=94\n94+80=174\n\\boxed{175}", 3),  # copied the answer wrong
    ],
)
def test_the_first_wrong_step_is_marked(solution, bad_line):
    check = rederive(PROBLEM, solution)
    assert not check.verdict
    assert check.marks.index(False) == bad_line
    assert all(check.marks[:bad_line])


def test_unreadable_step_stops_the_check():
    check = rederive(PROBLEM, "28*4=112\nI do not know\n")
    assert check.text.split("\n") == ["4*28=112 vs 112 +", "? -", "verdict:No"]
    assert rederive(PROBLEM, "28*4=112\n112-18=94\n94+80=174").text.endswith("boxed ? -\nverdict:No")


def test_planted_errors_are_wrong_and_caught():
    rng = random.Random(5)
    for k in range(300):
        problem = make_problem(rng, 1 + k % 5)
        solution = plant_error(problem.problem, rng)
        start, steps = problem_steps(problem.problem)
        value = start
        for op, operand in steps:
            value = apply(value, op, operand)
        lines = solution.split("\n")
        wrong_answer = lines[-1] != f"\\boxed{{{value}}}"
        check = rederive(problem.problem, solution)
        assert not check.verdict, solution
        assert wrong_answer or "-" in "".join(lines[:-1])  # an error that leaves the answer right is in a line
        assert len(check.marks) == len(split_steps(solution))


def test_served_parser_reads_the_check_one_mark_per_step():
    check = rederive(PROBLEM, "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}")
    parsed = parse_verification(check.text, len(split_steps(SOLUTION)))
    assert parsed.status == "ok"
    assert parsed.steps == [True, False, True, True] and parsed.final is False
    assert parsed.first_error == 1
    assert [check.text[o] for o in parsed.mark_offsets] == ["+", "-", "+", "+"]


def test_check_targets_tag_marks_and_verdict():
    tokenizer = build_char_tokenizer()
    check = rederive(PROBLEM, "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}")
    text = check.text
    ids, roles = check_targets(tokenizer, check)
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert ids[-1] == tokenizer.eos_token_id
    assert [r for r in roles if not r.startswith("body")] == ["mark+", "mark-", "mark+", "mark+", "verdict-"]
    wrong_line = text.split("\n")[1]  # the check of 112-18=93: "93+18=111 vs 112 -"
    assert "".join(tokenizer.decode([i]) for i, r in zip(ids, roles) if r == "body-") == wrong_line[:-1]
    assert tokenizer.decode([ids[roles.index("verdict-")]]) == "No"


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
        "\\boxed{174}<|endoftext|>Check each step.\n"
    )
    assert tokenizer.decode(target, skip_special_tokens=True) == rederive(PROBLEM, SOLUTION).text


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

    from tts_engine.prompts import PromptConfig
    from tts_engine.tiny import TinyModelConfig
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


def test_a_models_recomputations_decide_the_marks():
    wrong_product = rederive(PROBLEM, SOLUTION, derived=[102, 112, 174])  # the model got 28*4 wrong
    assert wrong_product.text.split("\n")[0] == "4*28=102 vs 112 -"
    assert wrong_product.marks == (False, True, True, True) and not wrong_product.verdict
    unread = rederive(PROBLEM, SOLUTION, derived=[112, None, 174])
    assert unread.text.split("\n")[1] == "94+18=? vs 112 -"
    assert rederive(PROBLEM, SOLUTION, derived=[112, 112, 174]).text == rederive(PROBLEM, SOLUTION).text
    with pytest.raises(ValueError, match="one derived value per read step"):
        rederive(PROBLEM, SOLUTION, derived=[112])


def test_recompute_queries_ask_each_re_derivation_as_the_next_line_the_problem_calls_for():
    from tts_engine.training.rederive import read_solution

    queries = read_solution(PROBLEM, SOLUTION).recompute_queries(PROBLEM)
    assert queries == [
        (PROBLEM, "28*4="),
        ("Compute left to right: 28*4-18+18+80.", "28*4=112\n112-18=94\n94+18="),  # the inverse of the subtraction
        (PROBLEM, "28*4=112\n112-18=94\n94+80="),
    ]
    assert read_solution(PROBLEM, "28*4=112\nI do not know\n").recompute_queries(PROBLEM) == [(PROBLEM, "28*4=")]


def test_recomputed_checks_carry_the_models_values():
    from types import SimpleNamespace

    from tts_engine.prompts import PromptConfig
    from tts_engine.training.tango_rederive import recomputed_checks

    class Backend:  # answers each query with a value of its own: 28*4 wrong, the rest right
        answers = {"28*4=": "102\n", "94+18=": "112\n", "94+80=": "174\n"}

        def generate(self, prompts, params):
            assert params.temperature == 0.0 and params.stop == ["\n"]
            return [[SimpleNamespace(text=self.answers[p.rsplit("\n", 1)[-1]])] for p in prompts]

    config = PromptConfig(use_chat_template=False)
    bad_answer = SOLUTION.replace("{174}", "{175}")
    checks = recomputed_checks(Backend(), config, [PROBLEM, PROBLEM], [SOLUTION, bad_answer])
    assert checks[0].marks == (False, True, True, True)
    assert checks[1].marks == (False, True, True, False)


def test_with_verdict_relabels_only_the_verdict():
    from tts_engine.training.rederive import with_verdict

    check = rederive(PROBLEM, SOLUTION)
    relabelled = with_verdict(check, False)
    assert relabelled.text.split("\n")[:-1] == check.text.split("\n")[:-1]
    assert relabelled.text.endswith("verdict:No") and not relabelled.verdict and relabelled.marks == check.marks
    assert with_verdict(check, True) == check


def test_problem_text_inverts_problem_steps():
    from tts_engine.training.rederive import problem_text

    assert problem_text(*problem_steps(PROBLEM)) == PROBLEM
