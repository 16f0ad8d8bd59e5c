"""Particle filtering and particle Gibbs (`--strategy particle`): sampling by the step scorer's belief instead of
a greedy cut (Puri et al. 2025, "A Probabilistic Inference Approach to Inference-Time Scaling of LLMs using
Particle-Based Monte Carlo Methods").

Each round every unfinished particle of every open problem grows one step (one generate call, the step
delimiter as stop string), the new steps are scored (one scoring call: the engine's step scorer, as beam search
uses), and the problem's particles are resampled with replacement, each drawn with probability
softmax(logit(score) / resample_temperature), finished particles included (they keep their final score and are
not extended). A particle drawn twice continues as two (their next steps differ). Resampling keeps paths the
scorer doubts alive in proportion to its doubt, where beam search would prune them.

Particle Gibbs (`sweeps` > 1) splits the N particles into sweeps of N/sweeps, run one after the other. Each later
sweep keeps a reference particle, drawn by weight from the previous sweep's final particles: at every round its
prefix of that many steps joins the resampling (a copy drawn from it grows fresh steps from there on). The
record holds every sweep's final particles (N samples), voted on by their step scores (`step_prod`, ...), as
beam search's are; its `search` block holds the whole tree and each sweep's final particles.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator, Sequence

from ..inputs.problems import Problem
from ..params import SamplingParams
from ..pipeline.records import ProblemRecord
from ..settings import check_int
from .parts import Parts
from .registry import BlockView, register_strategy
from .rounds import derive_seed
from .search.config import SearchConfig, StepSearchConfig, check_n_multiple
from .search.plan import step_headline, step_kinds
from .search.runner import Group, Node, Search, Tree, build_records, new_trees
from .search.strategies import GroupPlan


@dataclass
class ParticleConfig(StepSearchConfig):
    """How particle filtering grows, weighs and resamples its particles (the step settings are every step
    search's: `StepSearchConfig`)."""

    resample_temperature: float = 1.0
    """T of the resampling weights softmax(logit(score) / T): small T follows the scorer greedily, large T
    resamples almost uniformly (1.0 as the published particle filtering)."""

    sweeps: int = 1
    """1 is particle filtering; k > 1 is particle Gibbs: k sweeps of N/k particles, each after the first keeping
    a reference particle from the one before (N must be a multiple of k, with at least 2 particles a sweep)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        t = self.resample_temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or math.isinf(t):
            raise ValueError(f"resample_temperature must be a number > 0, got {t!r}")
        check_int("sweeps", self.sweeps)

    def check_n(self, n: int, strategy: str) -> None:
        """Rules across fields: N particles split into `sweeps` sweeps of at least 2 (a reference and a new one)."""
        check_n_multiple(n, "sweeps", self.sweeps, strategy)
        if self.sweeps > 1 and n // self.sweeps < 2:
            raise ValueError(
                f"{strategy}: sweeps={self.sweeps} leaves {n // self.sweeps} particle per sweep for n={n}; "
                f"particle Gibbs needs at least 2 per sweep (at most sweeps={n // 2})"
            )


def resampling_weights(scores: Sequence[float], temperature: float) -> list[float]:
    """softmax(logit(score) / T) of scores in [0, 1] (clipped away from 0 and 1)."""
    logits = [math.log(s / (1 - s)) / temperature for s in (min(max(x, 1e-6), 1 - 1e-6) for x in scores)]
    top = max(logits)
    exp = [math.exp(x - top) for x in logits]
    return [x / sum(exp) for x in exp]


@dataclass
class Swarm:
    """One problem's particles in the sweep under way, and the sweeps done."""

    tree: Tree
    size: int
    """Particles per sweep (N / sweeps)."""
    sweep: int = 0
    depth: int = 0
    """Rounds of this sweep done."""
    particles: list[Node] = field(default_factory=list)
    """The free particles (with repeats: a particle drawn twice is here twice)."""
    reference: list[Node] = field(default_factory=list)
    """The reference particle's path, step 1 first (empty in the first sweep)."""
    finals: list[list[Node]] = field(default_factory=list)

    def reference_at(self, depth: int) -> list[Node]:
        """The reference's prefix of `depth` steps (its whole path when shorter), as a one-item list or []."""
        return [self.reference[min(depth, len(self.reference)) - 1]] if self.reference else []


class ParticlePlan:
    """Particle filtering (or particle Gibbs) over a run, with the engine's step scorer unless one is given."""

    name = "particle"

    def __init__(self, parts: Parts, params: SamplingParams, config: ParticleConfig, *, step_scorer=None):
        delimiter = config.step_delimiter or parts.prompts.config.step_delimiter
        scorer = step_scorer or parts.steps.scorer(delimiter, prm_format=config.prm_format)
        steps = SearchConfig(
            beam_width=1, max_steps=config.max_steps, step_reduction=config.step_reduction, filter_duplicates=False
        ).for_scorer(scorer)
        self.parts, self.params, self.config = parts, params, config
        self.rows_per_problem = params.n // config.sweeps
        self.searches = [  # a sweep of its own draws its own steps
            Search(parts.backend, scorer, steps, _sweep_params(params, s), delimiter) for s in range(config.sweeps)
        ]
        self.run_block: dict[str, Any] = {
            **parts.run_info(params),
            "verifier": scorer.name,
            "particle": {**asdict(config), "step_reduction": steps.step_reduction, "step_delimiter": delimiter},
        }

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        swarms = [Swarm(tree, self.rows_per_problem) for tree in new_trees(self.parts, problems, [])]
        for swarm in swarms:
            self._start_sweep(swarm)
        while swarms:
            started = time.perf_counter()
            verify_s = self._round(swarms)
            share, verify_share = (time.perf_counter() - started) / len(swarms), verify_s / len(swarms)
            still = []
            for swarm in swarms:
                swarm.tree.time_s += share
                swarm.tree.verify_time_s += verify_share
                if swarm.sweep == self.config.sweeps:
                    yield self._record(swarm)
                else:
                    still.append(swarm)
            swarms = still

    # --- one round of every open problem ---------------------------------------------------------------------
    def _round(self, swarms: list[Swarm]) -> float:
        """Grow every open particle a step, score the new steps, resample; returns the seconds spent scoring."""
        children: list[tuple[Tree, Node]] = []
        by_stage: dict[tuple[int, int], list[Swarm]] = {}
        for swarm in swarms:
            by_stage.setdefault((swarm.sweep, swarm.depth), []).append(swarm)
        for (sweep, depth), group in sorted(by_stage.items()):
            children += self.searches[sweep].expand([s.tree for s in group], depth)
        scoring = time.perf_counter()
        self.searches[0].score(children)
        verify_s = time.perf_counter() - scoring
        grown: dict[int, list[Node]] = {}
        for tree, node in children:
            grown.setdefault(id(tree), []).append(node)
        for swarm in swarms:
            self._resample(swarm, grown.get(id(swarm.tree), []))
        return verify_s

    def _resample(self, swarm: Swarm, children: list[Node]) -> None:
        """Each open particle becomes its child; then the free particles are drawn anew from them and the
        reference's prefix; the sweep ends when every free particle is finished."""
        grown: dict[int, list[Node]] = {}
        for child in children:
            grown.setdefault(child.parent, []).append(child)
        particles = [p if p.finished else grown[p.id].pop() for p in swarm.particles]
        swarm.depth += 1
        pool = particles + swarm.reference_at(swarm.depth)
        weights = resampling_weights([p.rank_score for p in pool], self.config.resample_temperature)
        stream = f"particle\x00{swarm.tree.problem.id}\x00{swarm.sweep}"
        rng = random.Random(derive_seed(self.params.seed, stream, swarm.depth))  # per problem, sweep and round
        swarm.particles = rng.choices(pool, weights=weights, k=len(particles))
        for p in swarm.particles:
            p.kept = True
        open_ = [p for p in swarm.particles if not p.finished]
        swarm.tree.groups = [Group(GroupPlan(0, len(open_), 1, swarm.size), kept=open_, children_each=1)]
        swarm.tree.rounds += 1
        if not open_:
            self._end_sweep(swarm)

    # --- sweeps ----------------------------------------------------------------------------------------------
    def _start_sweep(self, swarm: Swarm) -> None:
        root = swarm.tree.nodes[0]
        free = swarm.size - (1 if swarm.reference else 0)
        swarm.depth, swarm.particles = 0, [root] * free
        swarm.tree.groups = [Group(GroupPlan(free, free, 1, swarm.size), kept=[root], children_each=1)]

    def _end_sweep(self, swarm: Swarm) -> None:
        final = swarm.particles + swarm.reference[-1:]
        swarm.finals.append(final)
        swarm.sweep += 1
        if swarm.sweep < self.config.sweeps:
            weights = resampling_weights([p.rank_score for p in final], self.config.resample_temperature)
            rng = random.Random(derive_seed(self.params.seed, f"reference\x00{swarm.tree.problem.id}", swarm.sweep))
            swarm.reference = _path(swarm.tree, rng.choices(final, weights=weights)[0])
            self._start_sweep(swarm)

    def _record(self, swarm: Swarm) -> ProblemRecord:
        finals = [p for final in swarm.finals for p in final]
        swarm.tree.groups = [Group(GroupPlan(0, 0, 1, len(finals)), kept=[], finished=finals)]
        [record] = build_records(self.parts, [swarm.tree], self.params)
        record.block.sweeps = [[p.id for p in final] for final in swarm.finals]
        return record


def _sweep_params(params: SamplingParams, sweep: int) -> SamplingParams:
    return replace(params, seed=derive_seed(params.seed, "particle-sweep", sweep))


def _path(tree: Tree, leaf: Node) -> list[Node]:
    """The nodes from step 1 to `leaf`."""
    path = []
    node: Node | None = leaf
    while node is not None and node.parent is not None:
        path.append(node)
        node = tree.nodes[node.parent]
    return path[::-1]


@register_strategy(
    "particle",
    config_type=ParticleConfig,
    help="Particle filtering (particle Gibbs with --sweeps > 1): particles resampled by their step scores.",
    verifier_kinds=step_kinds,
    headline=step_headline,
    n_rule=ParticleConfig.check_n,
    view=BlockView("search", "tree", "Particle tree"),
    calibration_family="search",
)
def particle_plan(parts: Parts, params: SamplingParams, config: ParticleConfig, **extra) -> ParticlePlan:
    return ParticlePlan(parts, params, config, **extra)
