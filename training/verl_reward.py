"""verl's custom reward function: the project's rule reward, or TinyV's hybrid reward (rule, then an LLM judge).

verl loads it by path (`reward.custom_reward_function.path=.../verl_reward.py`, `name=compute_score`) and calls
`compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)` once per response;
`reward_kwargs` come from `reward.custom_reward_function.reward_kwargs` in the config. No verl import is needed
(verl 0.9 pins transformers < 5.11, so it is not installed beside this project; see docs/training-at-scale.md).

reward_kwargs:
  mode: "rule" (default), "hybrid" or "judge".
  judge_url, judge_model: the OpenAI-compatible server of the judge (hybrid, judge), e.g. http://127.0.0.1:8001/v1.
  judge_api_key: optional.
The question for the judge is `extra_info["question"]` (or "problem") when the data has it.
"""

from __future__ import annotations

import threading

from tts_engine.answers import make_reward_fn
from tts_engine.training.reward_functions import REWARD_MODES, openai_judge

_reward_fns: dict[tuple, object] = {}
_lock = threading.Lock()


def _reward_fn(mode: str, judge_url: str | None, judge_model: str | None, judge_api_key: str | None):
    """One reward function per setting, built once per worker process (the judge's verdict cache is kept)."""
    if mode not in REWARD_MODES:
        raise ValueError(f"mode must be one of {REWARD_MODES}, got {mode!r}")
    key = (mode, judge_url, judge_model, judge_api_key)
    with _lock:
        if key not in _reward_fns:
            judge = None
            if mode != "rule":
                if not judge_url or not judge_model:
                    raise ValueError(
                        f"mode={mode!r} needs judge_url and judge_model in reward.custom_reward_function.reward_kwargs"
                    )
                judge = openai_judge(judge_url, judge_model, api_key=judge_api_key)
            _reward_fns[key] = make_reward_fn(mode, judge)
        return _reward_fns[key]


def compute_score(
    data_source,
    solution_str,
    ground_truth,
    extra_info=None,
    *,
    mode: str = "rule",
    judge_url: str | None = None,
    judge_model: str | None = None,
    judge_api_key: str | None = None,
    **_ignored,
) -> float:
    """1.0 when the response's final answer is equivalent to `ground_truth`, else 0.0 (verl's score)."""
    info = extra_info if isinstance(extra_info, dict) else {}
    question = info.get("question") or info.get("problem")
    reward_fn = _reward_fn(mode, judge_url, judge_model, judge_api_key)
    return float(reward_fn(str(ground_truth), solution_str, question))


def verl_rows(
    problems: list[dict], *, data_source: str = "tts_engine", split: str = "train", system_prompt: str | None = None
) -> list[dict]:
    """verl's RL data rows (write them to parquet): chat prompt, reward_model.ground_truth, extra_info.question."""
    from tts_engine.inputs.prompts import DEFAULT_SYSTEM_PROMPT

    rows = []
    for i, p in enumerate(problems):
        question = p.get("problem") or p.get("question")
        if not question:
            raise ValueError(f"problem {i} has no 'problem' or 'question' text")
        rows.append(
            {
                "data_source": data_source,
                "prompt": [
                    {"role": "system", "content": system_prompt or DEFAULT_SYSTEM_PROMPT},
                    {"role": "user", "content": question},
                ],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": str(p.get("answer", ""))},
                "extra_info": {"split": split, "index": i, "question": question},
            }
        )
    return rows
