"""The `device` and `amp` settings of every trainer: parsing and validation, "auto" on a machine without CUDA,
autocast only on CUDA, checkpoints that hold CPU tensors and resume on any device, and a CPU path that computes
exactly what it computed before the setting existed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from tts_engine.settings import build
from tts_engine.training import checkpoint as ckpt
from tts_engine.training.cli import train as train_group
from tts_engine.training.device import CPU, Placement, check_device, resolve_device, to_cpu
from tts_engine.training.joint import JointConfig
from tts_engine.training.loop import train_step
from tts_engine.training.recompute import RecomputeConfig
from tts_engine.training.sft import SFTConfig, sft_steps
from tts_engine.training.tango.trainer import TangoConfig

REPO = Path(__file__).resolve().parents[1]
MICRO = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64, "max_position_embeddings": 256}
CONFIGS = (SFTConfig, JointConfig, RecomputeConfig, TangoConfig)


def micro_sft(out: Path, **given) -> SFTConfig:
    settings = {"out_dir": str(out), "steps": 4, "batch_size": 4, "dev_per_level": 1, "threads": 1, "model": MICRO}
    return build(SFTConfig, settings | given)


def no_cuda(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def fake_cuda(monkeypatch, count: int = 1, bf16: bool = True) -> None:
    """torch reports `count` CUDA devices (nothing is put on them: these tests only resolve settings)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)


# --- the setting ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("config_cls", CONFIGS)
def test_every_trainer_has_the_device_and_amp_settings_defaulting_to_auto_and_on(config_cls):
    config = config_cls()
    assert (config.device, config.amp) == ("auto", True)


@pytest.mark.parametrize("value", ["auto", "cpu", "cuda", "cuda:0", "cuda:3"])
def test_device_forms_parse_without_probing_a_device(value, monkeypatch):
    no_cuda(monkeypatch)  # "cuda" is only resolved when a run starts
    assert build(SFTConfig, {"device": value}).device == value == check_device(value)


@pytest.mark.parametrize("value", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "mps", ""])
def test_a_bad_device_is_an_error_that_names_the_option(value):
    with pytest.raises(ValueError, match=r"invalid value for --device: device must be \"auto\", \"cpu\", \"cuda\""):
        build(RecomputeConfig, {"device": value})


def test_the_command_line_takes_the_device_from_the_one_override_path(tmp_path):
    bad = CliRunner().invoke(train_group, ["sft", "--device=gpu", "--out-dir", str(tmp_path / "x"), "--quiet"])
    assert bad.exit_code != 0
    lines = [line for line in bad.output.splitlines() if line.strip()]
    assert lines == ['Error: invalid value for --device: device must be "auto", "cpu", "cuda" or "cuda:N", got \'gpu\'']
    assert not (tmp_path / "x").exists()  # nothing started
    help_text = CliRunner().invoke(train_group, ["tango", "--help"]).output
    assert "--device" in help_text and "--amp / --no-amp" in help_text
    config_file = tmp_path / "c.json"
    config_file.write_text(json.dumps({"device": "cpu", "amp": False}))
    config = build(TangoConfig, {"device": "cuda:1"}, config_file=config_file)  # defaults < file < options
    assert (config.device, config.amp) == ("cuda:1", False)


# --- resolving it -----------------------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_auto_resolves_to_the_cpu_on_this_machine():
    assert resolve_device("auto") == torch.device("cpu")
    assert Placement.of(SFTConfig()) == CPU


def test_auto_is_cuda_when_torch_sees_one_and_cpu_when_not(monkeypatch):
    no_cuda(monkeypatch)
    assert resolve_device("auto").type == "cpu"
    fake_cuda(monkeypatch)
    assert resolve_device("auto").type == "cuda" and resolve_device("cpu").type == "cpu"


def test_a_cuda_device_that_is_not_there_says_what_to_use_instead(monkeypatch):
    no_cuda(monkeypatch)
    with pytest.raises(ValueError, match=r"device 'cuda'.*no CUDA device.*--device=auto or --device=cpu"):
        resolve_device("cuda")
    fake_cuda(monkeypatch, count=2)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ValueError, match=r"device 'cuda:2': torch sees 2 CUDA device\(s\)"):
        resolve_device("cuda:2")


def test_a_trainer_asked_for_a_missing_cuda_fails_before_it_loads_or_writes_anything(tmp_path, monkeypatch):
    no_cuda(monkeypatch)
    result = CliRunner().invoke(
        train_group, ["recompute", "--device", "cuda", "--init-dir", str(tmp_path / "none"), "--out-dir", str(tmp_path)]
    )
    assert result.exit_code != 0 and "Error: device 'cuda'" in result.output
    assert list(tmp_path.iterdir()) == []


# --- autocast ---------------------------------------------------------------------------------------------
def test_autocast_is_off_on_the_cpu_whatever_amp_says():
    for amp in (True, False):
        placement = Placement.of(SFTConfig(device="cpu", amp=amp))
        assert placement == CPU and not placement.amp
        with placement.autocast():
            assert not torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled("cuda")


def test_autocast_is_bf16_on_cuda_unless_turned_off_or_unsupported(monkeypatch):
    fake_cuda(monkeypatch)
    assert Placement.of(SFTConfig(device="cuda")).amp
    assert not Placement.of(SFTConfig(device="cuda", amp=False)).amp
    fake_cuda(monkeypatch, bf16=False)
    assert not Placement.of(SFTConfig(device="cuda")).amp


