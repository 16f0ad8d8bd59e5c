"""Every `tts train` subcommand end to end on a micro config (a 1-layer model, one or two steps)."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from tts_engine.cli import main

MICRO_MODEL = {
    "hidden_size": 32,
    "num_layers": 1,
    "num_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 256,
}


def tts(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    """An SFT run of two steps, its settings from a YAML file and one override."""
    root = tmp_path_factory.mktemp("train")
    config = root / "sft.yaml"
    config.write_text(
        f"steps: 2\nbatch_size: 2\neval_every: 2\ndev_per_level: 1\nthreads: 1\nmodel: {json.dumps(MICRO_MODEL)}\n"
    )
    out = root / "sft"
    tts("train", "sft", "--config", config, "--out", out, "--lr", "0.01", "--quiet")
    return out


def test_sft_writes_a_checkpoint_with_its_settings(sft_run):
    assert (sft_run / "config.json").is_file()
    logged = [json.loads(line) for line in (sft_run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == [1, 2] and "dev_pass_at_1" in logged[-1]
    saved = json.loads((sft_run / "training_config.json").read_text())
    assert saved["lr"] == 0.01 and saved["steps"] == 2 and saved["model"]["hidden_size"] == 32


def micro_sft(tmp_path, eval_every: int):
    """(the `tts train sft` arguments of a 3-step micro run in tmp_path, its out dir)."""
    config = tmp_path / "sft.yaml"
    config.write_text(
        f"steps: 3\nbatch_size: 2\neval_every: {eval_every}\ndev_per_level: 1\nthreads: 1\n"
        f"model: {json.dumps(MICRO_MODEL)}\n"
    )
    out = tmp_path / "sft"
    return ("train", "sft", "--config", config, "--out", out, "--quiet"), out


def test_stop_after_s_stops_with_a_checkpoint_and_a_rerun_finishes(tmp_path):
    args, out = micro_sft(tmp_path, eval_every=3)
    printed = tts(*args, "--stop-after-s", 1e-9)  # out of time after the first step
    assert "stopped at step 1 of 3" in printed
    steps = lambda: [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()]  # noqa: E731
    assert steps() == [1] and (out / "model.safetensors").is_file()  # checkpointed, though eval_every is 3
    assert torch.load(out / "training_state.pt", weights_only=False)["step"] == 1
    tts(*args)  # resumes at step 1, no limit
    assert steps() == [1, 2, 3]


def test_stop_at_step_ends_the_run_there_on_its_full_schedule_and_stays_there(tmp_path):
    args, out = micro_sft(tmp_path, eval_every=3)
    printed = tts(*args, "--stop-at-step", 2)
    assert "stopped at step 2 of 3 (stop_at_step)" in printed
    steps = lambda: [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()]  # noqa: E731
    state = lambda: torch.load(out / "training_state.pt", weights_only=False)  # noqa: E731
    assert steps() == [1, 2] and state()["step"] == 2  # checkpointed, though eval_every is 3
    lr_at_2 = state()["scheduler"]["last_epoch"]
    tts(*args, "--stop-at-step", 2)  # the same command again: already there, no step more
    assert steps() == [1, 2] and state()["scheduler"]["last_epoch"] == lr_at_2
    tts(*args)  # no stop: the schedule's last step
    assert steps() == [1, 2, 3]


def test_tango_one_warm_up_and_one_rl_step(sft_run, tmp_path):
    micro = [
        "--init-dir",
        sft_run,
        "--prompts-per-step",
        2,
        "--group-size",
        2,
        "--verifier-problems",
        1,
        "--verifier-rollouts",
        2,
        "--verifier-group",
        2,
        "--max-new-tokens",
        16,
        "--verifier-max-new-tokens",
        16,
        "--save-every",
        1,
        "--quiet",
    ]
    out = tts("train", "tango", "--out-dir", tmp_path / "tango", "--warmup-steps", 1, "--rl-steps", 1, *micro)
    assert "generator:" in out and (tmp_path / "tango" / "verifier").is_dir()
    phases = [json.loads(line)["phase"] for line in (tmp_path / "tango" / "log.jsonl").read_text().splitlines()]
    assert phases == ["warmup", "generator"]


def test_make_problems_and_export(sft_run, tmp_path):
    problems = tmp_path / "set.jsonl"
    tts("train", "make-problems", "--out", problems, "--per-level", 1)
    assert len(problems.read_text().splitlines()) == 8  # one per level of the bundled set (1-8)
    dest = tmp_path / "served"
    tts("train", "export", sft_run, "--to", dest)
    assert (dest / "config.json").is_file() and not list(dest.glob("*optim*"))
    half = tmp_path / "half"
    tts("train", "export", sft_run, "--to", half, "--dtype", "float16")
    weights = half / "model.safetensors"
    assert weights.stat().st_size < 0.6 * (dest / "model.safetensors").stat().st_size
    from tts_engine.backends.hf import HFBackend

    full, stored_half = HFBackend(str(dest), device="cpu").model, HFBackend(str(half), device="cpu").model
    assert next(stored_half.parameters()).dtype == torch.float32  # served in float32 whatever it is stored at
    ids = torch.tensor([[5, 6, 7, 8]])
    difference = (full(input_ids=ids).logits - stored_half(input_ids=ids).logits).abs().max().item()
    assert 0 < difference < 0.05  # rounded, not garbled


def test_joint_one_step_then_resume(sft_run, tmp_path):
    out = tmp_path / "joint"
    micro = [
        "--init",
        sft_run,
        "--out",
        out,
        "--gen-batch",
        2,
        "--own-problems",
        1,
        "--group-size",
        2,
        "--planted",
        2,
        "--eval-every",
        1,
        "--dev-per-level",
        1,
        "--max-new-tokens",
        16,
        "--quiet",
    ]
    tts("train", "joint", "--steps", 1, *micro)
    first = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert first["step"] == 1 and first["check_loss"] > 0 and "check_balanced" in first
    assert json.loads((out / "tts_engine.json").read_text())["verify_form"] in ("check", "resolve")  # the re-solve form
    tts("train", "joint", "--steps", 2, *micro)  # resumes at step 1
    assert [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()] == [1, 2]


def test_a_separate_checker_checks_a_frozen_generators_samples(sft_run, tmp_path):
    out = tmp_path / "checker"
    tts(
        "train",
        "joint",
        "--init",
        sft_run,
        "--out",
        out,
        "--gen-batch",
        0,
        "--sample-from",
        sft_run,
        "--own-problems",
        1,
        "--group-size",
        2,
        "--planted",
        2,
        "--steps",
        1,
        "--eval-every",
        1,
        "--dev-per-level",
        1,
        "--max-new-tokens",
        16,
        "--quiet",
    )
    record = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    assert record["gen_loss"] == 0.0 and record["check_loss"] > 0 and "check_balanced" in record


@pytest.mark.parametrize("retired", ["rlv", "tango-step-labels", "unified-sft", "evaluate"])
def test_retired_subcommands_are_gone(retired):
    result = CliRunner().invoke(main, ["train", retired, "--help"])
    assert result.exit_code != 0 and "No such command" in result.output


def test_a_run_killed_between_checkpoints_logs_each_step_once_after_resuming(tmp_path):
    args, out = micro_sft(tmp_path, eval_every=2)
    tts(*args, "--steps", 2)  # checkpoint at step 2
    with (out / "log.jsonl").open("a") as log:  # step 3 logged, then killed before its checkpoint
        log.write(json.dumps({"step": 3, "loss": 9.9}) + "\n" + '{"step": 4, "lo')  # and a line cut short
    tts(*args)  # resumes at step 2 and does step 3 again
    logged = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == [1, 2, 3] and logged[-1]["loss"] != 9.9
