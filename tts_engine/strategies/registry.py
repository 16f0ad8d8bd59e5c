"""The registry of strategies: the one list that the CLI, the server, the run loop and the summary read.

A strategy registers, in its own file, everything the rest of the code needs to know about it
(`register_strategy`): its name, its settings dataclass, its help line, its rule on n, how many samples a problem
may hold, which of its settings a server request may set and which server caps bound them, the score kinds its
records carry and its summary lines. Nothing else names a strategy or one of its settings.

Where strategies come from: the built-ins (`BUILTIN_STRATEGY_MODULES`), every module another installed
distribution names in the entry-point group `tts_engine.strategies` (so `pip install my-strategy` adds
`--strategy mine` to `tts solve`, `Engine.solve` and `tts serve`), and any module that registers one in-process.

All strategies share one option namespace (`tts solve --max-steps`), so a setting may be shared only by being the
same field: declared once in a settings base the strategies inherit (`StepSearchConfig`). A field of the same
name declared anywhere else fails at registration, naming both strategies.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..pipeline.confidence import CONFIDENCE_KINDS
from ..plugins import load_plugins

BUILTIN_STRATEGY_MODULES = (
    "tts_engine.strategies.fixed",
    "tts_engine.strategies.adaptive",
    "tts_engine.strategies.deepconf",
    "tts_engine.strategies.search.plan",
    "tts_engine.strategies.particle",
    "tts_engine.strategies.thinking",
)
"""Modules whose import registers the built-in strategies (loaded on first lookup)."""
DEFAULT_STRATEGY = "fixed"
"""The strategy of a run or request that names none (`tts solve`, `tts serve`, `Engine.solve`)."""
ENTRY_POINT_GROUP = "tts_engine.strategies"
"""Entry-point group of strategies from other packages (`tts_engine.plugins`): each entry names a module whose
import registers its strategies (`[project.entry-points."tts_engine.strategies"] mine = "my_pkg.strategy"`)."""
SERVER_CAPS = ("samples", "tokens")
"""What a request's setting may be capped by: the server's most samples per problem or most new tokens."""


def _engine_kinds(parts, config) -> tuple[str, ...]:
    """The engine verifier's score kinds (what the engine's records carry besides likelihood and confidence)."""
    return tuple(parts.verifier.kinds) if parts.verifier is not None else ()


def _engine_headline(parts, config) -> str | None:
    return parts.headline_kind


def _n(n: int, config) -> int:
    return n


def _no_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    return []


def _any_n(config, n: int, strategy: str) -> None:
    """No rule on n beyond the sampling settings' own (an integer >= 1)."""


@dataclass(frozen=True)
class BlockView:
    """How `tts view` shows a strategy's own block of a record: the page reads this declaration, never a strategy's
    name."""

    key: str
    """The record key of the block ("adaptive", "deepconf", "search"); the run block's settings sit under it too."""
    kind: str
    """"rounds": a stop signal after each round (the block's `confidences`); "tree": a search tree (its `nodes`);
    "facts": the block's values as a table."""
    title: str
    """The section's title."""
    signal: str = "p_correct"
    """What the per-round values are (the plot's label)."""
    round_label: str = "wave {i}"
    """Label of round i: `{i}` counts from 1 (from the round after `first_round` where there is one); `{budget}` is
    the run block's budgets[i - 1]."""
    first_round: str | None = None
    """Label of the first round where it differs (a warm-up)."""
    threshold: str | None = None
    """The run-block setting holding the stop threshold drawn on the plot ("tau", "consensus"); the block's own
    value wins where it has one."""
    wave: str | None = None
    """The run-block setting holding the samples drawn per wave (each sample is labelled with its wave)."""
    warmup: str | None = None
    """The run-block setting holding the samples drawn before the first wave."""


