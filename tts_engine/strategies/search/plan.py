"""Beam search and DVTS as strategies of the run loop (`Engine.solve(strategy="beam" | "dvts")`).

Each chunk's trees grow round by round (`runner.run_rounds`); a problem's record is built as soon as its tree
is done. The step scorer is the engine's (`Engine.step_scorer`: its verifier's own, or a PRM) unless one is given.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable, Iterator, Sequence

from ...params import SamplingParams
from ...problems import Problem
from ..registry import register_strategy
from .config import SearchConfig
from .runner import SCORE_KINDS, Search, build_records, new_trees, run_rounds
from .strategies import GroupPlan, beam_groups, dvts_groups


class SearchPlan:
    """One search strategy over a run: its groups of beams, its step scorer and its settings."""

    def __init__(
        self,
        name: str,
        groups: Callable[[int, int], list[GroupPlan]],
        engine,
        params: SamplingParams,
        config: SearchConfig,
        *,
        step_scorer=None,
    ):
        delimiter = config.step_delimiter or engine.prompt_config.step_delimiter
        scorer = step_scorer or engine.step_scorer(delimiter, prm_format=config.prm_format)
        config = config.for_scorer(scorer)
        self.name, self.engine, self.params = name, engine, params
        self.groups = groups(params.n, config.beam_width)
        self.rows_per_problem = params.n
        self.search = Search(engine.backend, scorer, config, params, delimiter)
        self.run_block: dict[str, Any] = {
            **engine.run_info(params),
            "verifier": getattr(scorer, "name", type(scorer).__name__),
            "search": {**asdict(config), "step_delimiter": delimiter},
        }

    def solve(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any]]:
        for tree in run_rounds(self.search, new_trees(self.engine, problems, self.groups)):
            yield from build_records(self.engine, [tree], self.params, self.run_block)


def step_kinds(engine, config) -> tuple[str, ...]:
    """A search's records carry the beams' own step scores, not the engine verifier's."""
    return SCORE_KINDS


def step_headline(engine, config) -> str:
    """The step kind a search's votes use by default: the one it ranks by (its --step-aggregation, else the step
    scorer's own)."""
    return f"step_{(config.step_aggregation if config is not None else None) or engine.step_aggregation()}"


SEARCH_ENTRY = {
    "config_type": SearchConfig,
    "verifier_kinds": step_kinds,
    "headline": step_headline,
    "n_rule": SearchConfig.check_n,
}


@register_strategy("beam", help="Step-level beam search scored by a step scorer.", **SEARCH_ENTRY)
def beam_plan(engine, params: SamplingParams, config: SearchConfig, **extra) -> SearchPlan:
    return SearchPlan("beam", beam_groups, engine, params, config, **extra)


@register_strategy("dvts", help="Diverse verifier tree search: N/M greedy subtrees.", **SEARCH_ENTRY)
def dvts_plan(engine, params: SamplingParams, config: SearchConfig, **extra) -> SearchPlan:
    return SearchPlan("dvts", dvts_groups, engine, params, config, **extra)
