"""The selective view of a run: how well each vote's p_correct (and its `confidence`, the vote share) tells the
answers that are right from those that are not. Risk-coverage curves and AURC, reliability (ECE), AUROC and the
share of wrong answers trusted at p >= .9, per vote: majority, weighted by every score kind, and best-of-N by the
headline kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tts_engine.pipeline.aggregate import headline_vote
from tts_engine.pipeline.metrics import answer_metrics, reliability, risk_coverage
from tts_engine.running.results import record_status

SIGNALS = ("p_correct", "confidence")


def vote_signals(records: Sequence[dict[str, Any]], key: str) -> dict[str, np.ndarray]:
    """`# (A,)` arrays over the graded problems whose records carry vote `key`: each signal and whether the answer is
    right (a problem with no answer counts, as wrong, with probability 0)."""
    rows = [
        r["aggregations"][key]
        for r in records
        if record_status(r) == "ok" and r.get("reference") is not None and key in r.get("aggregations", {})
    ]
    rows = [v for v in rows if v.get("p_correct") is not None]
    out = {name: np.array([float(v[name]) for v in rows]) for name in SIGNALS}
    out["correct"] = np.array([bool(v["correct"]) for v in rows])
    return out


def selective_keys(records: Sequence[dict[str, Any]]) -> tuple[str | None, list[str]]:
    """(the headline vote, the votes shown): majority, weighted by every score kind, best-of-N by the headline."""
    ok = [r for r in records if record_status(r) == "ok" and r.get("samples")]
    if not ok:
        return None, []
    kind = ok[0].get("run", {}).get("headline_kind")
    kinds = list(ok[0]["samples"][0]["scores"])
    keys = ["majority", *(f"weighted:{k}" for k in kinds), *([f"best_of_n:{kind}"] if kind else [])]
    return headline_vote(kind), [k for k in keys if k in ok[0].get("aggregations", {})]


def selective_view(records: Sequence[dict[str, Any]], num_bins: int = 10) -> dict[str, Any]:
    """Vote key -> signal -> metrics, reliability bins and the risk-coverage curve; empty when the records carry no
    p_correct (written before it existed) or no references."""
    headline, keys = selective_keys(records)
    votes = {}
    for key in keys:
        signals = vote_signals(records, key)
        if not signals["correct"].size:
            continue
        votes[key] = {
            name: {
                **answer_metrics(signals[name], signals["correct"], num_bins),
                "reliability": reliability(signals[name], signals["correct"], num_bins),
                "risk_coverage": risk_coverage(signals[name], signals["correct"]),
            }
            for name in SIGNALS
        }
    calibration = next((r["run"].get("calibration") for r in records if "run" in r), None)
    return {"headline": headline, "calibration": calibration, "votes": votes} if votes else {}


def format_selective(view: dict[str, Any]) -> list[str]:
    """The selective table: per vote and signal, ECE, AUROC, AURC and the wrong answers at p >= .9."""
    if not view:
        return []
    out = [
        f"can these answers be trusted? p_correct: {view['calibration']}",
        f"{'vote':<34}{'signal':<12}{'ECE':>7}{'AUROC':>7}{'AURC':>7}{'wrong>=.9':>10}{'right<.5':>10}",
    ]
    for key, signals in view["votes"].items():
        mark = " *" if key == view["headline"] else ""
        for name, m in signals.items():
            out.append(
                f"{key + mark:<34}{name:<12}{_f(m['ece']):>7}{_f(m['auroc']):>7}{_f(m['aurc']):>7}"
                f"{_f(m['wrong_at_90']):>10}{_f(m['right_below_50']):>10}"
            )
    out.append("  * the headline vote; AURC: mean risk over coverages (lower is better); wrong>=.9: share of wrong")
    out.append("    answers given p >= .9; right<.5: share of right answers below .5 (what --abstain-below 0.5")
    out.append("    withholds); confidence: the vote's share of the scores")
    return out


def selective_plots(view: dict[str, Any], out_dir: str | Path, label: str, suffix: str = "") -> list[Path]:
    """risk_coverage{suffix}.png (every vote's p_correct, and the headline's confidence) and reliability{suffix}.png
    (the headline's p_correct and confidence)."""
    from .plots import plot_reliability, plot_risk_coverage

    if not view or view["headline"] not in view["votes"]:
        return []
    head = view["votes"][view["headline"]]
    lines = [
        (f"{key}: p_correct", v["p_correct"]["risk_coverage"], v["p_correct"]["aurc"])
        for key, v in view["votes"].items()
    ]
    lines.append((f"{view['headline']}: confidence", head["confidence"]["risk_coverage"], head["confidence"]["aurc"]))
    written = [
        plot_risk_coverage(lines, Path(out_dir) / f"risk_coverage{suffix}.png", f"Risk-coverage: {label}"),
        plot_reliability(
            [(f"{view['headline']}: {name}", head[name]["reliability"]) for name in SIGNALS],
            Path(out_dir) / f"reliability{suffix}.png",
            f"Answer reliability: {label}",
        ),
    ]
    return [p for p in written if p is not None]


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
