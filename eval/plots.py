"""PNG plots of curves: accuracy against samples per problem and against tokens per problem.

One colour per score kind (weighted solid, best-of-N dashed; majority black; pass@k a grey dotted oracle
line), one marker shape and shade (later files lighter) per results file, a shaded band of +-1 standard
error, and a dashed horizontal line at majority@N with a cross where the best weighted and best-of-N lines
reach it, their efficiency ratios written in the corner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from .curves import PASS_AT_K  # noqa: E402

PLOTS = {
    "samples": ("samples per problem (k, log2)", "accuracy_vs_samples.png"),
    "tokens": ("tokens per problem: generated + read by the verifier (log scale)", "accuracy_vs_tokens.png"),
    "flops": ("FLOPs per problem, 2 x parameters x tokens (log scale)", "accuracy_vs_flops.png"),
}
MARKERS = ("o", "s", "^", "D", "v", "P")


def aggregation_label(name: str) -> str:
    """`weighted:verifier_yes_no` -> `weighted (verifier_yes_no)`, for legends and tables."""
    if name == PASS_AT_K:
        return "pass@k (oracle: any sample right)"
    if ":" in name:
        aggregation, kind = name.split(":", 1)
        suffix = " - free baseline" if kind == "likelihood" else ""
        return f"{aggregation.replace('_', '-')} ({kind}){suffix}"
    return name


def line_styles(names: list[str]) -> dict[str, tuple[Any, str]]:
    """Strategy -> (colour, line style): one colour per score kind, weighted solid, best-of-N dashed;
    majority black, pass@k grey dotted."""
    kinds = list(dict.fromkeys(name.split(":", 1)[1] for name in names if ":" in name))
    kinds.sort(key=lambda kind: kind != "likelihood")  # the free baseline always gets the first colour
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i not in (7,)]  # no grey
    colour = {kind: palette[(i + 1) % len(palette)] for i, kind in enumerate(kinds)}
    styles = {"majority": ("black", "-"), PASS_AT_K: ("0.55", ":")}
    for name in names:
        if ":" in name:
            aggregation, kind = name.split(":", 1)
            styles[name] = (colour[kind], "-" if aggregation == "weighted" else "--")
    return styles


def shown(name: str, only: list[str] | None) -> bool:
    """Majority and pass@k always; other aggregations when a word of `only` is part of the name (or no `only`)."""
    return name in ("majority", PASS_AT_K) or not only or any(word in name for word in only)


def plot_curves(
    curves: list[dict[str, Any]],
    axis: str,
    path: str | Path,
    *,
    title: str | None = None,
    only: list[str] | None = None,
) -> Path | None:
    """Draw accuracy vs `axis` (samples, tokens or flops) for one or more curve sets; None if the axis is absent.

    only: draw just the aggregations whose names contain one of these words (e.g. ["verifier_yes_no"]).
    """
    if axis not in PLOTS:
        raise ValueError(f"axis must be one of {sorted(PLOTS)}, got {axis!r}")
    if any(c["aggregations"]["majority"]["compute"][axis] is None for c in curves):
        return None
    styles = line_styles(list(dict.fromkeys(name for c in curves for name in c["aggregations"])))
    many = len(curves) * len(curves[0]["aggregations"]) > 9
    fig, ax = plt.subplots(figsize=(13 if many else 10, 6.2), dpi=110)
    notes = []
    for index, c in enumerate(curves):
        prefix = f"{c['label']}: " if len(curves) > 1 else ""
        for name, entry in c["aggregations"].items():
            if not shown(name, only):
                continue
            colour, style = styles[name]
            colour = _lighten(colour, 0.45 * index / max(1, len(curves) - 1)) if len(curves) > 1 else colour
            _draw_line(
                ax,
                entry,
                axis,
                colour,
                style,
                MARKERS[index % len(MARKERS)],
                prefix + aggregation_label(name),
                faint=name == PASS_AT_K,
            )
        notes.append(
            _draw_target(
                ax,
                {**c, "efficiency": {n: e for n, e in c["efficiency"].items() if shown(n, only)}},
                axis,
                prefix,
                styles,
            )
        )
    _format_axes(ax, curves, axis)
    ax.set_title(title or default_title(curves), fontsize=11)
    if many:  # beside the axes, so no line hides behind it
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
    else:
        ax.legend(fontsize=8, loc="lower right", framealpha=0.9)
    ax.text(
        0.01,
        0.99,
        "\n".join(notes),
        transform=ax.transAxes,
        fontsize=8,
        va="top",
        ha="left",
        bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.7", "alpha": 0.92},
    )
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def _lighten(colour, amount: float):
    """Blend a colour towards white: later results files are drawn lighter than the first."""
    from matplotlib.colors import to_rgb

    return tuple(c + (1.0 - c) * amount for c in to_rgb(colour))


def _draw_line(ax, entry, axis, colour, style, marker, label, faint):
    x = entry["compute"][axis]
    y, se = entry["accuracy"], entry["se"]
    ax.plot(
        x, y, linestyle=style, marker=marker, markersize=3.5, color=colour, linewidth=1.3 if faint else 1.8, label=label
    )
    ax.fill_between(
        x,
        [a - s for a, s in zip(y, se)],
        [a + s for a, s in zip(y, se)],
        color=colour,
        alpha=0.06 if faint else 0.13,
        linewidth=0,
    )


def _draw_target(ax, c, axis, prefix, styles) -> str:
    """Dashed line at majority@N, a cross where the best weighted and best best-of-N lines reach it; their
    efficiency ratios as text."""
    target = c["majority_at_n"]
    ax.axhline(target, color="black", linestyle=(0, (5, 4)), linewidth=0.9, alpha=0.7)
    if prefix:  # several files: name each dashed line at its right end
        ax.annotate(
            f"{prefix}majority@{c['num_samples']}",
            xy=(1.0, target),
            xycoords=("axes fraction", "data"),
            xytext=(-3, 2),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=7,
            color="0.3",
        )
    unit = {"samples": "fewer samples", "tokens": "fewer tokens", "flops": "fewer FLOPs"}[axis]
    lines = [f"{prefix}dashed line: majority@{c['num_samples']} = {target:.3f}"]
    if target <= 0:
        return lines[0] + "\n  no efficiency ratio: majority@N is 0"
    for aggregation in ("weighted", "best_of_n"):
        best = best_efficiency(c, axis, aggregation)
        if best is None:
            lines.append(f"  {aggregation.replace('_', '-')}: no score kind reaches it")
            continue
        name, entry = best
        ax.plot(
            [entry["reaches_at"]],
            [target],
            marker="X",
            markersize=9,
            color=styles[name][0],
            markeredgecolor="black",
            linestyle="none",
            zorder=5,
        )
        lines.append(f"  {aggregation_label(name)} reaches it (X) with {entry['ratio']:.1f}x {unit}")
    return "\n".join(lines)


def best_efficiency(c: dict[str, Any], axis: str, aggregation: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """The aggregation (not majority; of one kind if given) with the largest efficiency ratio on `axis`, or None."""
    found = [
        (name, e[axis])
        for name, e in c["efficiency"].items()
        if name != "majority" and e[axis]["ratio"] and (aggregation is None or name.startswith(aggregation + ":"))
    ]
    return max(found, key=lambda item: item[1]["ratio"]) if found else None


def _format_axes(ax, curves, axis):
    ax.set_xscale("log", base=2 if axis == "samples" else 10)
    if axis == "samples":
        ks = sorted({k for c in curves for k in c["k"]})
        ax.xaxis.set_major_locator(FixedLocator(ks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(PLOTS[axis][0])
    ax.set_ylabel("accuracy (fraction of problems right; ±1 s.e. shaded)")
    ax.grid(True, which="major", alpha=0.3)
    low, high = ax.get_ylim()
    ax.set_ylim(max(-0.02, low), min(1.02, max(high, low + 0.05)))  # lines at 0 or 1 stay off the frame


def default_title(curves: list[dict[str, Any]]) -> str:
    first = curves[0]
    model = first["run"].get("model", "unknown model")
    if len(curves) == 1:
        return (
            f"{model} on {first['label']}: {first['num_problems_scored']} problems, "
            f"N = {first['num_samples']} samples each"
        )
    return "Accuracy vs compute: " + ", ".join(c["label"] for c in curves)


def plot_calibration(curves: list[dict[str, Any]], path: str | Path) -> Path | None:
    """Reliability diagram: fraction of right samples against mean score per bin, one line per score kind."""
    kinds = [(c, kind, m) for c in curves for kind, m in (c.get("verifier") or {}).items() if m["num_samples"]]
    if not kinds:
        return None
    styles = line_styles([f"weighted:{kind}" for _, kind, _ in kinds])
    fig, ax = plt.subplots(figsize=(7, 6.2), dpi=110)
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="perfect calibration")
    for c, kind, m in kinds:
        bins = [b for b in m["calibration"]["bins"] if b["count"]]
        index = curves.index(c)
        prefix = f"{c['label']}: " if len(curves) > 1 else ""
        colour = _lighten(styles[f"weighted:{kind}"][0], 0.45 * index / max(1, len(curves) - 1))
        ece, auc = m["calibration"]["ece"], m["auroc"]
        label = f"{prefix}{kind} (ECE {ece:.3f}, AUROC {auc:.3f})" if auc is not None else f"{prefix}{kind}"
        ax.plot(
            [b["mean_score"] for b in bins],
            [b["fraction_right"] for b in bins],
            marker=MARKERS[index % len(MARKERS)],
            markersize=4,
            color=colour,
            label=label,
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(f"mean score in the bin ({len(kinds[0][2]['calibration']['bins'])} equal-width bins)")
    ax.set_ylabel("fraction of the bin's samples that are right")
    ax.set_title(f"Score calibration per sample: {', '.join(c['label'] for c in curves)}", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def write_plots(
    curves: list[dict[str, Any]], out_dir: str | Path, *, title: str | None = None, only: list[str] | None = None
) -> list[Path]:
    """accuracy_vs_samples.png, accuracy_vs_tokens.png, accuracy_vs_flops.png (with a parameter count) and
    verifier_calibration.png (with scores and references)."""
    written = []
    for axis, (_, name) in PLOTS.items():
        path = plot_curves(curves, axis, Path(out_dir) / name, title=title, only=only)
        if path is not None:
            written.append(path)
    calibration = plot_calibration(curves, Path(out_dir) / "verifier_calibration.png")
    if calibration is not None:
        written.append(calibration)
    return written


def plot_reliability(lines: list[tuple[str, dict[str, Any]]], path: str | Path, title: str) -> Path | None:
    """Reliability diagram of answers: fraction right against mean probability per bin, one line per (label,
    `tts_engine.pipeline.metrics.reliability` result); empty bins are left out."""
    lines = [(label, r) for label, r in lines if any(b["count"] for b in r["bins"])]
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 6), dpi=110)
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="perfect calibration")
    for index, (label, r) in enumerate(lines):
        bins = [b for b in r["bins"] if b["count"]]
        ax.plot(
            [b["mean_score"] for b in bins],
            [b["fraction_right"] for b in bins],
            marker=MARKERS[index % len(MARKERS)],
            markersize=4,
            label=f"{label} (ECE {r['ece']:.3f})",
        )
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean probability in the bin", ylabel="fraction of the bin's answers right")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    return _save(fig, path)


def plot_risk_coverage(
    lines: list[tuple[str, dict[str, list[float]], float]], path: str | Path, title: str
) -> Path | None:
    """Risk-coverage curves: the share of wrong answers among the most trusted ones against the share answered, one
    line per (label, `tts_engine.pipeline.metrics.risk_coverage` result, AURC)."""
    lines = [line for line in lines if line[1]["coverage"]]
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(6.8, 5.2), dpi=110)
    for label, curve, area in lines:
        ax.step(curve["coverage"], curve["risk"], where="post", label=f"{label} (AURC {area:.3f})")
    ax.set(xlim=(0, 1), ylim=(0, None), xlabel="coverage: share of problems answered, most trusted first")
    ax.set_ylabel("risk: share of the answered that are wrong")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_axes(view: dict[str, Any], path: str | Path) -> Path:
    """Accuracy against tokens per problem: every (file, k) point, and the parallel, sequential and joint
    frontiers (`eval/axes.py`)."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    labels = sorted({p["label"] for p in view["points"]})
    colours = plt.get_cmap("viridis")
    for i, label in enumerate(labels):
        mine = [p for p in view["points"] if p["label"] == label]
        ax.scatter([p["tokens"] for p in mine], [p["accuracy"] for p in mine], s=14, alpha=0.6,
                   color=colours(i / max(1, len(labels) - 1)), label=label)  # fmt: skip
    for name, style in (("parallel", ":"), ("sequential", "--"), ("joint", "-")):
        front = view["frontiers"][name]
        if front:
            ax.step([p["tokens"] for p in front], [p["accuracy"] for p in front], where="post",
                    linestyle=style, color="black", linewidth=1.4, label=f"{name} frontier")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("tokens per problem (generated + verifier)")
    ax.set_ylabel("accuracy (headline vote)")
    ax.set_title("Parallel, sequential and joint compute")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
