"""The project's answer rewards as functions that RL engines call: TRL reward functions (sync and async).

Rewards come from `tts_engine.answers.make_reward_fn`, the one definition of the reward:
- "rule": the final \\boxed{} answer checked against the reference (normalisation + math-verify);
- "hybrid": TinyV's "addon" mode: the rule first; where it cannot settle the pair (undecided, or unequal with a
  side in words), an LLM judge behind an OpenAI-compatible server (`vllm serve`, SGLang) decides whether it is
  a false negative (`tts_engine.answers.grade_answers` decides which pairs go to the judge);
- "judge": the judge alone.

TRL calls a reward function as `fn(prompts=..., completions=..., completion_ids=..., **dataset_columns)` and
wants one float per completion; the dataset must have an `answer` column (and `problem` for the judge's
question). This module imports neither TRL nor verl.
"""

from __future__ import annotations

import asyncio

from tts_engine.answers import LLMJudge, make_reward_fn
from tts_engine.answers.judge import TINYV_PROMPT

# What this module takes from the project's reward code, kept in one place.
REWARD_MODES = ("rule", "hybrid", "judge")


def openai_judge(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    max_new_tokens: int = 8,
    prompt_template: str = TINYV_PROMPT,
    timeout: float = 60.0,
    max_retries: int = 3,
    max_concurrency: int = 16,
) -> LLMJudge:
    """An LLM judge (TinyV's prompt and True/False reply) behind an OpenAI-compatible completions server."""
    from tts_engine.backends.openai import OpenAIBackend

    backend = OpenAIBackend(
        model=model,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        max_concurrency=max_concurrency,
    )
    return LLMJudge(backend, prompt_template=prompt_template, max_new_tokens=max_new_tokens, use_chat_template=False)


def _completion_text(completion) -> str:
    """A completion as text: TRL passes strings, or message lists for conversational data."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content") or "")
    raise TypeError(f"completion must be text or a list of messages, got {type(completion).__name__}")


def answer_reward(mode: str = "rule", judge=None, *, answer_column: str = "answer", question_column: str = "problem"):
    """A TRL reward function: 1.0 when a completion's final answer is equivalent to the row's answer, else 0.0.

    mode: "rule", "hybrid" (rule, then `judge` where the rule does not say equivalent) or "judge".
    judge: an object with judge(items) -> verdicts (e.g. `openai_judge(...)`); needed by hybrid and judge.
    """
    if mode not in REWARD_MODES:
        raise ValueError(f"mode must be one of {REWARD_MODES}, got {mode!r}")
    reward_fn = make_reward_fn(mode, judge)

    def reward(prompts=None, completions=None, **columns) -> list[float]:
        if answer_column not in columns:
            raise ValueError(
                f"the dataset needs an {answer_column!r} column with the reference answers "
                f"(columns passed: {sorted(k for k in columns if not k.startswith('log_'))})"
            )
        references = [str(a) for a in columns[answer_column]]
        questions = columns.get(question_column)
        return reward_fn.batch(
            references, [_completion_text(c) for c in completions], list(questions) if questions is not None else None
        )

    reward.__name__ = f"{mode}_reward"
    return reward


def async_answer_reward(mode: str = "rule", judge=None, **kwargs):
    """`answer_reward` as a coroutine function: TRL runs async reward functions concurrently (asyncio.gather),
    so a slow judge server does not hold up the other reward functions; the grading runs in a worker thread."""
    sync = answer_reward(mode, judge, **kwargs)

    async def reward(prompts=None, completions=None, **columns) -> list[float]:
        return await asyncio.to_thread(sync, prompts=prompts, completions=completions, **columns)

    reward.__name__ = f"{mode}_reward_async"
    return reward