@dataclass(frozen=True)
class StrategyEntry:
    """A registered strategy: how to build its plan, what it takes and what its records carry."""

    name: str
    build: Callable[..., Any]
    """build(parts, params, config, **extra) -> Plan (`tts_engine.strategies.plan.Plan`); parts: `Parts`."""
    config_type: type | None
    """The settings dataclass of the strategy (its fields become `tts solve` / `tts serve` options and the
    server's `tts` object keys), or None."""
    help: str
    """One line for --help and docs."""
    samples: Callable[[int, Any], int] = _n
    """samples(n, config) -> the most samples one problem may hold (the server's row budget, the summary)."""
    verifier_kinds: Callable[[Any, Any], tuple[str, ...]] = _engine_kinds
    """verifier_kinds(parts, config) -> the verifier score kinds its records carry (default: the engine's)."""
    headline: Callable[[Any, Any], str | None] = _engine_headline
    """headline(parts, config) -> the score kind its headline votes use (default: the engine verifier's)."""
    summary_lines: Callable[[Sequence[dict[str, Any]]], list[str]] = _no_lines
    """summary_lines(records) -> what the run spent, for `tts solve`'s summary (e.g. adaptive's stop reasons)."""
    n_rule: Callable[[Any, int, str], None] = _any_n
    """n_rule(config, n, strategy) raises a ValueError naming the strategy when n does not suit the settings (a
    search's n is a multiple of its beam width: `SearchConfig.check_n`); the server checks it before a request
    joins a batch, `Engine.solve` before any generation."""
    request_caps: tuple[tuple[str, str], ...] = ()
    """(setting, cap) pairs: a request's value of the setting (a number, or a list's largest) may not pass the
    server's cap, one of SERVER_CAPS (`max_n` by "samples", `budgets` by "tokens")."""
    request_fields: tuple[str, ...] | None = None
    """The settings a server request may set (default: every field of `config_type`)."""
    view: BlockView | None = None
    """How `tts view` shows the strategy's block of a record (None: the strategy writes none)."""
    allocates: bool = False
    """The strategy takes a run's token budget (`budget=TokenBudget` at build) and shares it across problems."""
    calibration_family: str | None = None
    """The strategies whose records share p_correct's fits (`tts_engine.pipeline.calibration`): a strategy that stops
    early or searches keeps other answers than fixed sampling does. Default: its own name."""

    @property
    def family(self) -> str:
        return self.calibration_family or self.name

    def check_n(self, n: int, config: Any) -> None:
        """n against the strategy's rule (a ValueError naming the strategy when it breaks it)."""
        self.n_rule(config, n, self.name)

    def requestable(self) -> tuple[str, ...]:
        """The settings a request may set."""
        if self.config_type is None:
            return ()
        names = tuple(f.name for f in dataclasses.fields(self.config_type))
        return names if self.request_fields is None else tuple(n for n in names if n in self.request_fields)


_STRATEGIES: dict[str, StrategyEntry] = {}


def register_strategy(name: str, *, config_type: type | None = None, help: str = "", **declared: Any):
    """Class or function decorator: `build(parts, params, config, **extra) -> Plan` under `name`; `declared`
    sets the entry's other fields (samples, verifier_kinds, headline, summary_lines, n_rule, request_caps,
    request_fields, view, allocates, calibration_family). A settings field that collides with another strategy's fails here."""

    def decorate(build):
        if name in _STRATEGIES and _STRATEGIES[name].build is not build:
            raise ValueError(f"strategy {name!r} is already registered")
        line = help or (build.__doc__ or "").split("\n")[0]
        entry = StrategyEntry(name, build, config_type, line, **declared)
        check_entry(entry, [e for e in _STRATEGIES.values() if e.name != name])
        _STRATEGIES[name] = entry
        return build

    return decorate


