"""Settings of step-level search: the fields every step search shares (`StepSearchConfig`, also particle
filtering's base) and beam search / DVTS's own (`SearchConfig`), validated field by field."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ...settings import check_int, setting
from ...verifiers.steps import STEP_REDUCTIONS, reduce_steps


def check_n_multiple(n: int, name: str, divisor: int, strategy: str) -> None:
    """n is an integer >= 1 and a multiple of the setting `name` (= `divisor`): N split into equal groups."""
    check_int("n", n)
    if n % divisor:
        raise ValueError(
            f"{strategy}: n must be a multiple of {name}, got n={n}, {name}={divisor} "
            f"(try --n {max(divisor, n - n % divisor)})"
        )


@dataclass
class StepSearchConfig:
    """The settings every step-level search shares (beam, DVTS, particle filtering): defined once here, so one
    `--max-steps` means one thing to all of them."""

    max_steps: int = 40
    """Most rounds (steps); in the last round candidates are sampled to the end, so none is returned half-done."""

    step_reduction: Literal["last", "min", "prod", "mean"] | None = setting(None, deprecated=("--step-aggregation",))
    """How a candidate's step scores become the one score that ranks (or weighs) it: last step, minimum, product or
    mean. Default: the step scorer's own (`reduction`): prod for a checkpoint's own step checks, last for every
    other scorer."""

    step_delimiter: str | None = None
    """The stop string that ends a step. Default: the checkpoint's own `step_delimiter` (tts_engine.json; a
    blank line when it stores none)."""

    prm_format: str | None = None
    """Format of a discriminative PRM (--verifier-kind prm): qwen_prm, math_shepherd, rlhflow, skywork or a
    registered one. Default: detected from the checkpoint's config."""

    def __post_init__(self) -> None:
        check_int("max_steps", self.max_steps)
        if self.step_reduction is not None and self.step_reduction not in STEP_REDUCTIONS:
            raise ValueError(f"step_reduction must be one of {STEP_REDUCTIONS}, got {self.step_reduction!r}")
        if self.step_delimiter is not None and not self.step_delimiter:
            raise ValueError("step_delimiter must be a non-empty string, got ''")
        if self.prm_format is not None:
            from ...verifiers.prm import check_prm_format

            check_prm_format(self.prm_format)

    def for_scorer(self, scorer):
        """These settings with the step reduction the scorer asks for where none was given."""
        if self.step_reduction is not None:
            return self
        return replace(self, step_reduction=scorer.reduction)

    def rank(self, step_scores: list[float]) -> float:
        """The score that ranks a candidate (0 for a candidate with no step yet)."""
        if self.step_reduction is None:
            raise ValueError("step_reduction is unset: rank with the settings of `for_scorer(scorer)`")
        return reduce_steps(step_scores, self.step_reduction) if step_scores else 0.0


@dataclass
class SearchConfig(StepSearchConfig):
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
        check_int("beam_width", self.beam_width)
        check_int("lookahead", self.lookahead, 0)

    def check_n(self, n: int, strategy: str) -> None:
        """Rules across fields: N beams split into groups of M."""
        check_n_multiple(n, "beam_width", self.beam_width, strategy)
