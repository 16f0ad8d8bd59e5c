"""Compute-vs-accuracy curves of every aggregation from one results table: the numbers behind `tts curve`.

For k = 1, 2, 4, ..., N: pass@k (exact, Chen et al.), and majority / weighted / best-of-N accuracy with k
samples, the expectation over k-subsets of the N samples: exact over every subset when C(N, k) <= R, else
estimated from R seeded random subsets per problem. Standard errors: `se` is the spread across problems,
std(per-problem estimates) / sqrt(P), which also holds the subset-sampling noise; `se_subsets` is that
noise alone, sqrt(sum_p a_p (1 - a_p) / (R - 1)) / P (0 where every subset was used).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .compute import compute_axes
from .efficiency import efficiency_ratio
from .pass_at_k import pass_at_k
from .prefix_voting import prefix_vote_accuracy
from .subsets import SubsetDrawer, is_enumerated, subset_sizes, subsets_per_k
from .table import ResultsTable
from .voting import aggregation_names, vote_accuracy_chunked

PASS_AT_K = "pass@k"
IMPLS = ("auto", "prefix", "torch", "triton")
EFFICIENCY_AXES = ("samples", "generated_tokens", "tokens", "flops")


def per_problem_accuracy(
    table: ResultsTable, ks: list[int], *, num_subsets: int = 1000, seed: int = 0, impl: str = "auto"
) -> dict[str, np.ndarray]:
    """Strategy (and pass@k) -> (K, P) accuracy per k and problem.

    impl: "prefix" walks the nested random subsets once on the CPU (prefix_voting.py); "torch" / "triton"
    vote every subset with tts_engine.kernels.subset_vote; "auto" takes the kernel on a GPU, else "prefix".
    """
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    n, p = table.num_samples, table.num_problems
    drawer = SubsetDrawer(table.ids, n, num_subsets, seed)
    rows = np.arange(p)[:, None]
    right = table.class_correct[rows, np.maximum(table.class_ids, 0)] & (table.class_ids >= 0)  # (P, N)
    num_correct = right.sum(axis=1)  # (P,)
    names = [PASS_AT_K] + aggregation_names(list(table.scores))
    out = {name: np.zeros((len(ks), p)) for name in names}
    use_prefix = impl == "prefix" or (impl == "auto" and not torch.cuda.is_available())
    walked = _walk_subsets(table, drawer, ks) if use_prefix else {}
    for i, k in enumerate(ks):
        out[PASS_AT_K][i] = pass_at_k(num_correct, n, k)
        votes = walked.get(k)
        if votes is None:
            votes = vote_accuracy_chunked(
                table.class_ids,
                table.class_correct,
                table.scores,
                lambda r, k=k: drawer.subsets(k, r),
                subsets_per_k(n, k, num_subsets),
                k,
                impl=impl,
            )
        for name, values in votes.items():
            out[name][i] = values
    return out


def _walk_subsets(table: ResultsTable, drawer: SubsetDrawer, ks: list[int]) -> dict[int, dict[str, np.ndarray]]:
    """k -> aggregation -> (P,) by prefix walks: one along the R random orders for every sampled k (their
    prefixes), and one over all C(N, k) subsets for each enumerated k."""
    sampled = [k for k in ks if not is_enumerated(drawer.n, k, drawer.num_subsets)]
    args = (table.class_ids, table.class_correct, table.scores)
    walked = prefix_vote_accuracy(*args, *drawer.plan(max(sampled)), sampled) if sampled else {}
    for k in ks:
        if k not in walked:
            walked.update(prefix_vote_accuracy(*args, *drawer.plan(k), [k]))
    return walked


def summarize_rows(values: np.ndarray, num_drawn: list[int], exact: list[bool]) -> dict[str, list[float]]:
    """Mean accuracy, se across problems, and se of the subset sampling, for (K, P) per-problem values."""
    p = values.shape[1]
    mean = values.mean(axis=1)
    se = values.std(axis=1, ddof=1) / np.sqrt(p) if p > 1 else np.zeros(len(values))
    noise = [
        0.0 if ex or r < 2 else float(np.sqrt((row * (1 - row)).sum() / (r - 1)) / p)
        for row, r, ex in zip(values, num_drawn, exact)
    ]
    return {"accuracy": mean.tolist(), "se": se.tolist(), "se_subsets": noise}


def compute_curves(
    table: ResultsTable, *, num_subsets: int = 1000, seed: int = 0, impl: str = "auto", label: str = "results"
) -> dict[str, Any]:
    """Every number of the curves of one results table, JSON-ready (see docs/curves.md for the layout)."""
    notes = list(table.notes)
    scored = table.select(table.has_reference)
    if scored.num_problems == 0:
        raise ValueError(f"{label}: no problem has a reference answer, so no accuracy curve can be drawn")
    if scored.num_problems < table.num_problems:
        notes.append(f"{table.num_problems - scored.num_problems} problems without a reference left out")
    n = scored.num_samples
    ks = subset_sizes(n)
    if (table.run or {}).get("search"):
        ks = [n]  # k of a search's N finished beams is not a search with budget k
        notes.append(
            f"step-level search ({table.run['search'].get('strategy', 'search')}): only k = N = {n} is a search "
            "budget; overlay runs at several N for its curve"
        )
    exact = [is_enumerated(n, k, num_subsets) for k in ks]
    num_drawn = [subsets_per_k(n, k, num_subsets) for k in ks]
    accuracy = per_problem_accuracy(scored, ks, num_subsets=num_subsets, seed=seed, impl=impl)
    aggregations = {}
    for name, values in accuracy.items():
        entry = summarize_rows(values, num_drawn, [True] * len(ks) if name == PASS_AT_K else exact)
        entry["compute"] = compute_axes(
            name, ks, scored.num_tokens, scored.verifier_tokens, scored.num_parameters, scored.text_ids
        )
        aggregations[name] = entry
    return {
        "label": label,
        "run": table.run,
        "num_problems": table.num_problems,
        "num_problems_scored": scored.num_problems,
        "num_samples": n,
        "num_subsets": num_subsets,
        "seed": seed,
        "k": ks,
        "exact": exact,
        "subsets_per_k": num_drawn,
        "aggregations": aggregations,
        "majority_at_n": aggregations["majority"]["accuracy"][-1],
        "efficiency": efficiency_table(aggregations),
        "groups": group_breakdown(scored, accuracy, num_drawn, exact),
        "problems": [
            {
                "id": pid,
                "fields": fields,
                "accuracy": {name: values[:, j].tolist() for name, values in accuracy.items()},
            }
            for j, (pid, fields) in enumerate(zip(scored.ids, scored.fields))
        ],
        "notes": notes,
    }


def efficiency_table(aggregations: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Strategy -> axis -> efficiency ratio against majority@N (pass@k is an oracle and has none)."""
    majority = aggregations["majority"]
    target = majority["accuracy"][-1]
    table = {}
    for name, entry in aggregations.items():
        if name == PASS_AT_K:
            continue
        table[name] = {}
        for axis in EFFICIENCY_AXES:
            compute, reference = entry["compute"][axis], majority["compute"][axis]
            if compute is None or reference is None:
                table[name][axis] = {"reaches_at": None, "ratio": None, "note": "no parameter count in the run"}
                continue
            result = efficiency_ratio(compute, entry["accuracy"], target, reference[-1], entry.get("se_subsets"))
            if name == "majority" and result["ratio"] and result["ratio"] > 1 + 1e-9 and not result["note"]:
                result["note"] = "majority's own curve reaches its k=N accuracy before N (flat or noisy near N)"
            table[name][axis] = result
    return table


def group_breakdown(
    table: ResultsTable, accuracy: dict[str, np.ndarray], num_drawn: list[int], exact: list[bool]
) -> dict[str, dict[str, Any]]:
    """Field -> value -> {num_problems, aggregations: name -> accuracy/se per k}, for short categorical fields."""
    return {
        field_name: {
            value: {
                "num_problems": int(mask.sum()),
                "aggregations": {
                    name: summarize_rows(per[:, mask], num_drawn, [True] * len(exact) if name == PASS_AT_K else exact)
                    for name, per in accuracy.items()
                },
            }
            for value, mask in groups.items()
        }
        for field_name, groups in table.group_masks().items()
    }