# --- checkpoints ------------------------------------------------------------------------------------------
def test_to_cpu_keeps_cpu_tensors_and_the_structure():
    weights = torch.ones(3)
    state = {
        "state": {0: {"exp_avg": weights, "step": torch.tensor(2.0)}},
        "param_groups": [{"lr": 0.1, "params": [0]}],
    }
    moved = to_cpu(state)
    assert moved["param_groups"] == state["param_groups"] and moved is not state
    assert moved["state"][0]["exp_avg"] is weights  # a CPU tensor is not copied
    assert moved["state"][0]["step"] is state["state"][0]["step"]


def losses_of(run, step, count: int) -> list[float]:
    return [train_step(run, step)[0]["loss"] for _ in range(count)]


def save(run) -> None:
    """What the loop saves at a checkpoint."""
    ckpt.save_model(run.out, run.model, run.tokenizer, run.prompt_config, run.config)
    ckpt.save_state(run.out, run.optimizer, run.scheduler, run.step)


def test_a_checkpoint_saved_through_the_device_path_resumes_exactly(tmp_path):
    """CPU -> CPU through the device path: two steps on device="cpu", saved, resumed with device="auto" for two
    more, give the losses of four steps in one go; the saved optimizer state holds CPU tensors."""
    straight = losses_of(*sft_steps(micro_sft(tmp_path / "straight"))[:2], 4)
    run, step, _ = sft_steps(micro_sft(tmp_path / "split", device="cpu"))
    first = losses_of(run, step, 2)
    save(run)
    state = torch.load(tmp_path / "split" / ckpt.TRAINING_STATE, weights_only=False)
    tensors = [v for s in state["optimizer"]["state"].values() for v in s.values() if isinstance(v, torch.Tensor)]
    assert tensors and all(t.device.type == "cpu" for t in tensors)
    resumed, step, _ = sft_steps(micro_sft(tmp_path / "split", device="auto"))
    assert resumed.step == 2 and resumed.placement.device.type == "cpu"
    assert first + losses_of(resumed, step, 2) == straight


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_checkpoint_moves_between_cuda_and_the_cpu(tmp_path):
    """Written on CUDA, resumed on the CPU, and the other way round: every run continues (the losses agree to
    autocast's precision with a CPU run of the same steps)."""
    cpu_losses = losses_of(*sft_steps(micro_sft(tmp_path / "cpu", device="cpu"))[:2], 4)
    for first, second, name in (("cuda", "cpu", "gpu_then_cpu"), ("cpu", "cuda", "cpu_then_gpu")):
        run, step, _ = sft_steps(micro_sft(tmp_path / name, device=first))
        losses = losses_of(run, step, 2)
        save(run)
        resumed, step, _ = sft_steps(micro_sft(tmp_path / name, device=second))
        assert resumed.step == 2 and resumed.placement.device.type == second
        assert next(resumed.model.parameters()).device.type == second
        losses += losses_of(resumed, step, 2)
        assert losses == pytest.approx(cpu_losses, rel=0.05), name


# --- the CPU path -----------------------------------------------------------------------------------------
def test_the_device_aware_loop_on_auto_computes_what_explicit_cpu_computes(tmp_path):
    """Same seed, same steps: "auto" (the CPU here) and "cpu" log the same losses and dev checks, as the CLI runs
    them (the micro SFT run the loop tests pin)."""
    logs = {}
    for device in ("cpu", "auto"):
        out = tmp_path / device
        config = tmp_path / f"{device}.json"
        settings = {"steps": 3, "batch_size": 4, "eval_every": 2, "dev_per_level": 1, "threads": 1, "model": MICRO}
        config.write_text(json.dumps(settings))
        result = CliRunner().invoke(
            train_group, ["sft", "--config", str(config), f"--device={device}", "--out-dir", str(out), "--quiet"]
        )
        assert result.exit_code == 0, result.output
        lines = (out / "log.jsonl").read_text().splitlines()
        logs[device] = [{k: v for k, v in json.loads(line).items() if k != "elapsed_s"} for line in lines]
    assert logs["cpu"] == logs["auto"]
    assert [r["loss"] for r in logs["cpu"]] == pytest.approx([4.6153, 4.5968, 4.6008], abs=1e-4)
    assert "dev_pass_at_1" in logs["cpu"][-1]


def test_a_tango_role_samples_on_its_placement(tmp_path):
    from tts_engine.inputs.tiny import TinyModelConfig, save_tiny_checkpoint
    from tts_engine.training.tango.trainer import Role

    source = save_tiny_checkpoint(tmp_path / "m", TinyModelConfig(**MICRO))
    role = Role(Path(source), tmp_path / "out", 1e-3, CPU)
    assert role.backend.device == torch.device("cpu") and role.placement == CPU
    assert next(role.model.parameters()).device.type == "cpu"


# --- the benchmark ----------------------------------------------------------------------------------------
def test_bench_train_times_a_recipe_and_writes_its_figures(tmp_path):
    out = tmp_path / "bench.json"
    command = [sys.executable, "-P", str(REPO / "scripts" / "bench_train.py"), "--recipes", "sft", "--tiny"]
    command += ["--steps", "2", "--warmup", "1", "--device", "cpu", "--threads", "1", "--json", str(out)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = json.loads(out.read_text())["results"]
    assert (result["recipe"], result["device"], result["amp"], result["steps"]) == ("sft", "cpu", False, 2)
    assert result["steps_per_s"] > 0 and result["trained_tokens"] > 0 and result["tokens_per_s"] > 0
    assert "steps/s" in done.stdout and "tokens/s" in done.stdout


def test_bench_train_rejects_an_unknown_recipe():
    command = [sys.executable, "-P", str(REPO / "scripts" / "bench_train.py"), "--recipes", "sft,rlv"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--recipes must name some of sft, recompute, tango" in done.stderr
