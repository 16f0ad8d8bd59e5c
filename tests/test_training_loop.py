"""The shared training loop: every kept trainer, run a few micro steps through `tts train` and resumed, logs the
losses it logged before the trainers moved onto `training.loop` (same data order, seeds, schedule and loss), in
the log format `scripts/log_summary.py` reads."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tts_engine.cli import main

MICRO_MODEL = {
    "hidden_size": 32,
    "num_layers": 1,
    "num_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 256,
}
SELF_CHECK = ["--gen-batch", 2, "--own-problems", 1, "--group-size", 2, "--planted", 2, "--max-new-tokens", 8]
SELF_CHECK += ["--eval-every", 2, "--dev-per-level", 1, "--threads", 1]
PINNED = {
    "sft": {"loss": [4.6153, 4.5968, 4.6008, 4.6121]},
    "joint_resolve": {"gen_loss": [4.6088, 4.607, 4.5831], "check_loss": [4.6124, 4.5511, 4.604]},
    "joint_yes_no": {"gen_loss": [4.6088, 4.6076, 4.5849], "check_loss": [4.7081, 4.7071, 4.7019]},
    "recompute": {"gen_loss": [4.5864, 4.561, 4.5839], "check_loss": [4.5716, 4.5346, 4.558]},
}
"""Losses the trainers logged on these micro runs before the shared loop (rounded to 4 digits, as logged); the
check losses and Tango's verifier losses, which read freshly sampled solutions, as the on-device sampler (per-row
counter-based noise) draws them."""


def tts(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def logged(run) -> list[dict]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    """Three SFT steps from a fresh micro model, then resumed to four."""
    root = tmp_path_factory.mktemp("loop")
    config = root / "sft.json"
    settings = {"steps": 3, "batch_size": 4, "eval_every": 2, "dev_per_level": 1, "threads": 1, "model": MICRO_MODEL}
    config.write_text(json.dumps(settings))
    tts("train", "sft", "--config", config, "--out-dir", root / "sft", "--quiet")
    tts("train", "sft", "--config", config, "--out-dir", root / "sft", "--steps", 4, "--quiet")
    return root / "sft"


def test_sft_logs_the_pinned_losses_and_resumes_once(sft_run):
    records = logged(sft_run)
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert [r["loss"] for r in records] == pytest.approx(PINNED["sft"]["loss"], abs=1e-4)
    assert list(records[0]) == ["step", "loss", "lr", "elapsed_s"]  # the log format log_summary reads
    assert [("dev_pass_at_1" in r) for r in records] == [False, True, True, True]  # every 2nd step and each end


@pytest.mark.parametrize("trainer, extra", [("joint", ["--form", "resolve"]), ("joint", ["--form", "yes_no"]),
                                            ("recompute", ["--references", 1])])  # fmt: skip
def test_self_check_trainers_log_the_pinned_losses_and_resume(sft_run, tmp_path, trainer, extra):
    name = trainer if trainer == "recompute" else f"joint_{extra[1]}"
    run = tmp_path / name
    tts("train", trainer, "--init-dir", sft_run, *SELF_CHECK, *extra, "--steps", 2, "--out-dir", run, "--quiet")
    tts("train", trainer, "--init-dir", sft_run, *SELF_CHECK, *extra, "--steps", 3, "--out-dir", run, "--quiet")
    records = logged(run)
    assert [r["step"] for r in records] == [1, 2, 3]
    for key, values in PINNED[name].items():
        assert [r[key] for r in records] == pytest.approx(values, abs=1e-4), key
    assert list(records[0])[:3] == ["step", "gen_loss", "check_loss"] and list(records[0])[-2:] == ["lr", "elapsed_s"]


def test_tango_runs_through_the_shared_outer_loop(sft_run, tmp_path):
    """The SFT-baseline verifier's losses as before; checkpoints every 3rd step and at the end; resumed once."""
    micro = ["--init-dir", sft_run, "--prompts-per-step", 2, "--group-size", 2, "--verifier-problems", 2]
    micro += ["--verifier-rollouts", 2, "--verifier-group", 2, "--max-new-tokens", 12, "--verifier-max-new-tokens", 8]
    micro += ["--warmup-steps", 2, "--save-every", 3, "--threads", 1, "--no-process-rewards", "--verifier-mode", "sft"]
    tts("train", "tango", *micro, "--rl-steps", 3, "--out-dir", tmp_path, "--quiet")
    tts("train", "tango", *micro, "--rl-steps", 5, "--out-dir", tmp_path, "--quiet")
    records = logged(tmp_path)
    assert [r["step"] for r in records] == list(range(1, 8))
    losses = [r.get("verifier_sft_loss") for r in records]
    assert losses == [pytest.approx(4.6265, abs=1e-4), pytest.approx(4.6157, abs=1e-4), None, None, None,
                      pytest.approx(4.5913, abs=1e-4), None]  # fmt: skip
    assert (tmp_path / "generator" / "config.json").is_file() and (tmp_path / "verifier_warm").is_dir()
