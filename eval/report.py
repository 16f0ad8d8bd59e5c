"""Writing curves out: curves.json (every number), curves.csv (one row per aggregation and k), a text table."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import orjson

from .compute import AXES
from .efficiency import Z_TOLERANCE
from .plots import aggregation_label

CSV_COLUMNS = (
    "label",
    "group_field",
    "group_value",
    "aggregation",
    "k",
    "exact",
    "accuracy",
    "se",
    "se_subsets",
    *AXES,
)


def write_json(curves: list[dict[str, Any]], path: str | Path) -> Path:
    path = Path(path)
    path.write_bytes(orjson.dumps({"curves": curves}, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    return path


def csv_rows(c: dict[str, Any]) -> list[dict[str, Any]]:
    """All problems first, then each group of each breakdown field (no compute columns there)."""
    rows = []
    sets = [("", "", c["aggregations"])] + [
        (field, value, group["aggregations"])
        for field, groups in c["groups"].items()
        for value, group in groups.items()
    ]
    for group_field, group_value, aggregations in sets:
        for name, entry in aggregations.items():
            for i, k in enumerate(c["k"]):
                row = {
                    "label": c["label"],
                    "group_field": group_field,
                    "group_value": group_value,
                    "aggregation": name,
                    "k": k,
                    "exact": c["exact"][i] if name != "pass@k" else True,
                    "accuracy": entry["accuracy"][i],
                    "se": entry["se"][i],
                    "se_subsets": entry["se_subsets"][i],
                }
                for axis in AXES:
                    values = entry.get("compute", {}).get(axis)
                    row[axis] = values[i] if values is not None else ""
                rows.append(row)
    return rows


def write_csv(curves: list[dict[str, Any]], path: str | Path) -> Path:
    path = Path(path)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for c in curves:
            writer.writerows(csv_rows(c))
    return path


def shown_aggregations(c: dict[str, Any], every_row: bool) -> list[str]:
    """The aggregations a table prints: every one, or pass@k and the summary's headline rows (majority, the
    headline kind's weighted and best-of-N, the likelihood baseline, the best confidence kind) at k = N."""
    if every_row:
        return list(c["aggregations"])
    from tts_engine.running.summary import headline_rows

    at_n = {name: entry["accuracy"][-1] for name, entry in c["aggregations"].items() if name != "pass@k"}
    return ["pass@k", *headline_rows(at_n, headline_of(c))]


def headline_of(c: dict[str, Any]) -> str | None:
    """The run's headline score kind (`run.headline_kind`; results of earlier versions: the first verifier,
    process or step kind)."""
    named = c["run"].get("headline_kind")
    if named:
        return named
    kinds = [name.split(":", 1)[1] for name in c["aggregations"] if name.startswith("weighted:")]
    return next((k for k in kinds if k.startswith(("verifier_", "process", "step_"))), None)


def format_table(c: dict[str, Any], every_row: bool = False) -> str:
    """Accuracy per k, efficiency ratios and verifier metrics of one curve set, as plain text: the headline
    aggregations, or `every_row`."""
    ks = c["k"]
    shown = shown_aggregations(c, every_row)
    width = max(30, *(len(aggregation_label(n)) + 2 for n in shown))
    lines = [
        f"== {c['label']}: {c['run'].get('model', 'unknown model')}, {c['num_problems_scored']} problems "
        f"with a reference, N = {c['num_samples']}, R = {c['num_subsets']} subsets per k",
        f"{'accuracy at k samples':<{width}}" + "".join(f"{k:>8}" for k in ks) + f"{'s.e.@N':>8}",
    ]
    for name, entry in c["aggregations"].items():
        if name not in shown:
            continue
        lines.append(
            f"{aggregation_label(name):<{width}}"
            + "".join(f"{a:>8.3f}" for a in entry["accuracy"])
            + f"{entry['se'][-1]:>8.3f}"
        )
    generated = c["aggregations"]["majority"]["compute"]["generated_tokens"][-1]
    lines.append(f"generated tokens per problem at k=N: {generated:,.0f}")
    lines.append(
        f"efficiency vs majority@{c['num_samples']} = {c['majority_at_n']:.3f} "
        "(compute ratio majority@N / aggregation at the same accuracy; a point estimated over random subsets "
        f"reaches it within {Z_TOLERANCE:g} of their standard errors)"
    )
    lines.append(f"{'aggregation':<{width}}{'reaches at k':>13}{'x samples':>11}{'x tokens':>10}  note")
    for name, axes in c["efficiency"].items():
        if name not in shown:
            continue
        samples, tokens = axes["samples"], axes["tokens"]
        slack = f"within {samples['tolerance']:.2g} (2 s.e. of the subsets)" if samples.get("tolerance") else ""
        note = "; ".join(text for text in (slack, samples["note"]) if text)
        lines.append(
            f"{aggregation_label(name):<{width}}{_fmt(samples['reaches_at'], 13, '.1f')}"
            f"{_fmt(samples['ratio'], 11, '.2f')}{_fmt(tokens['ratio'], 10, '.2f')}  {note}"
        )
    if len(shown) < len(c["aggregations"]):
        lines.append(
            f"({len(c['aggregations']) - len(shown)} more aggregations with --all; every one is in curves.json)"
        )
    lines.extend(format_groups(c, shown))
    lines.extend(format_kinds(c))
    lines.extend(format_verifier(c.get("verifier") or {}))
    lines.extend(format_verifier_groups(c.get("verifier_groups") or {}))
    lines.extend(f"note: {note}" for note in c["notes"])
    return "\n".join(lines)


