"""p_correct: the probability that a vote's answer is right, from what the engine knows about the answer's class.

A vote's `confidence` is a share (its class's score over all classes' scores), so when the verifier rejects every
sample the least-rejected class still gets ~1.0. `p_correct` instead reads the class's evidence taken absolutely:

- with a verifier score kind K: the class's best and mean K score (as log-odds), its share of the K scores, its
  share of all samples, the number of samples (log2 N) and its samples' mean `likelihood` (exp of the mean token
  log-probability);
- votes only (no verifier): its share of all samples, log2 N and the mean likelihood.

A **fit** (`Fit`) is a logistic model over those features, fitted on labelled results (`tts calibrate`) and
stored as JSON beside the checkpoint (`calibration.json`); a calibration file holds one fit per score kind it
was fitted on, plus the votes-only fit, and the engine uses the fit whose kind the records carry. Without a fit
the mapping is **uncalibrated**, and says so: the class's best score of the headline kind (a verifier's P(Yes)
is already a probability-like number), else the class's share of all samples.

Every vote of a record (every key of "aggregations") gets the p_correct of its winning class, computed over the
samples that voted; a vote with no answer gets 0.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .futility import DEFAULT_PRIOR, AcceptancePrior, accepted_count, chance_of_acceptance
from .records import ProblemRecord, SampleRecord, voting_samples

FILE_NAME = "calibration.json"
"""The calibration stored beside a checkpoint (its folder), found by `Engine` without being named."""
FIXED = "fixed"
"""The strategy family of fixed sampling (what a fit of a file written before families existed was fitted on)."""
VOTES_ONLY = "votes"
"""The `kind` of the fit that reads no verifier score (vote share, N and likelihood alone)."""
SCORE_FEATURES = ("score_max", "score_mean", "score_share", "count_share", "log_n", "likelihood")
VOTE_FEATURES = ("count_share", "log_n", "likelihood")
_CLIP = 1e-4  # scores are clipped to [_CLIP, 1 - _CLIP] before their log-odds
RESCUE_FEATURES = ("log_seen", "log_more", "best", "mean")
"""What `rejected_features` gives: the rescue fit (will more samples bring an accepted one?) reads these."""
_RESCUE_CLIP = 1e-6  # finer: how near a rejected sample came (1e-5 or 1e-2) is what the rescue fit reads


def class_features(samples: Sequence[SampleRecord], answer_class: int, kind: str) -> dict[str, float]:
    """The features of class `answer_class` among a problem's sample records (`kind` a score kind, or VOTES_ONLY).
    A sample without the kind's score (its verifier failed) counts as rejected (0)."""
    members = [s for s in samples if s.answer_class == answer_class]
    likelihood = [float(s.scores.get("likelihood", 0.0)) for s in members]
    features = {
        "count_share": len(members) / len(samples),
        "log_n": math.log2(len(samples)),
        "likelihood": sum(likelihood) / len(likelihood),
    }
    if kind == VOTES_ONLY:
        return features
    scores = [float(s.scores.get(kind, 0.0)) for s in members]
    answered = sum(float(s.scores.get(kind, 0.0)) for s in samples if s.answer_class >= 0)
    return {
        "score_max": _logit(max(scores)),
        "score_mean": _logit(sum(scores) / len(scores)),
        "score_share": sum(scores) / answered if answered > 0 else 0.0,
        **features,
    }


def rejected_features(scores: Sequence[float], more: int) -> dict[str, float]:
    """A problem whose every sample was rejected: how many it drew (log2), how many more may come (log2), and how
    near its best and mean headline score came to acceptance (log-odds, clipped at 1e-6)."""
    return {
        "log_seen": math.log2(len(scores)),
        "log_more": math.log2(max(1, more)),
        "best": _logit(max(scores), _RESCUE_CLIP),
        "mean": _logit(sum(scores) / len(scores), _RESCUE_CLIP),
    }


def _logit(p: float, clip: float = _CLIP) -> float:
    p = min(1.0 - clip, max(clip, p))
    return math.log(p / (1.0 - p))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass
class Fit:
    """A logistic model p = sigmoid(bias + sum_i weight_i * (x_i - mean_i) / scale_i) over named class features."""

    kind: str
    """The score kind its features read, or VOTES_ONLY."""
    features: list[str]
    weights: list[float]
    bias: float
    means: list[float]
    scales: list[float]
    fitted_on: dict[str, Any] = field(default_factory=dict)
    """What it was fitted on: files, problems, answers, the share right."""
    held_out: dict[str, Any] = field(default_factory=dict)
    """Its figures on the held-out problems (ECE, AUROC, AURC), as `tts calibrate` measured them."""
    family: str = FIXED
    """The strategy family whose records it was fitted on (`StrategyEntry.family`): a strategy that stops early, or
    searches, keeps other answers than fixed sampling does, so each family has fits of its own. Files written before
    families existed were fitted on fixed runs."""

    def predict(self, features: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (features[name] - m) / s for name, w, m, s in zip(self.features, self.weights, self.means, self.scales)
        )
        return _sigmoid(z)


