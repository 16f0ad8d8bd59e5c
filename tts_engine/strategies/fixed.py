"""The fixed strategy: N samples of `max_new_tokens` each per problem, all scored and voted on."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..params import SamplingParams
from ..problems import Problem
from .registry import register_strategy


@register_strategy("fixed", help="N samples of --max-new-tokens each, all scored and voted on.")
class FixedPlan:
    """One engine step (generate, extract, group, grade, score, vote) per chunk of problems."""

    name = "fixed"

    def __init__(self, engine, params: SamplingParams, config: None = None):
        self.engine, self.params = engine, params
        self.rows_per_problem = params.n
        self.run_block: dict[str, Any] = engine.run_info(params)

    def solve(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any]]:
        yield from self.engine.solve_batch(problems, self.params)
