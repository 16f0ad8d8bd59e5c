"""Step-level search guided by a process scorer: beam search and DVTS (docs/search.md).

from tts_engine.strategies.search import SearchConfig
records = engine.solve(problems, strategy="beam", config=SearchConfig(beam_width=4), n=16, out="beam.jsonl")
"""

from .config import STEP_REDUCTIONS, SearchConfig
from .runner import SCORE_KINDS
from .strategies import GroupPlan

__all__ = ["SearchConfig", "GroupPlan", "STEP_REDUCTIONS", "SCORE_KINDS"]
