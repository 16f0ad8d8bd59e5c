"""Supervised fine-tuning on reference solutions: next-token loss on the solution (and end token) only."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tts_engine.prompts import build_prompt
from tts_engine.tiny import TinyModelConfig

from . import checkpoint as ckpt
from .batching import completion_logprobs, pad_pairs
from .config import TrainConfig
from .monitor import dev_pass_at_1
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts


@dataclass
class SFTConfig(TrainConfig):
    """Supervised training of the tiny reasoner on the arithmetic task."""

    out_dir: str = "runs/sft"
    lr: float = 3e-3
    seed: int = 1
    threads: int = 2
    steps: int = 350
    """Optimizer steps."""
    batch_size: int = 32
    """Problems per step."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    warmup_steps: int = 20
    """Linear warm-up before the cosine decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip."""
    level_weights: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0, 1.0, 1.0])
    """Sampling weight of levels 1..5."""
    model: TinyModelConfig = field(
        default_factory=lambda: TinyModelConfig(intermediate_size=256, max_position_embeddings=256)
    )
    """Model size (used only when starting from scratch; config file only)."""
    eval_every: int = 70
    """Steps between pass@1 checks on the dev set (and checkpoints)."""
    dev_per_level: int = 16
    """Dev problems per level in the periodic pass@1 check (4 samples each)."""

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
    return -(logp * comp).sum() / comp.sum()


def train_sft(config: SFTConfig, progress: bool = True, log=print) -> Path:
    """Train (or resume) and return the checkpoint directory."""
    torch.set_num_threads(config.threads)
    out = Path(config.out_dir)
    if ckpt.has_state(out):
        model, tokenizer, prompt_config = ckpt.load_model(out)
    else:
        model, tokenizer = ckpt.new_model(config.model)
        prompt_config = ckpt.task_prompt_config()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = ckpt.cosine_schedule(optimizer, config.steps, config.warmup_steps)
    step, extra = ckpt.load_state(out, optimizer, scheduler) if ckpt.has_state(out) else (0, {})
    held_out = held_out_texts()
    stream = ProblemStream(config.seed, level_weights=config.level_weights, exclude=held_out)
    for _ in range(step * config.batch_size):  # replay the stream to where the run stopped
        stream.next()
    bar = _bar(config.steps, step, progress)
    log_path = out / "log.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    start = ckpt.resumed_clock(extra)
    while step < config.steps:
        model.train()
        batch = stream.batch(config.batch_size)
        loss = sft_loss(
            model, tokenizer, [build_prompt(prompt_config, p.problem) for p in batch], [p.solution for p in batch]
        )
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}")
        record = {
            "step": step,
            "loss": round(loss.item(), 4),
            "lr": scheduler.get_last_lr()[0],
            "elapsed_s": round(time.time() - start, 1),
        }
        if step % config.eval_every == 0 or step == config.steps:
            record["dev_pass_at_1"] = dev_pass_at_1(model, tokenizer, prompt_config, per_level=config.dev_per_level)
            ckpt.save_model(out, model, tokenizer, prompt_config, config)
            ckpt.save_state(out, optimizer, scheduler, step, {"elapsed_s": record["elapsed_s"]})
            log(json.dumps(record))
        with log_path.open("a") as f:
            f.write(json.dumps(record) + "\n")
    bar.close()
    return out


def _bar(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="sft", dynamic_ncols=True)
