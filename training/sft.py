"""Supervised fine-tuning on reference solutions: next-token loss on the solution (and end token) only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from tts_engine.inputs.prompts import build_prompt
from tts_engine.inputs.tiny import TinyModelConfig
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts

from . import checkpoint as ckpt
from .batching import completion_logprobs, pad_pairs
from .config import LoopConfig
from .loop import Steps, start_run, train
from .monitor import dev_pass_at_1


@dataclass
class SFTConfig(LoopConfig):
    """Supervised training of the tiny reasoner on the arithmetic task."""

    out_dir: str = "runs/sft"
    lr: float = 3e-3
    seed: int = 1
    threads: int = 2
    steps: int = 350
    eval_every: int = 70
    dev_per_level: int = 16
    batch_size: int = 32
    """Problems per step."""
    model: TinyModelConfig = field(
        default_factory=lambda: TinyModelConfig(intermediate_size=256, max_position_embeddings=256)
    )
    """Model size (used only when starting from scratch; config file only)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be >= 1, got {self.steps}, {self.batch_size}")


def sft_loss(model, tokenizer, prompts: list[str], solutions: list[str]) -> torch.Tensor:
    """Mean next-token cross-entropy over solution tokens + the end token."""
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    prompt_ids = [enc(p) for p in prompts]
    completion_ids = [enc(s) + [tokenizer.eos_token_id] for s in solutions]
    ids, mask, comp = pad_pairs(prompt_ids, completion_ids, tokenizer.pad_token_id)  # (B, T)
    logp = completion_logprobs(model, ids, mask)  # (B, T)
    comp = comp.to(logp.device)
    return -(logp * comp).sum() / comp.sum()


def train_sft(config: SFTConfig, progress: bool = True, log=print) -> Path:
    """Train (or resume) and return the checkpoint directory."""
    return train(*sft_steps(config), desc="sft", progress=progress, log=log)


def sft_steps(config: SFTConfig) -> Steps:
    """The run (started or resumed), its step and its dev checks."""
    run = start_run(config, lambda: (*ckpt.new_model(config.model), ckpt.task_prompt_config()))
    stream = ProblemStream(config.seed, config.level_tuple, config.level_weights, held_out_texts())
    for _ in range(run.step * config.batch_size):  # replay the stream to where the run stopped
        stream.next()

    def step():
        run.model.train()
        batch = stream.batch(config.batch_size)
        prompts = [build_prompt(run.prompt_config, p.problem) for p in batch]
        with run.placement.autocast():
            loss = sft_loss(run.model, run.tokenizer, prompts, [p.solution for p in batch])
        return loss, {"loss": round(loss.item(), 4)}, {"loss": f"{loss.item():.3f}"}

    def dev_checks() -> dict:
        pass_at_1 = dev_pass_at_1(run.model, run.tokenizer, run.prompt_config, config.dev_per_level, config.level_tuple)
        return {"dev_pass_at_1": pass_at_1}

    return run, step, dev_checks
