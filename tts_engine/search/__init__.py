"""Step-level search guided by a process scorer: beam search and DVTS (docs/search.md).

from tts_engine.search import SearchConfig, solve_search
records = solve_search(engine, problems, "beam", SearchConfig(beam_width=4), n=16, out="beam.jsonl")
"""

from .config import STEP_AGGREGATIONS, SearchConfig
from .runner import SCORE_KINDS, solve_search, step_scorer_for
from .strategies import SEARCH_STRATEGIES, GroupPlan

__all__ = [
    "SearchConfig",
    "solve_search",
    "step_scorer_for",
    "SEARCH_STRATEGIES",
    "GroupPlan",
    "STEP_AGGREGATIONS",
    "SCORE_KINDS",
]
