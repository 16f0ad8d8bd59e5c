"""Settings of step-level search: the fields every step search shares (`StepSearchSettings`, also particle
filtering's base) and beam search / DVTS's own (`SearchConfig`), validated field by field."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ...verifiers.process import aggregate_steps

STEP_AGGREGATIONS = ("last", "min", "prod", "mean")


def check_n_multiple(n: int, name: str, divisor: int, strategy: str) -> None:
    """n is an integer >= 1 and a multiple of the setting `name` (= `divisor`): N split into equal groups."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if n % divisor:
        raise ValueError(
            f"{strategy}: n must be a multiple of {name}, got n={n}, {name}={divisor} "
            f"(try --n {max(divisor, n - n % divisor)})"
        )


@dataclass
class StepSearchSettings:
    """The settings every step-level search shares (beam, DVTS, particle filtering): defined once here, so one
    `--max-steps` means one thing to all of them."""

    max_steps: int = 40
    """Most rounds (steps); in the last round candidates are sampled to the end, so none is returned half-done."""

    step_aggregation: Literal["last", "min", "prod", "mean"] | None = None
    """How a candidate's step scores become the one score that ranks (or weighs) it: last step, minimum, product or
    mean. Default: the step scorer's own (`aggregation`): prod for a checkpoint's own step checks, last for every
    other scorer."""

    step_delimiter: str | None = None
    """The stop string that ends a step. Default: the checkpoint's own `step_delimiter` (tts_engine.json; a
    blank line when it stores none)."""

    prm_format: str | None = None
    """Format of a discriminative PRM (--verifier-kind prm): qwen_prm, math_shepherd, rlhflow, skywork or a
    registered one. Default: detected from the checkpoint's config."""

    def __post_init__(self) -> None:
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise ValueError(f"max_steps must be an integer >= 1, got {self.max_steps!r}")
        if self.step_aggregation is not None and self.step_aggregation not in STEP_AGGREGATIONS:
            raise ValueError(f"step_aggregation must be one of {STEP_AGGREGATIONS}, got {self.step_aggregation!r}")
        if self.step_delimiter is not None and not self.step_delimiter:
            raise ValueError("step_delimiter must be a non-empty string, got ''")
        if self.prm_format is not None:
            from ...verifiers.prm import check_prm_format

            check_prm_format(self.prm_format)

    def for_scorer(self, scorer):
        """These settings with the step aggregation the scorer asks for where none was given."""
        if self.step_aggregation is not None:
            return self
        return replace(self, step_aggregation=getattr(scorer, "aggregation", "last"))

    def rank(self, step_scores: list[float]) -> float:
        """The score that ranks a candidate (0 for a candidate with no step yet)."""
        if self.step_aggregation is None:
            raise ValueError("step_aggregation is unset: rank with the settings of `for_scorer(scorer)`")
        return aggregate_steps(step_scores, self.step_aggregation) if step_scores else 0.0


@dataclass
class SearchConfig(StepSearchSettings):
    """How beam search and DVTS grow, score and prune partial solutions (search-and-learn's defaults, except
    where noted)."""

    beam_width: int = 4
    """M: children per kept beam each round. Beam search keeps N/M beams; DVTS runs N/M subtrees, each keeping
    its best child (so N must be a multiple of M)."""

    lookahead: int = 0
    """Greedy steps generated past each candidate only to score it (then dropped). 0 is plain beam search, as
    in the published beam-search and DVTS runs; k > 0 is Snell et al.'s lookahead search."""

    filter_duplicates: bool = True
    """Keep one of several candidates with the same text when choosing the beams to extend."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.beam_width, bool) or not isinstance(self.beam_width, int) or self.beam_width < 1:
            raise ValueError(f"beam_width must be an integer >= 1, got {self.beam_width!r}")
        if isinstance(self.lookahead, bool) or not isinstance(self.lookahead, int) or self.lookahead < 0:
            raise ValueError(f"lookahead must be an integer >= 0, got {self.lookahead!r}")

    def check_n(self, n: int, strategy: str) -> None:
        """Rules across fields: N beams split into groups of M."""
        check_n_multiple(n, "beam_width", self.beam_width, strategy)