def check_entry(entry: StrategyEntry, others: Sequence[StrategyEntry]) -> None:
    """A new entry's declarations make sense, and none of its settings is another strategy's field of the same
    name declared elsewhere (one flat option namespace: `--max-steps` must mean one thing)."""
    fields = {f.name for f in dataclasses.fields(entry.config_type)} if entry.config_type else set()
    for setting, cap in entry.request_caps:
        if setting not in fields or cap not in SERVER_CAPS:
            raise ValueError(
                f"strategy {entry.name!r}: request_caps names ({setting!r}, {cap!r}); the setting must be a field of "
                f"{getattr(entry.config_type, '__name__', None)} and the cap one of {SERVER_CAPS}"
            )
    unknown = sorted(set(entry.request_fields or ()) - fields)
    if unknown:
        raise ValueError(f"strategy {entry.name!r}: request_fields {unknown} are not fields of its settings")
    for other in others:
        if other.config_type is None or entry.config_type is None:
            continue
        for field_name in fields & {f.name for f in dataclasses.fields(other.config_type)}:
            mine, theirs = _declared_by(entry.config_type, field_name), _declared_by(other.config_type, field_name)
            if mine is not theirs:
                raise ValueError(
                    f"strategy {entry.name!r}'s setting {field_name!r} ({mine.__qualname__}) collides with strategy "
                    f"{other.name!r}'s ({theirs.__qualname__}): every strategy shares one option namespace, so "
                    f"rename it, or declare it once in a settings base both inherit"
                )


def _declared_by(cls: type, field_name: str) -> type:
    """The base of `cls`'s MRO that first declares the dataclass field `field_name` (a subclass may declare it again
    to give it another default: it is still the base's setting)."""
    return next(k for k in reversed(cls.__mro__) if field_name in k.__dict__.get("__annotations__", {}))


def strategies() -> dict[str, StrategyEntry]:
    """Every registered strategy: the built-ins, then those of installed packages (`tts_engine.plugins`, group
    `tts_engine.strategies`), then any registered in-process."""
    for module in BUILTIN_STRATEGY_MODULES:
        importlib.import_module(module)
    load_plugins(ENTRY_POINT_GROUP)
    return dict(_STRATEGIES)


def strategy_entry(name: str) -> StrategyEntry:
    """The registered strategy `name`; a ValueError listing the known ones (and the closest) otherwise."""
    known = strategies()
    if name not in known:
        close = difflib.get_close_matches(str(name), list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"strategy must be one of {sorted(known)}, got {name!r}{hint}")
    return known[name]


def owners(setting: str) -> list[str]:
    """The strategies whose settings include field `setting`."""
    return [e.name for e in strategies().values() if e.config_type and setting in _field_names(e.config_type)]


def foreign_settings(strategy: str, given: dict[str, Any]) -> dict[str, list[str]]:
    """The given strategy settings (names of any strategy's fields, with a value) that `strategy` does not take,
    each with the strategies that do."""
    mine = _field_names(strategy_entry(strategy).config_type) if strategy_entry(strategy).config_type else set()
    return {name: owners(name) for name in given if name not in mine and owners(name)}


def _field_names(config_type: type) -> set[str]:
    return {f.name for f in dataclasses.fields(config_type)}


def config_types() -> list[type]:
    """The distinct settings dataclasses of the registered strategies, in registration order."""
    return list(dict.fromkeys(e.config_type for e in strategies().values() if e.config_type is not None))


def record_kinds(parts, strategy: str, config: Any, top_logprobs: int) -> tuple[str, ...]:
    """The score kinds every record of a run carries: likelihood, the confidence kinds (with top-k log-probs)
    and the strategy's verifier kinds. The one place the server, the adaptive stop rules and eval ask."""
    entry = strategy_entry(strategy)
    confidence = CONFIDENCE_KINDS if top_logprobs else ()
    return ("likelihood", *confidence, *entry.verifier_kinds(parts, config))


def family_of(strategy: str) -> str:
    """The calibration family of a strategy named in a results line (its own name when not registered here)."""
    known = strategies()
    return known[strategy].family if strategy in known else strategy