def format_kinds(c: dict[str, Any]) -> list[str]:
    """What each score kind of the curves means, from the engine's catalogue (kinds it does not know: none)."""
    from tts_engine.verifiers import score_kinds

    catalogue = score_kinds()
    kinds = dict.fromkeys(name.split(":", 1)[1] for name in c["aggregations"] if ":" in name)
    known = [kind for kind in kinds if kind in catalogue]
    return ["score kinds:"] + [f"  {kind}: {catalogue[kind].meaning}" for kind in known] if known else []


def format_groups(c: dict[str, Any], names: list[str] | None = None) -> list[str]:
    """Accuracy at k = N of the aggregations `names` (default all) per value of each breakdown field (level,
    subject, ...)."""
    if not c["groups"]:
        return []
    names = list(c["aggregations"]) if names is None else names
    short = {
        name: name.replace("best_of_n", "bon").replace("weighted", "w").replace("verifier_", "v_") for name in names
    }
    width = max(12, *(len(s) + 1 for s in short.values()))
    lines = ["accuracy at k=N by group (w = weighted, bon = best-of-N, v_ = verifier_)"]
    for field, groups in c["groups"].items():
        lines.append(f"{field:<24}{'problems':>9}" + "".join(f"{short[n]:>{width}}" for n in names))
        for value, group in groups.items():
            cells = "".join(f"{group['aggregations'][n]['accuracy'][-1]:>{width}.3f}" for n in names)
            lines.append(f"  {value:<22}{group['num_problems']:>9}" + cells)
    return lines


def format_verifier(metrics: dict[str, Any]) -> list[str]:
    if not metrics:
        return []
    threshold = next(iter(metrics.values()))["threshold"]
    lines = [
        f"verifier metrics per sample (threshold {threshold:g}; right = accepted right samples, "
        "wrong = rejected wrong samples)",
        f"{'score kind':<22}{'samples':>9}{'right':>8}{'wrong':>8}{'balanced':>10}{'AUROC':>8}"
        f"{'AUROC/pb':>10}{'ECE':>8}",
    ]
    for kind, m in metrics.items():
        lines.append(
            f"{kind:<22}{m['num_samples']:>9}{_fmt(m['accuracy_on_right'], 8, '.3f')}"
            f"{_fmt(m['accuracy_on_wrong'], 8, '.3f')}{_fmt(m['balanced_accuracy'], 10, '.3f')}"
            f"{_fmt(m['auroc'], 8, '.3f')}{_fmt(m['auroc_within_problem'], 10, '.3f')}"
            f"{_fmt(m['calibration']['ece'], 8, '.3f')}"
        )
    lines.append("(AUROC/pb: mean AUROC within a problem, over problems with both right and wrong samples)")
    return lines


def format_verifier_groups(groups: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Within-problem AUROC of every score kind per value of each breakdown field: where a verifier ranks."""
    lines = []
    for field_name, values in groups.items():
        kinds = list(next(iter(values.values())))
        width = max(10, *(len(kind) + 2 for kind in kinds))
        lines.append(f"within-problem AUROC by {field_name} (problems with right and wrong samples)")
        lines.append(f"  {field_name:<12}{'problems':>9}" + "".join(f"{kind:>{width}}" for kind in kinds))
        for value, metrics in values.items():
            both = next(iter(metrics.values()))["problems_with_both"]
            cells = "".join(_fmt(metrics[kind]["auroc_within_problem"], width, ".3f") for kind in kinds)
            lines.append(f"  {value:<12}{both:>9}" + cells)
    return lines


def _fmt(value: float | None, width: int, spec: str) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{spec}}"


def write_axes(view: dict[str, Any], path: Path) -> Path:
    """axes.json: the parallel, sequential and joint points, frontiers and gains (`eval/axes.py`)."""
    path.write_bytes(orjson.dumps(view, option=orjson.OPT_INDENT_2))
    return path
