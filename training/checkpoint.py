"""The tiny reasoner-verifier's files: HF weights + tokenizer + tts_engine.json, and the training state."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch

from tts_engine.inputs import models
from tts_engine.inputs.prompts import PromptConfig
from tts_engine.inputs.tiny import TinyModelConfig, build_char_tokenizer, build_tiny_model

from .device import to_cpu

TRAINING_STATE = "training_state.pt"
TRAINING_CONFIG = "training_config.json"


def task_prompt_config() -> PromptConfig:
    """Prompts of the arithmetic task: the plain template, no chat template (the tiny model has none)."""
    return PromptConfig(template="{problem}\n", use_chat_template=False, step_delimiter="\n")


def new_model(config: TinyModelConfig):
    """A fresh tokenizer and randomly initialised model."""
    tokenizer = build_char_tokenizer()
    return build_tiny_model(tokenizer, config), tokenizer


def load_model(path: str | Path):
    """Model, tokenizer and prompt config of a saved checkpoint (fp32, train mode, on the CPU)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r} (expected config.json there)")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    return model, tokenizer, PromptConfig.load(path)


def save_model(path: str | Path, model, tokenizer, prompt_config: PromptConfig, train_config=None) -> Path:
    """Weights (safetensors), tokenizer files and tts_engine.json: what the engine serves."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    prompt_config.save(path)
    if train_config is not None:
        (path / TRAINING_CONFIG).write_text(json.dumps(asdict(train_config), indent=2) + "\n")
    return path


def save_state(path: str | Path, optimizer, scheduler, step: int, extra: dict | None = None) -> None:
    """Optimizer, schedule, step and RNG state, so a run resumes where it stopped; the optimizer's tensors are
    saved on the CPU wherever the run computed, so the state resumes on any device."""
    state = {
        "optimizer": to_cpu(optimizer.state_dict()),
        "scheduler": scheduler.state_dict(),
        "step": step,
        "torch_rng": torch.get_rng_state(),
        "extra": extra or {},
    }
    torch.save(state, Path(path) / TRAINING_STATE)


def load_state(path: str | Path, optimizer, scheduler) -> tuple[int, dict]:
    """Restore what save_state wrote; returns (step, extra). The optimizer state goes to its parameters' device
    (`Optimizer.load_state_dict` moves it), so make the optimizer after the model is on its device."""
    state = torch.load(Path(path) / TRAINING_STATE, weights_only=False, map_location="cpu")
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    return int(state["step"]), state.get("extra", {})


def resumed_clock(extra: dict) -> float:
    """A start time such that `time.time() - start` counts the seconds of every earlier segment of the run too."""
    import time

    return time.time() - float(extra.get("elapsed_s", 0.0))


def has_state(path: str | Path) -> bool:
    return (Path(path) / TRAINING_STATE).is_file() and (Path(path) / "config.json").is_file()


def cosine_schedule(optimizer, total_steps: int, warmup_steps: int, min_ratio: float = 0.1):
    """Linear warm-up then cosine decay to `min_ratio` x the peak learning rate."""
    import math

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


SERVING_FILES = (*models.SERVING_FILES, "special_tokens_map.json", TRAINING_CONFIG)
"""What an export copies: the files the engine requires of a checkpoint, the tokenizer's optional map, and the
training settings that made it."""


EXPORT_DTYPES = ("float32", "float16", "bfloat16")


def export_serving(run_dir: str | Path, dest: str | Path, dtype: str = "float32") -> Path:
    """Copy what the engine serves (no optimizer state) from a training run to `dest`, replacing its files;
    `dtype` other than float32 stores the weights at that precision (half the size; the hf backend still
    computes in float32)."""
    import shutil

    run_dir, dest = Path(run_dir), Path(dest)
    if not (run_dir / "model.safetensors").is_file():
        raise FileNotFoundError(f"no model.safetensors in {str(run_dir)!r}")
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype must be one of {EXPORT_DTYPES}, got {dtype!r}")
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.iterdir():
        if old.is_file():
            old.unlink()
    for name in SERVING_FILES:
        if (run_dir / name).is_file():
            shutil.copy2(run_dir / name, dest / name)
    if dtype != "float32":
        from safetensors.torch import load_file, save_file

        weights = load_file(dest / "model.safetensors")
        save_file(
            {k: v.to(getattr(torch, dtype)) for k, v in weights.items()}, dest / "model.safetensors", {"format": "pt"}
        )
    return dest


def default_model_path() -> Path:
    """The checkpoint the engine serves when no model is given (tts_engine.inputs.models holds asset paths)."""
    from tts_engine.inputs.models import DEFAULT_MODEL

    return DEFAULT_MODEL
