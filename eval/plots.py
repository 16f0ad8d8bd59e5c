"""PNG plots of curves: accuracy against samples per problem and against tokens per problem.

One line per strategy (colour) and results file (line style), a shaded band of +-1 standard error, pass@k
as a dotted oracle line, and a dashed horizontal line at majority@N annotated with the efficiency ratio of
the best strategy.
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
    "tokens": ("tokens per problem, generated + verifier (log scale)", "accuracy_vs_tokens.png"),
    "flops": ("FLOPs per problem, 2 x parameters x tokens (log scale)", "accuracy_vs_flops.png"),
}
LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P")


def strategy_label(name: str) -> str:
    """`weighted:verifier_yes_no` -> `weighted (verifier_yes_no)`, for legends and tables."""
    if name == PASS_AT_K:
        return "pass@k (oracle: any sample right)"
    if ":" in name:
        strategy, kind = name.split(":", 1)
        suffix = " - free baseline" if kind == "likelihood" else ""
        return f"{strategy.replace('_', '-')} ({kind}){suffix}"
    return name


def _colours(names: list[str]) -> dict[str, Any]:
    cycle = plt.get_cmap("tab10").colors
    ordered = [n for n in names if n != PASS_AT_K]
    colours = {name: cycle[i % len(cycle)] for i, name in enumerate(ordered)}
    colours[PASS_AT_K] = "0.55"
    return colours


def plot_curves(curves: list[dict[str, Any]], axis: str, path: str | Path, *, title: str | None = None) -> Path | None:
    """Draw accuracy vs `axis` (samples, tokens or flops) for one or more curve sets; None if the axis is absent."""
    if axis not in PLOTS:
        raise ValueError(f"axis must be one of {sorted(PLOTS)}, got {axis!r}")
    if any(c["strategies"]["majority"]["compute"][axis] is None for c in curves):
        return None
    names = list(dict.fromkeys(name for c in curves for name in c["strategies"]))
    colours = _colours(names)
    fig, ax = plt.subplots(figsize=(9.5, 6.0), dpi=110)
    for index, c in enumerate(curves):
        style = LINE_STYLES[index % len(LINE_STYLES)]
        prefix = f"{c['label']}: " if len(curves) > 1 else ""
        for name, entry in c["strategies"].items():
            _draw_line(ax, entry, axis, colours[name], style, MARKERS[index % len(MARKERS)],
                       prefix + strategy_label(name), dotted=name == PASS_AT_K)
        _draw_target(ax, c, axis, prefix, style)
    _format_axes(ax, curves, axis)
    ax.set_title(title or default_title(curves), fontsize=11)
    ax.legend(fontsize=8, loc="lower right", framealpha=0.9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def _draw_line(ax, entry, axis, colour, style, marker, label, dotted):
    x = entry["compute"][axis]
    y, se = entry["accuracy"], entry["se"]
    ax.plot(x, y, linestyle=":" if dotted else style, marker=marker, markersize=3.5, color=colour,
            linewidth=1.3 if dotted else 1.8, label=label)
    ax.fill_between(x, [a - s for a, s in zip(y, se)], [a + s for a, s in zip(y, se)], color=colour,
                    alpha=0.08 if dotted else 0.15, linewidth=0)


def _draw_target(ax, c, axis, prefix, style):
    """Dashed line at majority@N, annotated with the best strategy's efficiency ratio on this axis."""
    target = c["majority_at_n"]
    ax.axhline(target, color="black", linestyle="--", linewidth=0.9, alpha=0.7)
    ratio_axis = "samples" if axis == "samples" else axis
    text = f"{prefix}majority@{c['num_samples']} = {target:.3f}"
    best = best_efficiency(c, ratio_axis)
    if best is not None:
        name, entry = best
        unit = {"samples": "fewer samples", "tokens": "fewer tokens", "flops": "fewer FLOPs"}[ratio_axis]
        text += f"\n{strategy_label(name)} reaches it with {entry['ratio']:.1f}x {unit}"
    xs = c["strategies"]["majority"]["compute"][axis]
    ax.annotate(text, xy=(xs[0], target), xytext=(4, 5), textcoords="offset points", fontsize=8,
                va="bottom", ha="left", bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.7", "alpha": 0.9})


def best_efficiency(c: dict[str, Any], axis: str) -> tuple[str, dict[str, Any]] | None:
    """The strategy (not majority) with the largest efficiency ratio on `axis`, or None if none reaches."""
    found = [(name, e[axis]) for name, e in c["efficiency"].items() if name != "majority" and e[axis]["ratio"]]
    return max(found, key=lambda item: item[1]["ratio"]) if found else None


def _format_axes(ax, curves, axis):
    ax.set_xscale("log", base=2 if axis == "samples" else 10)
    if axis == "samples":
        ks = sorted({k for c in curves for k in c["k"]})
        ax.xaxis.set_major_locator(FixedLocator(ks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(PLOTS[axis][0])
    ax.set_ylabel("accuracy (fraction of problems right, +-1 s.e. shaded)")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_ylim(bottom=max(0.0, ax.get_ylim()[0]), top=min(1.0, ax.get_ylim()[1]) + 0.0)


def default_title(curves: list[dict[str, Any]]) -> str:
    first = curves[0]
    model = first["run"].get("model", "unknown model")
    if len(curves) == 1:
        return (f"{model} on {first['label']}: {first['num_problems_scored']} problems, "
                f"N = {first['num_samples']} samples each")
    return f"Accuracy vs compute: " + ", ".join(c["label"] for c in curves)


def write_plots(curves: list[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """accuracy_vs_samples.png, accuracy_vs_tokens.png and (with a parameter count) accuracy_vs_flops.png."""
    written = []
    for axis, (_, name) in PLOTS.items():
        path = plot_curves(curves, axis, Path(out_dir) / name)
        if path is not None:
            written.append(path)
    return written
