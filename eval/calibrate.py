"""`tts calibrate RESULTS... --out FILE`: fit p_correct on a labelled run, from any model, verifier or PRM.

The records' problems are split by a hash of their id into a fitting part and a held-out part. Two logistic fits
are made on the fitting part (`tts_engine.pipeline.calibration`): one on the run's headline score kind (or --kind) and one
on the votes alone (used where a later run carries no verifier score). The held-out part is scored by the fit and
by the uncalibrated mapping, side by side: ECE, AUROC, AURC, the wrong answers at p >= .9, a reliability table and
a plot. The file written is what `tts solve --calibration FILE`, `Engine(..., calibration=FILE)` and `tts serve
--calibration FILE` read; put it beside a checkpoint as `calibration.json` and it is used without being named.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import click

from tts_engine.pipeline.aggregate import headline_vote
from tts_engine.pipeline.calibration import (
    FIXED,
    RESCUE_FEATURES,
    VOTES_ONLY,
    Calibration,
    Fit,
    answer_examples,
    fit_logistic,
    rejected_features,
)
from tts_engine.pipeline.futility import AcceptancePrior, accepted_count, fit_acceptance
from tts_engine.pipeline.metrics import answer_metrics, reliability
from tts_engine.pipeline.records import SampleRecord, strategy_of, voting_samples
from tts_engine.running.results import record_status
from tts_engine.settings import Command, build, options
from tts_engine.strategies.registry import family_of


@dataclass
class CalibrateConfig:
    """How `tts calibrate` fits and reports."""

    kind: str | None = None
    """Score kind the fit reads (default: the runs' headline kind, e.g. verifier_recompute)."""
    family: str | None = None
    """Fit every record as this strategy family (default: each record's own, from its strategy): e.g. fixed runs'
    fits labelled adaptive, to start an adaptive strategy's own fit runs from."""
    holdout: float = 0.25
    """Share of the problems held out of the fit and reported on (0: fit on all, report nothing held out)."""
    l2: float = 1.0
    """L2 penalty of the logistic fit, on standardised features."""
    num_bins: int = 10
    """Reliability bins."""
    plot: str | None = None
    """Reliability plot of the held-out part (PNG; default: next to --out, same name)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.holdout < 1.0:
            raise ValueError(f"holdout must be in [0, 1), got {self.holdout}")
        if self.l2 < 0:
            raise ValueError(f"l2 must be >= 0, got {self.l2}")
        if self.num_bins < 1:
            raise ValueError(f"num_bins must be >= 1, got {self.num_bins}")


def held_out(problem_id: str, share: float) -> bool:
    """Whether a problem is in the held-out part: a hash of its id, so the split does not depend on file order."""
    digest = hashlib.blake2b(str(problem_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64 < share


def load_labelled(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The graded, solved records of the results files (a one-line error when none is usable)."""
    from tts_engine.running.results import read_results

    records = [r for path in paths for r in read_results(path)]
    usable = [r for r in records if record_status(r) == "ok" and r.get("reference") is not None and r.get("samples")]
    if not usable:
        raise ValueError(
            f"no solved problem with a reference answer in {', '.join(map(str, paths))}: nothing to fit on"
        )
    return usable


def headline_probabilities(records: Sequence[dict[str, Any]], calibration: Calibration, key: str):
    """(p_correct, right) of vote `key`'s answer in every record, by `calibration`."""
    p, right = [], []
    for record in records:
        vote = record["aggregations"].get(key)
        if vote is None:
            continue
        samples = voting_samples([SampleRecord.from_json(s) for s in record["samples"]])
        p.append(calibration.class_probability(samples, vote["answer_class"]))
        right.append(bool(vote["correct"]))
    return p, right


def families(records: Sequence[dict[str, Any]], family: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The records grouped by the calibration family of the strategy that wrote them (fixed, adaptive, deepconf,
    search, ...), in the order the families first appear; all as `family` when it is given."""
    if family is not None:
        return {family: list(records)} if records else {}
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(family_of(strategy_of(record)), []).append(record)
    return groups


def fit_runs(
    records: Sequence[dict[str, Any]], kind: str | None, holdout: float, l2: float, family: str | None = None
) -> tuple[Calibration, list]:
    """The calibration fitted on the records outside the held-out part (a fit on each family's headline kind, or
    `kind`, and a votes-only fit, per strategy family), and the held-out records."""
    fit_part = [r for r in records if not held_out(r["id"], holdout)]
    test_part = [r for r in records if held_out(r["id"], holdout)]
    if not fit_part:
        raise ValueError(f"every one of the {len(records)} problems is held out: lower --holdout")
    fits = []
    for name, group in families(fit_part, family).items():
        family_kind = kind or group[0]["run"].get("headline_kind")
        every_prefix = family_of(strategy_of(group[0])) == FIXED  # the records' own strategy says how they stopped
        for fit_kind in [k for k in (family_kind, VOTES_ONLY) if k]:
            examples, labels, _ = answer_examples(group, fit_kind, every_prefix=every_prefix)
            if not examples:
                raise ValueError(
                    f"no {name} record carries the score kind {fit_kind!r}; they carry "
                    f"{sorted(group[0]['samples'][0]['scores'])}"
                )
            fit = fit_logistic(examples, labels, fit_kind, l2=l2)
            fit.family = name
            fit.fitted_on = {
                "problems": len(group),
                "answers": len(labels),
                "right": round(sum(labels) / len(labels), 4),
            }
            fits.append(fit)
    acceptance, rescue = acceptance_priors(fit_part, kind), rescue_fits(fit_part, kind, l2)
    return Calibration(fits, "tts calibrate", kind, acceptance=acceptance, rescue=rescue), test_part


def headline_kinds(records: Sequence[dict[str, Any]], kind: str | None) -> list[str]:
    """`kind`, else the headline kinds the records' runs name."""
    return sorted({kind or r["run"].get("headline_kind") for r in records} - {None})


def acceptance_priors(records: Sequence[dict[str, Any]], kind: str | None) -> list[AcceptancePrior]:
    """The acceptance prior of each family's headline kind (`tts_engine.pipeline.futility`), fitted on the fixed
    runs where there are some (every problem drew the same samples), else on all."""
    fixed = families(records).get(FIXED) or list(records)
    priors = []
    for k in headline_kinds(records, kind):
        counts = [
            (accepted_count([s["scores"].get(k, 0.0) for s in r["samples"]]), len(r["samples"]))
            for r in fixed
            if r["samples"] and k in r["samples"][0]["scores"]
        ]
        if counts:
            priors.append(fit_acceptance(counts, k))
    return priors


RESCUE_MIN_SAMPLES = 16
"""Fixed runs with at least this many samples a problem teach the rescue fit (fewer show too short a run of
rejections)."""


RESCUE_POINTS = (4, 8, 12, 16, 24, 32, 48)
"""Samples seen at the states `rescue_examples` reads from a fixed run (those short of its N)."""


def rescue_examples(rows: Sequence[Sequence[float]]) -> tuple[list[dict[str, float]], list[bool]]:
    """Examples of the chance that more samples bring an accepted one, from fixed runs' headline scores `rows`
    (each problem's samples in the order drawn): at every point of `RESCUE_POINTS` where all samples so far were
    rejected, two horizons (as many more again, and all that are left), labelled by whether one of them was
    accepted."""
    examples, labels = [], []
    for scores in rows:
        for seen in (n for n in RESCUE_POINTS if n < len(scores)):
            if accepted_count(scores[:seen]) > 0:
                break
            for more in sorted({min(seen, len(scores) - seen), len(scores) - seen}):
                examples.append(rejected_features(scores[:seen], more))
                labels.append(accepted_count(scores[seen : seen + more]) > 0)
    return examples, labels


def rescue_rows(records: Sequence[dict[str, Any]], kind: str) -> list[list[float]]:
    """Each long fixed run's problem: its samples' `kind` scores in the order drawn."""
    fixed = families(records).get(FIXED, [])
    return [
        [s["scores"].get(kind, 0.0) for s in r["samples"]]
        for r in fixed
        if len(r["samples"]) >= RESCUE_MIN_SAMPLES and kind in r["samples"][0]["scores"]
    ]


def rescue_fits(records: Sequence[dict[str, Any]], kind: str | None, l2: float) -> list[Fit]:
    """Per headline kind, the chance that more samples bring an accepted one to a problem whose every sample was
    rejected (`tts_engine.pipeline.futility`), fitted on the fixed runs with many samples a problem; none where the
    runs show no such problem, or none that more samples rescued."""
    fits = []
    for k in headline_kinds(records, kind):
        rows = rescue_rows(records, k)
        examples, labels = rescue_examples(rows)
        if len(set(labels)) < 2:
            continue
        fit = fit_logistic(examples, labels, k, l2=l2, features=RESCUE_FEATURES)
        fit.fitted_on = {"problems": len(rows), "states": len(labels), "rescued": round(sum(labels) / len(labels), 4)}
        fits.append(fit)
    return fits


def rescue_report(records: Sequence[dict[str, Any]], calibration: Calibration) -> list[str]:
    """Held-out figures of each rescue fit: the chance it gives against what more samples brought."""
    out = []
    for fit in calibration.rescue:
        examples, labels = rescue_examples(rescue_rows(records, fit.kind))
        if len(set(labels)) < 2:
            continue
        fitted = [fit.predict(e) for e in examples]
        m = answer_metrics(fitted, labels, 10)
        out.append(
            f"rescue of {fit.kind} (every sample rejected so far; will more bring an accepted one?), held out: "
            f"{len(labels)} states, mean chance {sum(fitted) / len(fitted):.3f}, seen {sum(labels) / len(labels):.3f}, "
            f"ECE {m['ece']:.3f}, AUROC {m['auroc']:.3f}"
        )
    return out


def report(records: Sequence[dict[str, Any]], calibration: Calibration, kind: str | None, num_bins: int) -> dict:
    """Held-out figures of the headline vote's p_correct: fitted, uncalibrated, and the vote's confidence (one
    family's records, `calibration` for that family)."""
    key = headline_vote(kind)
    fitted, right = headline_probabilities(records, calibration, key)
    raw, _ = headline_probabilities(records, Calibration([], "uncalibrated", kind), key)
    share = [float(r["aggregations"][key]["confidence"]) for r in records if key in r["aggregations"]]
    rows = {"p_correct (fitted)": fitted, "p_correct (uncalibrated)": raw, "confidence (vote share)": share}
    return {
        "vote": key,
        "rows": {name: answer_metrics(p, right, num_bins) for name, p in rows.items()},
        "reliability": {name: reliability(p, right, num_bins) for name, p in rows.items()},
    }


def format_report(figures: dict[str, Any]) -> list[str]:
    out = [f"answers of {figures['vote']} that the fit did not see:"]
    out.append(f"  {'signal':<28}{'answers':>8}{'ECE':>7}{'AUROC':>7}{'AURC':>7}{'wrong>=.9':>10}")
    for name, m in figures["rows"].items():
        auroc = "-" if m["auroc"] is None else f"{m['auroc']:.3f}"
        wrong = "-" if m["wrong_at_90"] is None else f"{m['wrong_at_90']:.3f}"
        out.append(f"  {name:<28}{m['answers']:>8}{m['ece']:>7.3f}{auroc:>7}{m['aurc']:>7.3f}{wrong:>10}")
    out.append("  reliability of p_correct (fitted): bin, answers, mean p, fraction right")
    for b in figures["reliability"]["p_correct (fitted)"]["bins"]:
        if b["count"]:
            out.append(
                f"    [{b['low']:.1f}, {b['high']:.1f})  {b['count']:>5}  {b['mean_score']:.3f}  {b['fraction_right']:.3f}"
            )
    return out


@click.command(cls=Command)
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Calibration file to write (JSON).")
@click.option(
    "--test",
    "tests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Results of the same model to report on instead of a held-out part (repeatable): the fit is made on all of "
    "RESULTS and checked on these files.",
)
@options(CalibrateConfig)
def calibrate(results, out, tests, **settings):
    """Fit p_correct (the probability that an answer is right) on labelled RESULTS of `tts solve`.

    Prints the held-out part's reliability beside the uncalibrated mapping's, and writes the calibration that
    `tts solve --calibration FILE` and `tts serve --calibration FILE` use (as calibration.json beside a checkpoint it
    is that checkpoint's default)."""
    o = build(CalibrateConfig, settings)
    records = load_labelled(results)
    calibration, test_part = fit_runs(records, o.kind, 0.0 if tests else o.holdout, o.l2, o.family)
    if tests:
        test_part = load_labelled(tests)
        click.echo(
            f"fitted on {len(records)} problems of {len(results)} file(s); checked on {len(test_part)} of {len(tests)}"
        )
    else:
        click.echo(
            f"fitted on {len(records) - len(test_part)} problems of {len(results)} file(s); {len(test_part)} held out"
        )
    for family, group in families(test_part, o.family).items():
        kind = o.kind or group[0]["run"].get("headline_kind")
        figures = report(group, calibration.for_family(family, kind), kind, o.num_bins)
        for fit in calibration.fits:
            if fit.family == family and fit.kind == (kind or VOTES_ONLY):
                fit.held_out = figures["rows"]["p_correct (fitted)"]
        click.echo(f"{family} runs:")
        click.echo("\n".join(format_report(figures)))
        from .plots import plot_reliability

        plot = Path(o.plot or Path(out).with_suffix(".png"))
        plot = plot if len(families(test_part, o.family)) == 1 else plot.with_name(f"{plot.stem}_{family}{plot.suffix}")
        lines = list(figures["reliability"].items())
        title = f"Reliability of {figures['vote']} on {family} answers the fit did not see"
        if plot_reliability(lines, plot, title) is not None:
            click.echo(f"plot: {plot}")
    for line in rescue_report(test_part, calibration):
        click.echo(line)
    for fit in calibration.fits + calibration.rescue:
        fit.fitted_on["files"] = [Path(p).name for p in results]
    calibration.save(out)
    made = ", ".join(f"{f.kind} of {f.family} runs" for f in calibration.fits)
    priors = ", ".join(f"{p.kind} Beta({p.alpha}, {p.beta})" for p in calibration.acceptance)
    rescue = ", ".join(f"{f.kind} on {f.fitted_on['states']} states" for f in calibration.rescue)
    click.echo(
        f"calibration: {out} (fits on {made}; acceptance priors: {priors or 'none'}; rescue: {rescue or 'none'})"
    )
