"""The registry of strategies: the one list that the CLI, the server, the run loop and the summary read.

A strategy registers, in its own file, its name, its settings dataclass, its help line, how many samples a
problem may hold, the score kinds its records carry and its summary lines (`register_strategy`); nothing else
names it. Importing a module under `BUILTIN_STRATEGY_MODULES` registers the built-ins; any other module may
register more (a test, a user's package) before `Engine.solve` is called.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..confidence import CONFIDENCE_KINDS

BUILTIN_STRATEGY_MODULES = (
    "tts_engine.strategies.fixed",
    "tts_engine.strategies.adaptive",
    "tts_engine.strategies.deepconf",
    "tts_engine.strategies.search.plan",
    "tts_engine.strategies.particle",
)
"""Modules whose import registers the built-in strategies (loaded on first lookup)."""


def _engine_kinds(engine, config) -> tuple[str, ...]:
    """The engine verifier's score kinds (what the engine's records carry besides likelihood and confidence)."""
    return tuple(engine.verifier.kinds) if engine.verifier is not None else ()


def _engine_headline(engine, config) -> str | None:
    return engine.headline_kind


def _n(n: int, config) -> int:
    return n


def _no_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    return []


@dataclass(frozen=True)
class StrategyEntry:
    """A registered strategy: how to build its plan, what it takes and what its records carry."""

    name: str
    build: Callable[..., Any]
    """build(engine, params, config, **extra) -> Plan (`tts_engine.run.Plan`)."""
    config_type: type | None
    """The settings dataclass of the strategy (its fields become `tts solve` / `tts serve` options and the
    server's `tts` object keys), or None."""
    help: str
    """One line for --help and docs."""
    samples: Callable[[int, Any], int] = _n
    """samples(n, config) -> the most samples one problem may hold (the server's row budget, the summary)."""
    verifier_kinds: Callable[[Any, Any], tuple[str, ...]] = _engine_kinds
    """verifier_kinds(engine, config) -> the verifier score kinds its records carry (default: the engine's)."""
    headline: Callable[[Any, Any], str | None] = _engine_headline
    """headline(engine, config) -> the score kind its headline votes use (default: the engine verifier's)."""
    summary_lines: Callable[[Sequence[dict[str, Any]]], list[str]] = _no_lines
    """summary_lines(records) -> what the run spent, for `tts solve`'s summary (e.g. adaptive's stop reasons)."""


_STRATEGIES: dict[str, StrategyEntry] = {}


def register_strategy(name: str, *, config_type: type | None = None, help: str = "", **declared: Any):
    """Class or function decorator: `build(engine, params, config, **extra) -> Plan` under `name`; `declared`
    sets the entry's other fields (samples, verifier_kinds, headline, summary_lines)."""

    def decorate(build):
        if name in _STRATEGIES and _STRATEGIES[name].build is not build:
            raise ValueError(f"strategy {name!r} is already registered")
        line = help or (build.__doc__ or "").split("\n")[0]
        _STRATEGIES[name] = StrategyEntry(name, build, config_type, line, **declared)
        return build

    return decorate


def strategies() -> dict[str, StrategyEntry]:
    """Every registered strategy, built-ins loaded."""
    for module in BUILTIN_STRATEGY_MODULES:
        importlib.import_module(module)
    return dict(_STRATEGIES)


def strategy_entry(name: str) -> StrategyEntry:
    known = strategies()
    if name not in known:
        raise ValueError(f"strategy must be one of {sorted(known)}, got {name!r}")
    return known[name]


def config_types() -> list[type]:
    """The distinct settings dataclasses of the registered strategies, in registration order."""
    return list(dict.fromkeys(e.config_type for e in strategies().values() if e.config_type is not None))


def record_kinds(engine, strategy: str, config: Any, top_logprobs: int) -> tuple[str, ...]:
    """The score kinds every record of a run carries: likelihood, the confidence kinds (with top-k log-probs)
    and the strategy's verifier kinds. The one place the server, the adaptive stop rules and eval ask."""
    entry = strategy_entry(strategy)
    confidence = CONFIDENCE_KINDS if top_logprobs else ()
    return ("likelihood", *confidence, *entry.verifier_kinds(engine, config))
