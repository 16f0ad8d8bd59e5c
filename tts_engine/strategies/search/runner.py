"""The search runner: every open problem's beams advance together, one generate call and one scoring call per
round; each problem's results line is written as soon as its groups finish, and a rerun resumes.

Per round: (1) every kept beam's prefix (prompt + its text so far) is sent with n = M and the step delimiter as
stop string (identical prefixes are merged into one request, so their children differ); in the last round no
stop string, so every child finishes; (2) optional greedy lookahead steps, for scoring only; (3) one
`score_batch` over all unfinished and finished children; (4) each group moves its finished children out and
keeps its best unfinished ones. The record is the pipeline's (`Pipeline.records`: answers, classes, grades,
every vote) over the finished beams, with their step scores reduced as score kinds `step_last`, `step_min`,
`step_prod`, `step_mean`, plus a `search` block holding the whole tree (docs/search.md).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from ...backends.base import Sample
from ...inputs.problems import Problem
from ...params import SamplingParams
from ...pipeline.failures import generate_or_fail
from ...pipeline.records import Compute, ProblemRecord, StrategyBlock
from ...verifiers.base import SampleScore
from ...verifiers.steps import STEP_KINDS, STEP_REDUCTIONS, reduce_steps
from ..rounds import derive_seed
from .config import SearchConfig
from .strategies import GroupPlan

log = logging.getLogger(__name__)

SCORE_KINDS = STEP_KINDS


# --- the tree ----------------------------------------------------------------------------------------------
@dataclass
class Node:
    """One step of one beam: the step's text, the path to it, and what the scorer said."""

    id: int
    parent: int | None
    group: int
    round: int
    step: str
    """This step's text (no delimiter); '' for the root."""
    path_text: str
    """The beam's text so far (steps joined by the delimiter, ending with one when unfinished)."""
    steps: list[str]
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    num_prompt_tokens: int = 0
    finished: bool = False
    finish_reason: str | None = None
    step_scores: list[float] = field(default_factory=list)
    rank_score: float = 0.0
    lookahead: list[str] = field(default_factory=list)
    kept: bool = False

    def sample(self) -> Sample:
        return Sample(
            text=self.path_text,
            token_ids=self.token_ids,
            finish_reason=self.finish_reason or "length",
            logprobs=self.logprobs,
            num_prompt_tokens=self.num_prompt_tokens,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent": self.parent,
            "group": self.group,
            "round": self.round,
            "step": self.step,
            "step_scores": [round(s, 6) for s in self.step_scores],
            "score": round(self.rank_score, 6),
            "finished": self.finished,
            "finish_reason": self.finish_reason,
            "kept": self.kept,
            "num_tokens": len(self.token_ids),
            **({"lookahead": self.lookahead} if self.lookahead else {}),
        }


@dataclass
class Group:
    """One group of beams (the whole beam search, or one DVTS subtree) of one problem."""

    plan: GroupPlan
    kept: list[Node]
    finished: list[Node] = field(default_factory=list)
    children_each: int = 0
    """Children of each kept beam next round: M, more when duplicates left fewer beams than planned."""

    @property
    def done(self) -> bool:
        return not self.kept or len(self.finished) >= self.plan.target


@dataclass
class Tree:
    """Everything one problem's search did."""

    problem: Problem
    prompt: str
    groups: list[Group]
    nodes: list[Node]
    generated_tokens: int = 0
    verifier_tokens: int = 0
    rounds: int = 0
    time_s: float = 0.0
    verify_time_s: float = 0.0

    @property
    def done(self) -> bool:
        return all(g.done for g in self.groups)

    def add(self, parent: Node, group: int, round_index: int, **kw) -> Node:
        node = Node(
            id=len(self.nodes),
            parent=parent.id,
            group=group,
            round=round_index,
            num_prompt_tokens=parent.num_prompt_tokens,
            **kw,
        )
        self.nodes.append(node)
        return node

    def results(self) -> list[Node]:
        """Each group's `target` best finished beams (by rank score, ties by creation order), in node order."""
        chosen = []
        for g in self.groups:
            chosen += sorted(g.finished, key=lambda x: (-x.rank_score, x.id))[: g.plan.target]
        return sorted(chosen, key=lambda x: x.id)


