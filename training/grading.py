"""The training reward, kept importable here: the one definition is tts_engine.answers.rewards."""

from __future__ import annotations

from tts_engine.answers.rewards import solution_reward


def reward(text: str, reference: str) -> float:
    """solution_reward(reference, text): 1.0 when the solution's final answer matches `reference`, else 0.0."""
    return solution_reward(reference, text)
