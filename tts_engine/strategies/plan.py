"""The contract between a strategy and the run loop: a strategy's plan yields one record per problem of a chunk
(and, if it works in rounds, a word on each problem still open)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Protocol, Sequence

from ..inputs.problems import Problem
from ..pipeline.records import ProblemRecord


@dataclass(frozen=True)
class RoundProgress:
    """A plan's word on a problem still open after a round (adaptive strategies): how many samples it has, which
    answer leads, and that answer's p_correct (the stopping signal) and vote share."""

    problem_id: str
    samples: int
    leader: str | None
    p_correct: float
    confidence: float
    """The leader's share of the vote (`confidence` in records)."""


class Plan(Protocol):
    """One strategy's plan over a run: what it spends per problem and how it solves a chunk."""

    name: str
    rows_per_problem: int
    """Samples one problem holds in flight at most (sizes the chunks)."""
    run_block: dict[str, Any]
    """The strategy's part of the results' "run" block (model, sampling settings, verifier, its own settings)."""

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord | RoundProgress]:
        """One record per problem of the chunk, yielded as each finishes (any order), with optional
        `RoundProgress` items for problems still open."""
        ...


class TokenBudget:
    """One token budget for a whole run (`RunConfig.budget_tokens`): generated and verifier tokens, not prompts.

    The run loop starts it with the problems left to solve and what the results file already spent; a plan that
    allocates (adaptive-n) takes each chunk's share of what is left, spends it on the problems where it pays most,
    and charges what it spent. The run never spends more than the budget plus one wave."""

    def __init__(self, total: int):
        self.total, self.spent, self.problems_left = total, 0, 0

    def start(self, problems: int, spent: int) -> None:
        """A run of `problems` still to solve, after a resumed file's `spent` tokens."""
        self.problems_left, self.spent = problems, spent

    def share(self, problems: int) -> int:
        """The tokens a chunk of `problems` may spend: what is left, in proportion to the problems left."""
        left = max(0, self.total - self.spent)
        return left if problems >= self.problems_left else left * problems // max(1, self.problems_left)

    def charge(self, tokens: int, problems: int) -> None:
        """A chunk of `problems` done, having spent `tokens`."""
        self.spent += tokens
        self.problems_left = max(0, self.problems_left - problems)