@dataclass
class Calibration:
    """How p_correct is computed for a run: the fits of a calibration file, or the uncalibrated mapping."""

    fits: list[Fit]
    source: str
    """Where the fits come from (a file), or why there are none."""
    headline_kind: str | None = None
    """The kind the uncalibrated mapping reads (the engine's headline kind; None: votes only)."""
    family: str = FIXED
    """The strategy family of the records it annotates: only that family's fits apply."""
    acceptance: list[AcceptancePrior] = field(default_factory=list)
    """Priors over the share of a problem's samples the verifier accepts, per score kind (`futility`): what an
    adaptive strategy's futility stop reads."""
    rescue: list[Fit] = field(default_factory=list)
    """Per score kind, the fitted chance that more samples bring an accepted one to a problem whose every sample was
    rejected (`futility`)."""

    def acceptance_prior(self, kind: str | None) -> tuple[float, float]:
        """(alpha, beta) of the acceptance prior fitted for score `kind`, else `DEFAULT_PRIOR`."""
        fitted = next((p for p in self.acceptance if p.kind == kind), None)
        return (fitted.alpha, fitted.beta) if fitted is not None else DEFAULT_PRIOR

    def chance_of_acceptance(self, kind: str, scores: Sequence[float], more: int) -> float:
        """The chance that `more` samples bring one the verifier accepts to a problem whose samples so far scored
        `scores` of `kind` (`tts_engine.pipeline.futility`): the rescue fit where every one was rejected and a fit
        exists, else the acceptance prior's posterior."""
        if more <= 0:
            return 0.0
        accepted = accepted_count(scores)
        fit = next((f for f in self.rescue if f.kind == kind), None)
        if fit is not None and accepted == 0 and scores:
            return fit.predict(rejected_features(scores, more))
        return chance_of_acceptance(*self.acceptance_prior(kind), accepted, len(scores), more)

    @property
    def calibrated(self) -> bool:
        return bool(self.fits)

    def for_family(self, family: str, headline_kind: str | None = None) -> "Calibration":
        """This calibration for the records of strategy family `family` (and their headline kind, where the
        strategy's differs from the engine's)."""
        return replace(self, family=family, headline_kind=headline_kind or self.headline_kind)

    def fit_for(self, kinds: Sequence[str]) -> Fit | None:
        """The fit to use on samples of this family carrying score `kinds`: the family's first fit whose kind they
        carry, else its votes-only fit, else None (uncalibrated: no fit of another family is used)."""
        mine = [fit for fit in self.fits if fit.family == self.family]
        for fit in mine:
            if fit.kind in kinds:
                return fit
        return next((fit for fit in mine if fit.kind == VOTES_ONLY), None)

    def describe(self, kinds: Sequence[str]) -> str:
        """One line for the run block and the summary: which mapping p_correct comes from."""
        fit = self.fit_for(kinds)
        if fit is not None:
            reads = "votes only" if fit.kind == VOTES_ONLY else fit.kind
            return f"calibrated ({self.source}, fit on {reads} of {self.family} runs)"
        reads = self.headline_kind is not None and self.headline_kind in kinds
        what = f"the class's best {self.headline_kind} score" if reads else "the class's share of the samples"
        missing = f"no fit for {self.family} runs in {self.source}" if self.fits else self.source
        return f"uncalibrated ({what}; {missing})"

    def class_probability(self, samples: Sequence[SampleRecord], answer_class: int) -> float:
        """p_correct of one answer class among a problem's sample records."""
        if answer_class < 0 or not any(s.answer_class == answer_class for s in samples):
            return 0.0
        kinds = list(samples[0].scores)
        fit = self.fit_for(kinds)
        if fit is not None:
            return fit.predict(class_features(samples, answer_class, fit.kind))
        if self.headline_kind in kinds:
            return max(float(s.scores[self.headline_kind]) for s in samples if s.answer_class == answer_class)
        return class_features(samples, answer_class, VOTES_ONLY)["count_share"]

    def annotate(self, record: ProblemRecord, samples: Sequence[SampleRecord] | None = None) -> None:
        """Write `p_correct` of every answer class of a record and of every vote (its winning class's), computed
        over `samples` (default the record's; a strategy passes those that voted)."""
        samples = record.samples if samples is None else samples
        p = [round(self.class_probability(samples, c), 6) for c in range(len(record.classes))]
        for entry, value in zip(record.classes, p):
            entry.p_correct = value
        for vote in record.aggregations.values():
            vote.p_correct = p[vote.answer_class] if vote.answer_class >= 0 else 0.0

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        data = {
            "version": 1,
            "fits": [asdict(f) for f in self.fits],
            "acceptance": [asdict(p) for p in self.acceptance],
            "rescue": [asdict(f) for f in self.rescue],
        }
        path.write_text(json.dumps(data, indent=1) + "\n")
        return path


