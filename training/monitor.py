"""Cheap progress checks during training: pass@1 per level on a dev set drawn apart from the evaluation set."""

from __future__ import annotations

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import build_prompt
from tts_engine.params import SamplingParams
from tts_engine.tasks.arith.generator import LEVELS, make_problem_set, solution_budget

from .device import model_device

DEV_SEED = 777


def dev_pass_at_1(
    model, tokenizer, prompt_config, per_level: int = 16, levels=LEVELS, n: int = 4, max_new_tokens: int | None = None
) -> dict[str, float]:
    """pass@1 at temperature 1 per level (and overall) on a fixed dev set of `levels`; leaves the model in train
    mode. `max_new_tokens` defaults to the longest solution of the levels (`solution_budget`). Samples on the
    model's device."""
    problems = make_problem_set(DEV_SEED, levels, per_level)
    max_new_tokens = max_new_tokens or solution_budget(levels)
    backend = HFBackend(model, tokenizer, device=str(model_device(model)))
    prompts = [build_prompt(prompt_config, p.problem) for p in problems]
    outs = backend.generate(prompts, SamplingParams(n=n, temperature=1.0, max_new_tokens=max_new_tokens, seed=0))
    model.train()
    by_level: dict[str, list[float]] = {}
    for p, samples in zip(problems, outs):
        by_level.setdefault(f"L{p.level}", []).extend(solution_reward(p.answer, s.text) for s in samples)
    result = {k: round(sum(v) / len(v), 3) for k, v in by_level.items()}
    result["all"] = round(sum(result[f"L{l}"] for l in levels) / len(levels), 3)
    return result