# --- one round ---------------------------------------------------------------------------------------------
class Search:
    """Runs the rounds of one chunk of problems with one backend and one step scorer."""

    def __init__(self, backend, scorer, config: SearchConfig, params: SamplingParams, delimiter: str):
        self.backend, self.scorer, self.config, self.params, self.delimiter = backend, scorer, config, params, delimiter

    def expand(self, trees: Sequence[Tree], round_index: int) -> list[tuple[Tree, Node]]:
        """New children of every kept beam of every open group; one generate call per distinct child count."""
        last = round_index == self.config.max_steps - 1
        requests: dict[tuple[int, str], list[tuple[int, int, Node]]] = {}  # (tree, prefix) -> (group, n, parent)
        for t, tree in enumerate(trees):
            for g, group in enumerate(tree.groups):
                if group.done:
                    continue
                for parent in group.kept:
                    n = group.plan.root_children if parent.parent is None else group.children_each
                    requests.setdefault((t, parent.path_text), []).append((g, n, parent))
        by_n: dict[int, list[tuple[int, str]]] = {}
        for key, wanted in requests.items():
            by_n.setdefault(sum(n for _, n, _ in wanted), []).append(key)
        children = []
        for n, keys in sorted(by_n.items()):
            prompts = [trees[t].prompt + prefix for t, prefix in keys]
            budget = max(self.params.max_new_tokens - len(requests[k][0][2].token_ids) for k in keys)
            step = replace(
                self.params,
                n=n,
                max_new_tokens=max(1, budget),
                stop=[] if last else [self.delimiter],
                seed=derive_seed(self.params.seed, "search", round_index),
            )
            for key, row in zip(keys, self._generate(prompts, step, [trees[t].problem for t, _ in keys])):
                tree, offset = trees[key[0]], 0
                for g, count, parent in requests[key]:
                    for sample in row[offset : offset + count]:
                        children.append((tree, self._child(tree, parent, g, round_index, sample, last)))
                    offset += count
        return children

    def _generate(self, prompts, params, problems):
        return generate_or_fail(self.backend, problems, prompts, params)  # (P, n)

    def _child(self, tree: Tree, parent: Node, group: int, round_index: int, sample: Sample, last: bool) -> Node:
        """A node for one generated step (the rest of the solution in the last round), cut to the beam's budget;
        finished unless it stopped on the delimiter with a non-blank step and room left."""
        tree.generated_tokens += sample.num_tokens
        room = self.params.max_new_tokens - len(parent.token_ids)
        ids, logprobs, text, reason = sample.token_ids, sample.logprobs, sample.text, sample.finish_reason
        if len(ids) > room:
            ids, logprobs, reason = ids[:room], logprobs[:room], "length"
            text = self.backend.decode(ids).split(self.delimiter)[0]
        at_delimiter = not last and reason == "stop" and self.delimiter in self.backend.decode(ids)
        token_ids, logps = parent.token_ids + list(ids), parent.logprobs + list(logprobs)
        out_of_room = (
            len(token_ids) >= self.params.max_new_tokens
            or parent.num_prompt_tokens + len(token_ids) + 1 >= self.backend.max_model_len
        )
        finished = not at_delimiter or not text.strip() or out_of_room
        steps = parent.steps + [s.strip() for s in text.split(self.delimiter) if s.strip()]
        path = parent.path_text + text + ("" if finished else self.delimiter)
        if finished and at_delimiter and out_of_room:
            reason = "length"
        return tree.add(
            parent,
            group,
            round_index,
            step=text.strip(),
            path_text=path,
            steps=steps,
            token_ids=token_ids,
            logprobs=logps,
            finished=finished,
            finish_reason=reason if finished else None,
        )

    def look_ahead(self, children: list[tuple[Tree, Node]]) -> None:
        """k greedy steps past each unfinished child, recorded for scoring only (their tokens are counted)."""
        todo = [(tree, node, node.path_text) for tree, node in children if not node.finished]
        greedy = replace(self.params, n=1, temperature=0.0, stop=[self.delimiter])
        for _ in range(self.config.lookahead):
            todo = [item for item in todo if len(item[2]) < 4 * self.params.max_new_tokens]
            if not todo:
                return
            rows = self._generate(
                [tree.prompt + text for tree, _, text in todo], greedy, [t.problem for t, _, _ in todo]
            )
            still = []
            for (tree, node, text), (sample,) in zip(todo, rows):
                tree.generated_tokens += sample.num_tokens
                if sample.text.strip():
                    node.lookahead.append(sample.text.strip())
                if (
                    sample.finish_reason == "stop"
                    and self.delimiter in self.backend.decode(sample.token_ids)
                    and sample.text.strip()
                ):
                    still.append((tree, node, text + sample.text + self.delimiter))
            todo = still

    def score(self, children: list[tuple[Tree, Node]]) -> None:
        """One scoring call over every child with a step; step scores and the rank score set on each."""
        scored = [(tree, node) for tree, node in children if node.steps]
        if not scored:
            return
        results = self.scorer.score_batch(
            [tree.problem.text for tree, _ in scored], [node.steps + node.lookahead for _, node in scored]
        )
        for (tree, node), result in zip(scored, results):
            node.step_scores = [float(s) for s in result.scores[: len(node.steps)]]
            node.rank_score = self.config.rank([float(s) for s in result.scores])
            tree.verifier_tokens += result.tokens

    def select(self, tree: Tree, children: list[Node]) -> None:
        """Finished children leave the pool; each group keeps its best unfinished ones."""
        for g, group in enumerate(tree.groups):
            mine = [c for c in children if c.group == g]
            if not mine:
                continue
            group.finished += [c for c in mine if c.finished]
            needed = group.plan.target - len(group.finished)
            pool = sorted((c for c in mine if not c.finished), key=lambda c: (-c.rank_score, c.id))
            if self.config.filter_duplicates:
                pool = list({c.path_text: c for c in reversed(pool)}.values())
                pool.sort(key=lambda c: (-c.rank_score, c.id))  # the best of each text, best first
            keep = min(group.plan.keep, math.ceil(needed / group.plan.branch)) if needed > 0 else 0
            group.kept = pool[:keep]
            # Fewer distinct beams than planned: the kept ones share the round's children (search-and-learn
            # duplicates its kept beams up to N likewise).
            group.children_each = math.ceil(keep * group.plan.branch / len(group.kept)) if group.kept else 0
            for c in group.kept:
                c.kept = True


