"""Beam search and DVTS as strategies of the run loop (`Engine.solve(strategy="beam" | "dvts")`).

Each chunk's trees grow round by round (`runner.run_rounds`); a problem's record is built as soon as its tree
is done. The step scorer is the engine's (`Parts.steps`: its verifier's own, or a PRM) unless one is given.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable, Iterator, Sequence

from ...inputs.problems import Problem
from ...params import SamplingParams
from ...pipeline.records import ProblemRecord
from ..parts import Parts
from ..registry import BlockView, register_strategy
from .config import SearchConfig
from .runner import SCORE_KINDS, Search, build_records, new_trees, run_rounds
from .strategies import GroupPlan, beam_groups, dvts_groups


class SearchPlan:
    """One search strategy over a run: its groups of beams, its step scorer and its settings."""

    def __init__(
        self,
        name: str,
        groups: Callable[[int, int], list[GroupPlan]],
        parts: Parts,
        params: SamplingParams,
        config: SearchConfig,
        *,
        step_scorer=None,
    ):
        delimiter = config.step_delimiter or parts.prompts.config.step_delimiter
        scorer = step_scorer or parts.steps.scorer(delimiter, prm_format=config.prm_format)
        config = config.for_scorer(scorer)
        self.name, self.parts, self.params = name, parts, params
        self.groups = groups(params.n, config.beam_width)
        self.rows_per_problem = params.n
        self.search = Search(parts.backend, scorer, config, params, delimiter)
        self.run_block: dict[str, Any] = {
            **parts.run_info(params),
            "verifier": scorer.name,
            "search": {**asdict(config), "step_delimiter": delimiter},
        }

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        for tree in run_rounds(self.search, new_trees(self.parts, problems, self.groups)):
            yield from build_records(self.parts, [tree], self.params)


def step_kinds(parts: Parts, config) -> tuple[str, ...]:
    """A search's records carry the beams' own step scores, not the engine verifier's."""
    return SCORE_KINDS


def step_headline(parts: Parts, config) -> str:
    """The step kind a search's votes use by default: the one it ranks by (its --step-reduction, else the step
    scorer's own)."""
    return f"step_{(config.step_reduction if config is not None else None) or parts.steps.default_reduction()}"


SEARCH_ENTRY = {
    "config_type": SearchConfig,
    "verifier_kinds": step_kinds,
    "headline": step_headline,
    "n_rule": SearchConfig.check_n,
    "view": BlockView("search", "tree", "Search tree"),
    "calibration_family": "search",
}


@register_strategy("beam", help="Step-level beam search scored by a step scorer.", **SEARCH_ENTRY)
def beam_plan(parts: Parts, params: SamplingParams, config: SearchConfig, **extra) -> SearchPlan:
    return SearchPlan("beam", beam_groups, parts, params, config, **extra)


@register_strategy("dvts", help="Diverse verifier tree search: N/M greedy subtrees.", **SEARCH_ENTRY)
def dvts_plan(parts: Parts, params: SamplingParams, config: SearchConfig, **extra) -> SearchPlan:
    return SearchPlan("dvts", dvts_groups, parts, params, config, **extra)
