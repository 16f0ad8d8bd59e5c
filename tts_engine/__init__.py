"""tts-engine: test-time scaling inference for reasoning models, with verifiers.

from tts_engine import Engine, load_problems, weighted_vote
"""

from __future__ import annotations

from .inputs.problems import Problem, load_problems
from .params import SamplingParams
from .pipeline.aggregate import Vote, best_of_n, majority_vote, vote_batch, vote_classes, weighted_vote

__version__ = "0.1.0"

_LAZY = {
    "Engine": ("tts_engine.engine", "Engine"),
    "extract_answer": ("tts_engine.answers", "extract_answer"),
    "group_answers": ("tts_engine.answers", "group_answers"),
    "is_equivalent": ("tts_engine.answers", "is_equivalent"),
    "grade_answers": ("tts_engine.answers", "grade_answers"),
}


def __getattr__(name: str):
    """Heavier parts (engine, answer checking) load on first use, keeping `import tts_engine` light."""
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tts_engine' has no attribute {name!r}")


__all__ = [
    "Engine",
    "Problem",
    "SamplingParams",
    "Vote",
    "best_of_n",
    "extract_answer",
    "grade_answers",
    "group_answers",
    "is_equivalent",
    "load_problems",
    "majority_vote",
    "vote_batch",
    "vote_classes",
    "weighted_vote",
]
