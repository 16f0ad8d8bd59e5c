"""Tango with the units-first recompute verifier: its losses, its sampled verdicts, its process rewards, its table."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from tts_engine.training.tango.recompute import line_queries, outcome_bce

PROBLEM = "Compute left to right: 28*4-18+80."
RIGHT = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"
WRONG = "28*4=112\n112-18=93\n93+80=173\n\\boxed{173}"  # the second step is wrong, the rest follows from it


def test_each_line_is_written_after_the_solutions_earlier_lines():
    assert line_queries("Q\n", ["a\n", "b\n", "c\n"]) == ["Q\n", "Q\na\n", "Q\na\nb\n"]


def test_a_verification_says_yes_only_when_it_wrote_every_line_as_the_solution_did():
    from tts_engine.training.tango.recompute import sampled_verdicts

    line = lambda text: SimpleNamespace(text=text)  # noqa: E731
    lines = [[line("820*400=211"), line("820*400=211")], [line("211-810=490"), line("211-810=390")]]  # (lines, V)
    assert sampled_verdicts(["820*400=211\n", "211-810=390\n"], lines) == [False, True]
    assert sampled_verdicts(["820*400=211\n", "211-810=490\n"], lines) == [True, False]


def test_the_sft_baseline_is_the_verdicts_cross_entropy_against_the_outcome():
    sure, unsure = torch.tensor([-1e-4]), torch.tensor([-5.0])
    one = torch.tensor([1.0])
    assert outcome_bce(sure, one, [True]).item() == pytest.approx(1e-4, rel=1e-2)  # right and accepted: ~0
    assert outcome_bce(unsure, one, [True]).item() == pytest.approx(5.0)  # right and rejected: -log P
    assert outcome_bce(unsure, one, [False]).item() == pytest.approx(-math.log(1 - math.exp(-5.0)))
    assert outcome_bce(sure, one, [False]).item() > 9  # wrong and accepted
    # class-balanced: one right and three wrong ones weigh as much as each other; per token of the transcript
    both = outcome_bce(torch.tensor([-5.0, -1e-4, -1e-4, -1e-4]), torch.tensor([10.0, 1, 1, 1]), [True] + [False] * 3)
    assert both.item() == pytest.approx(0.5 * 0.5 + 0.5 * -math.log(1 - math.exp(-1e-4)), rel=1e-3)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, default_model_dir):
    """A trainer whose two models start from the embedded default (which already recomputes units digit first)."""
    from tts_engine.training.tango.recompute import RecomputeTangoTrainer
    from tts_engine.training.tango.trainer import TangoConfig

    root = tmp_path_factory.mktemp("tango_recompute")
    micro = dict(prompts_per_step=2, group_size=2, verifier_problems=2, verifier_rollouts=2, verifier_group=4)
    config = TangoConfig(
        init_dir=default_model_dir, out_dir=str(root / "run"), verifier_form="recompute", max_new_tokens=96, **micro
    )
    return RecomputeTangoTrainer(config)


def batch_of(trainer, solutions, truth):
    from tts_engine.backends.base import Sample
    from tts_engine.inputs.prompts import build_prompt
    from tts_engine.training.tango.trainer import VerifierBatch

    prompt = build_prompt(trainer.gen.prompt_config, PROBLEM)
    vprompts = trainer.verify_prompts([SimpleNamespace(problem=PROBLEM)], [prompt], [solutions])
    samples = [Sample(text=s, token_ids=[], finish_reason="stop") for s in solutions]
    return VerifierBatch(vprompts, [PROBLEM] * len(solutions), samples, truth, torch.tensor([truth], dtype=float))


@pytest.mark.weights
def test_sampled_verifications_write_each_line_after_the_solutions_own(trainer):
    checked = trainer.sampled_verifications(batch_of(trainer, [RIGHT, WRONG], [True, False]))
    assert [k for k, *_ in checked] == [0, 1]
    _, queries, pieces, lines = checked[1]
    assert pieces == ["820*400=211\n", "211-810=390\n", "390+080=371\n", "answer 371\n"]
    assert queries[2].endswith("Check units first.\n820*400-810+080\n820*400=211\n211-810=390\n")
    assert len(lines) == 4 and all(len(row) == 4 for row in lines)  # (lines, V)
    # the default recomputes 112-18 as 94 ("490"), never the written 93: every sampled verdict on it is "No"
    assert not any(sample.text.strip() == pieces[1].strip() for sample in lines[1])
    assert all(sample.text.strip() == pieces[0].strip() for sample in lines[0])


@pytest.mark.weights
def test_process_rewards_read_each_lines_probability(trainer):
    from tts_engine.inputs.prompts import build_prompt

    prompt = build_prompt(trainer.gen.prompt_config, PROBLEM)
    rollouts = [[SimpleNamespace(text=t) for t in (RIGHT, WRONG, "28*4=112")]]
    right, wrong, no_answer = trainer.parsed_verdicts([SimpleNamespace(problem=PROBLEM)], [prompt], rollouts)
    assert (right.steps, right.final, right.status) == ([True] * 4, True, "ok")
    assert (wrong.steps, wrong.final) == ([True, False, True, True], False)  # the later lines follow from 93
    assert no_answer.steps is None and no_answer.final is False


@pytest.mark.weights
def test_a_micro_run_trains_serves_and_resumes(tmp_path, default_model_dir):
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.training.tango import train_tango
    from tts_engine.training.tango.recompute import RecomputeTangoTrainer
    from tts_engine.training.tango.trainer import TangoConfig

    micro = dict(prompts_per_step=2, group_size=2, verifier_problems=2, verifier_rollouts=2, verifier_group=2)
    config = TangoConfig(
        init_dir=default_model_dir,
        out_dir=str(tmp_path),
        verifier_form="recompute",
        warmup_steps=1,
        rl_steps=4,
        verifier_mode="sft",
        max_new_tokens=96,
        **micro,
    )
    train_tango(config, progress=False, log=lambda _: None)
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["phase"] for r in records] == ["warmup", "generator", "generator", "generator", "verifier"]
    assert records[0]["verifier_sft_loss"] < 0.1  # the default already writes the transcripts of its right solutions
    assert "verifier_sft_loss" in records[-1]  # the SFT baseline's step: the outcome cross-entropy
    assert PromptConfig.load(tmp_path / "verifier").verify_form == "recompute"
    assert PromptConfig.load(tmp_path / "verifier_warm").verify_form == "recompute"
    resumed = RecomputeTangoTrainer(TangoConfig(**{**config.__dict__, "rl_steps": 8}))
    assert resumed.step_count == 5


@pytest.mark.weights
def test_the_table_reads_a_recompute_verifier_as_a_process_verifier(default_model_dir):
    from tts_engine.backends.hf import HFBackend
    from tts_engine.eval.process_eval import RecomputeAsProcess
    from tts_engine.inputs.prompts import PromptConfig, build_prompt
    from tts_engine.tasks.arith.recompute import RecomputeVerifier

    config = PromptConfig.load(default_model_dir)
    verifier = RecomputeAsProcess(RecomputeVerifier(HFBackend(default_model_dir, device="cpu"), config))
    [[right, wrong]] = verifier.score([PROBLEM], [build_prompt(config, PROBLEM)], [[RIGHT, WRONG]])
    assert right.scores["process_final"] > 0.5 > wrong.scores["process_final"]
    assert wrong.scores["process_min"] == pytest.approx(min(wrong.step_scores))
    assert wrong.scores["process_prod"] == pytest.approx(wrong.scores["process_final"], rel=1e-4)
    assert (right.first_error, wrong.first_error) == (-1, 1)


@pytest.mark.weights
def test_the_rl_step_updates_the_verifier_on_groups_whose_verdicts_differ(tmp_path, monkeypatch, default_model_dir):
    from tts_engine.training.tango.recompute import RecomputeTangoTrainer
    from tts_engine.training.tango.trainer import TangoConfig

    micro = dict(prompts_per_step=2, group_size=2, verifier_problems=2, verifier_rollouts=2, verifier_group=16)
    config = TangoConfig(
        init_dir=default_model_dir, out_dir=str(tmp_path), verifier_form="recompute", temperature=1.3, **micro
    )
    trainer = RecomputeTangoTrainer(config)
    monkeypatch.setattr(trainer, "verifier_batch", lambda: batch_of(trainer, [RIGHT, WRONG], [True, False]))
    before = [p.detach().clone() for p in trainer.ver.model.parameters()]
    stats = trainer.verifier_step()
    # at temperature 1.3 about half of the right solution's 16 verifications write some line otherwise
    assert 0 < stats["verifier_reward"] < 1 and "verifier_pg_loss" in stats
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.ver.model.parameters()))
