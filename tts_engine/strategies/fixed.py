"""The fixed strategy: N samples of `max_new_tokens` each per problem, all scored and voted on."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..inputs.problems import Problem
from ..params import SamplingParams
from ..pipeline.records import ProblemRecord
from .parts import Parts
from .registry import register_strategy


@register_strategy("fixed", help="N samples of --max-new-tokens each, all scored and voted on.")
class FixedPlan:
    """One step (generate, then the pipeline: extract, group, grade, score, vote) per chunk of problems."""

    name = "fixed"

    def __init__(self, parts: Parts, params: SamplingParams, config: None = None):
        self.parts, self.params = parts, params
        self.rows_per_problem = params.n
        self.run_block: dict[str, Any] = parts.run_info(params)

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        yield from self.parts.one_step(problems, self.params)
