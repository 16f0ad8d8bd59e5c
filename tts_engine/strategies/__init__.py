"""The strategies, one file (or folder) each, beside the round library they share (`rounds.py`) and the
registry that every other part reads (`registry.py`): fixed, adaptive-length and adaptive-n (`adaptive.py`),
deepconf, beam and dvts (`search/`), particle. Adding a strategy: docs/architecture.md."""

from .registry import (
    StrategyEntry,
    config_types,
    record_kinds,
    register_strategy,
    strategies,
    strategy_entry,
)

__all__ = [
    "StrategyEntry",
    "config_types",
    "record_kinds",
    "register_strategy",
    "strategies",
    "strategy_entry",
]
