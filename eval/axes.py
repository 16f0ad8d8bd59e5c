"""Compute on two axes: parallel (more samples) and sequential (a longer trace), and both at once.

Given results files of one model at several thinking budgets (`thinking-budget`, `budget-forcing`, `probe`) and,
optionally, one without a budget (`fixed`: its traces end on their own), every (file, k) of the curves is a point:
tokens per problem (k samples at the file's cost per sample, generated and verifier tokens, probes included)
against the accuracy of the headline vote with k samples. The points of the unbudgeted file are the parallel axis,
the budgeted files' k = 1 points the sequential axis, and all points together the joint one. Each axis's frontier
is its best accuracy at each cost (the points no cheaper point beats), and the joint frontier is compared with each
axis alone at equal tokens.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from tts_engine.pipeline.aggregate import headline_vote


@dataclass(frozen=True)
class Point:
    label: str
    budget: int | None
    """The file's thinking budget (None: traces end on their own)."""
    k: int
    tokens: float
    accuracy: float


def budget_of(run: dict[str, Any]) -> int | None:
    """A run's thinking budget (None for a strategy that does not cap the trace)."""
    return (run.get("thinking") or {}).get("thinking_budget")


def cost_per_sample(records: Sequence[dict[str, Any]]) -> float:
    """Mean tokens a sample cost (generated, probes and verifier), over the solved problems."""
    costs = [
        (r["compute"]["generated_tokens"] + r["compute"]["verifier_tokens"]) / len(r["samples"])
        for r in records
        if r.get("samples") and "compute" in r  # results written before records counted compute have none
    ]
    return sum(costs) / len(costs) if costs else 0.0


def points(curves: Sequence[dict[str, Any]], records: Sequence[Sequence[dict[str, Any]]]) -> list[Point]:
    """Every (file, k) point: tokens per problem and the headline vote's accuracy with k samples."""
    out = []
    for curve, recs in zip(curves, records):
        run = curve.get("run") or {}
        key = headline_vote(run.get("headline_kind"))
        key = key if key in curve["aggregations"] else "majority"
        cost = cost_per_sample(recs)
        for k, accuracy in zip(curve["k"], curve["aggregations"][key]["accuracy"]):
            out.append(Point(curve["label"], budget_of(run), k, k * cost, accuracy))
    return out


def frontier(candidates: Sequence[Point]) -> list[Point]:
    """The points no cheaper (or equally cheap) point matches in accuracy, cheapest first."""
    best, out = -1.0, []
    for p in sorted(candidates, key=lambda p: (p.tokens, -p.accuracy)):
        if p.accuracy > best:
            out.append(p)
            best = p.accuracy
    return out


def best_within(front: Sequence[Point], tokens: float) -> float | None:
    """The frontier's best accuracy at no more than `tokens` (None: it has no point that cheap)."""
    within = [p.accuracy for p in front if p.tokens <= tokens * (1 + 1e-9)]
    return max(within) if within else None


def axes_view(curves: Sequence[dict[str, Any]], records: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any] | None:
    """The three axes' points and frontiers, and the joint frontier's gain over each axis alone at its points'
    tokens; None unless the files hold at least one thinking budget and another run to compare it with."""
    if len(curves) < 2 or not any(budget_of(c.get("run") or {}) is not None for c in curves):
        return None
    every = points(curves, records)
    parallel = [p for p in every if p.budget is None]
    sequential = [p for p in every if p.budget is not None and p.k == 1]
    axes = {"parallel": frontier(parallel), "sequential": frontier(sequential), "joint": frontier(every)}
    gains = []
    for p in axes["joint"]:
        row = {"tokens": round(p.tokens, 1), "joint": round(p.accuracy, 4), "at": f"{p.label} k={p.k}"}
        for axis in ("parallel", "sequential"):
            alone = best_within(axes[axis], p.tokens)
            row[axis] = round(alone, 4) if alone is not None else None
        gains.append(row)
    return {
        "points": [asdict(p) for p in every],
        "frontiers": {name: [asdict(p) for p in front] for name, front in axes.items()},
        "gains": gains,
    }


def format_axes(view: dict[str, Any] | None) -> list[str]:
    """The joint frontier against each axis alone, at the frontier's own points."""
    if not view:
        return []
    out = ["parallel vs sequential vs joint (accuracy of the headline vote at no more than these tokens / problem):"]
    out.append(f"  {'tokens':>9}  {'joint':>6}  {'parallel':>8}  {'sequential':>10}  joint frontier point")
    for g in view["gains"]:
        par = "-" if g["parallel"] is None else f"{g['parallel']:.3f}"
        seq = "-" if g["sequential"] is None else f"{g['sequential']:.3f}"
        out.append(f"  {g['tokens']:>9.1f}  {g['joint']:>6.3f}  {par:>8}  {seq:>10}  {g['at']}")
    return out