def run_rounds(search: Search, trees: list[Tree]) -> Iterator[Tree]:
    """Rounds until every tree is done (or max_steps); yields each tree as it finishes."""
    open_trees = list(trees)
    for round_index in range(search.config.max_steps):
        started = time.perf_counter()
        children = search.expand(open_trees, round_index)
        if search.config.lookahead and round_index < search.config.max_steps - 1:
            search.look_ahead(children)
        scoring = time.perf_counter()
        search.score(children)
        scored = time.perf_counter()
        for tree in open_trees:
            search.select(tree, [node for t, node in children if t is tree])
            tree.rounds = round_index + 1
        share, verify_share = (time.perf_counter() - started) / len(open_trees), (scored - scoring) / len(open_trees)
        still = []
        for tree in open_trees:
            tree.time_s += share
            tree.verify_time_s += verify_share
            if tree.done:
                yield tree
            else:
                still.append(tree)
        open_trees = still
        if not open_trees:
            return
    yield from open_trees  # unreachable: the last round finishes every child


# --- records -----------------------------------------------------------------------------------------------
class _StepVerdicts:
    """The verifier of a search record: the beams' own step scores."""

    name = "search"
    kinds = SCORE_KINDS
    scores_by_text = False  # two beams with the same text keep their own step scores

    def __init__(self, rows: list[list[SampleScore]]):
        self.rows = rows

    def score(self, questions, prompts, outputs):
        return self.rows


def step_verdict(node: Node) -> SampleScore:
    """A finished beam's step scores as the record's score kinds (0 for a beam with no step)."""
    scores = {
        f"step_{how}": (reduce_steps(node.step_scores, how) if node.step_scores else 0.0) for how in STEP_REDUCTIONS
    }
    return SampleScore(scores, 0, "ok" if node.step_scores else "no_step")


@dataclass
class SearchBlock(StrategyBlock):
    """A finished search problem: its rounds and its tree (every node; particle filtering adds its sweeps)."""

    key = "search"
    rounds: int
    nodes: list[dict[str, Any]]
    sweeps: list[list[int]] | None = None
    """Particle filtering: the ids of each sweep's final particles."""

    def to_json(self) -> dict[str, Any]:
        line = {"rounds": self.rounds, "nodes": self.nodes}
        return line if self.sweeps is None else {**line, "sweeps": self.sweeps}


def build_records(parts, trees: Sequence[Tree], params: SamplingParams) -> list[ProblemRecord]:
    """The pipeline's records over each tree's finished beams, with compute and the tree filled in."""
    chosen = [tree.results() for tree in trees]
    samples = [[n.sample() for n in nodes] for nodes in chosen]
    compute = [
        Compute(row[0].num_prompt_tokens if row else 0, tree.generated_tokens, tree.verifier_tokens, final)
        for tree, row, final in zip(trees, samples, (sum(len(n.token_ids) for n in nodes) for nodes in chosen))
    ]
    records = parts.pipeline.records(
        [t.problem for t in trees],
        [t.prompt for t in trees],
        samples,
        params,
        verifier=_StepVerdicts([[step_verdict(n) for n in nodes] for nodes in chosen]),
        compute=compute,
    )
    for tree, nodes, record in zip(trees, chosen, records):
        for sample, node in zip(record.samples, nodes):
            sample.steps, sample.node = node.steps, node.id
            sample.step_scores = [round(s, 6) for s in node.step_scores]
        record.block = SearchBlock(tree.rounds, [n.to_json() for n in tree.nodes])
        record.time_s = round(tree.time_s, 4)
        record.verify_time_s = round(tree.verify_time_s, 4)  # its rounds' step scoring, shared like time_s
    return records


# --- new trees ---------------------------------------------------------------------------------------------
def new_trees(parts, problems: Sequence[Problem], plans: list[GroupPlan]) -> list[Tree]:
    prompts = parts.prompts.build(problems)
    trees = []
    for problem, prompt in zip(problems, prompts):
        root = Node(
            id=0,
            parent=None,
            group=-1,
            round=-1,
            step="",
            path_text="",
            steps=[],
            num_prompt_tokens=len(parts.backend.encode(prompt)),
        )
        trees.append(Tree(problem, prompt, [Group(plan, [root]) for plan in plans], [root]))
    return trees
