"""The single-token baseline of the Tango comparison: a Yes/No verifier trained by SFT on outcome labels.

Same start (the SFT checkpoint), same kind of data (rollouts of the generator, labelled by the rule-based
outcome, class-balanced) and the same number of examples as the process verifier's warm-up + SFT steps;
only the output differs: one token ("Yes"/"No") after the unified verification prompt, judged as RL^V's
verifier is (tts_engine.verifiers.UnifiedVerifier).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.params import SamplingParams
from tts_engine.prompts import build_prompt

from . import checkpoint as ckpt
from .config import TrainConfig
from .rlv import verification_examples, verification_loss
from .tango_rewards import balanced_pick
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts


@dataclass
class UnifiedSFTConfig(TrainConfig):
    """SFT of a Yes/No verifier on a generator's rollouts."""

    out_dir: str = "runs/tango/unified"
    """Where the verifier is saved."""
    lr: float = 1e-3
    """Learning rate (AdamW)."""
    seed: int = 4
    init_dir: str = "runs/sft"
    """Checkpoint the verifier starts from."""
    generator_dir: str = "runs/sft"
    """Checkpoint whose rollouts are judged (kept fixed)."""
    steps: int = 140
    """Optimizer steps."""
    problems: int = 8
    """Problems per step."""
    rollouts: int = 4
    """Rollouts per problem."""
    pool: int = 1
    """Draw pool x rollouts per problem, then keep problems x rollouts, correct and incorrect half and half
    where possible (as TangoConfig.verifier_pool)."""
    max_new_tokens: int = 96
    """Longest rollout."""


def train_unified_sft(config: UnifiedSFTConfig, log=print) -> Path:
    torch.set_num_threads(config.threads)
    model, tokenizer, prompt_config = ckpt.load_model(config.init_dir)
    gen_backend = HFBackend(config.generator_dir, device="cpu", max_batch_rows=512)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    yes_id = tokenizer.convert_tokens_to_ids(prompt_config.yes_token)
    no_id = tokenizer.convert_tokens_to_ids(prompt_config.no_token)
    held_out = held_out_texts()
    stream = ProblemStream(config.seed, exclude=held_out)
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for step in range(config.steps):
        problems = stream.batch(config.problems)
        prompts = [build_prompt(prompt_config, p.problem) for p in problems]
        params = SamplingParams(
            n=config.rollouts * config.pool,
            temperature=1.0,
            max_new_tokens=config.max_new_tokens,
            seed=config.seed * 1_000_003 + step,
        )
        samples = gen_backend.generate(prompts, params)
        flat = [
            (p, prompt, s.text, solution_reward(p.answer, s.text))
            for p, prompt, row in zip(problems, prompts, samples)
            for s in row
        ]
        pick = balanced_pick(
            [r >= 0.5 for *_, r in flat], config.problems * config.rollouts, random.Random(config.seed * 131 + step)
        )
        chosen = [flat[k] for k in pick]
        examples = verification_examples(
            prompt_config,
            [c[0].problem for c in chosen],
            [c[1] for c in chosen],
            [[c[2]] for c in chosen],
            [[c[3]] for c in chosen],
        )
        model.train()
        loss, _ = verification_loss(model, tokenizer, examples, yes_id, no_id)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        with (out / "log.jsonl").open("a") as f:
            f.write(json.dumps({"step": step + 1, "loss": round(loss.item(), 4)}) + "\n")
    ckpt.save_model(out, model, tokenizer, prompt_config, config)
    log(f"unified verifier: {out}")
    return out


if __name__ == "__main__":  # the same as `tts train unified-sft`
    import sys

    from .cli import train

    train(["unified-sft", *sys.argv[1:]])