def load_calibration(path: str | Path, headline_kind: str | None = None) -> Calibration:
    """A calibration file (from `tts calibrate`), checked: a clear error naming the file when it is not one."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        fits = [Fit(**fit) for fit in data["fits"]]
        acceptance = [AcceptancePrior(**prior) for prior in data.get("acceptance", [])]
        rescue = [Fit(**fit) for fit in data.get("rescue", [])]
    except FileNotFoundError:
        raise FileNotFoundError(f"calibration file {path} does not exist (make one with `tts calibrate`)") from None
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a calibration file of `tts calibrate`: {err}") from None
    for fit in fits + rescue:
        if len({len(fit.features), len(fit.weights), len(fit.means), len(fit.scales)}) != 1:
            raise ValueError(
                f"{path}: the fit on {fit.kind} lists {len(fit.features)} features but not as many weights"
            )
    return Calibration(fits, _shown(path), headline_kind, acceptance=acceptance, rescue=rescue)


def _shown(path: Path) -> str:
    """A calibration file's path as the run block shows it: inside the package from the package's folder (the
    shipped checkpoints' fits read the same on every machine), else as given."""
    package = Path(__file__).resolve().parents[1]
    try:
        return str(Path("tts_engine") / path.resolve().relative_to(package))
    except ValueError:
        return str(path)


def find_calibration(
    choice: str | Path | Calibration | None, checkpoints: Sequence[str | Path | None], headline_kind: str | None
) -> Calibration:
    """The calibration of an engine: `choice` (a Calibration, a file, or "none" for the uncalibrated mapping),
    else the first `calibration.json` beside one of `checkpoints` (verifier first), else uncalibrated."""
    if isinstance(choice, Calibration):
        return choice
    if choice is not None and str(choice) == "none":
        return Calibration([], "asked for", headline_kind)
    if choice is not None:
        return load_calibration(choice, headline_kind)
    for checkpoint in checkpoints:
        if checkpoint is not None and (Path(checkpoint) / FILE_NAME).is_file():
            return load_calibration(Path(checkpoint) / FILE_NAME, headline_kind)
    return Calibration([], f"no {FILE_NAME} beside the checkpoint", headline_kind)


# --- fitting ------------------------------------------------------------------------------------------------
def answer_examples(
    records: Sequence[dict[str, Any]], kind: str, every_prefix: bool = True
) -> tuple[list[dict[str, float]], list[bool], list[str]]:
    """The labelled answers of results records: every class some vote picked, with its features for `kind`, whether
    it is right, and its problem's id. With `every_prefix`, over the record's first k samples for k = 1, 2, 4, ... up
    to all of them (the answers that fixed runs with fewer samples give); without, over all of them (a strategy that
    stops or searches: its answers as it stopped). Records without a reference, failed ones and those lacking `kind`
    are left out."""
    from .aggregate import vote_predictions

    features, labels, ids = [], [], []
    for record in records:
        samples = voting_samples([SampleRecord.from_json(s) for s in record.get("samples") or []])
        if record.get("status", "ok") != "ok" or record.get("reference") is None or not samples:
            continue
        if kind != VOTES_ONLY and kind not in samples[0].scores:
            continue
        grades = [c["correct"] for c in record["classes"]]
        for size in _prefix_sizes(len(samples)) if every_prefix else [len(samples)]:
            votes = vote_predictions(samples[:size], grades, has_reference=True)
            for c in sorted({v.answer_class for v in votes.values() if v.answer_class >= 0}):
                if grades[c] is None:
                    continue
                features.append(class_features(samples[:size], c, kind))
                labels.append(bool(grades[c]))
                ids.append(str(record["id"]))
    return features, labels, ids


def _prefix_sizes(n: int) -> list[int]:
    """1, 2, 4, ... below n, then n."""
    return [2**i for i in range(n.bit_length()) if 2**i < n] + [n]


def fit_logistic(
    examples: Sequence[dict[str, float]],
    labels: Sequence[bool],
    kind: str,
    l2: float = 1.0,
    steps: int = 50,
    features: Sequence[str] | None = None,
) -> Fit:
    """The L2-regularised logistic fit (Newton's method on standardised features) of `labels` on `examples`, over
    `features` (default: p_correct's class features for `kind`)."""
    names = list(features or (SCORE_FEATURES if kind != VOTES_ONLY else VOTE_FEATURES))
    if len(set(labels)) < 2:
        raise ValueError(f"calibration needs both right and wrong answers; all {len(labels)} are {bool(labels[0])}")
    x = np.array([[e[name] for name in names] for e in examples], dtype=np.float64)  # (A, F)
    y = np.asarray(labels, dtype=np.float64)  # (A,)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - means) / scales])  # (A, 1 + F)
    w = np.zeros(z.shape[1])
    penalty = np.diag([0.0] + [l2] * len(names))  # the bias is not shrunk
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Fit(kind, names, w[1:].tolist(), float(w[0]), means.tolist(), scales.tolist())
