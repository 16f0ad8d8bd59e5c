"""p_correct: class features, the logistic fit, the uncalibrated mapping, calibration files, abstention, the
selective metrics (AURC, risk-coverage), and `tts calibrate` -> `tts solve --calibration` on the default."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner

from tts_engine.inputs.problems import Problem
from tts_engine.pipeline.calibration import (
    FILE_NAME,
    VOTES_ONLY,
    Calibration,
    Fit,
    answer_examples,
    class_features,
    find_calibration,
    fit_logistic,
    load_calibration,
)
from tts_engine.pipeline.metrics import answer_metrics, aurc, reliability, risk_coverage
from tts_engine.pipeline.records import AnswerClass, ProblemRecord, SampleRecord

KIND = "verifier_recompute"


def sample(answer_class: int, score: float | None, likelihood: float = 0.5) -> SampleRecord:
    """A sample record of `answer_class` (-1: no answer) with a KIND score (None: the verifier gave none)."""
    answer = str(answer_class) if answer_class >= 0 else None
    scores = {"likelihood": likelihood} | ({KIND: score} if score is not None else {})
    return SampleRecord("", answer, answer_class, "ok", None, 1, "stop", scores)


def record(samples: list[SampleRecord], grades: list[bool | None]) -> ProblemRecord:
    """A record of `samples` with one class per grade, its votes from the engine's own aggregation."""
    from tts_engine.pipeline.aggregate import vote_predictions

    return ProblemRecord(
        Problem("p", "?", "1"),
        samples=samples,
        classes=[AnswerClass(str(c), 1, g) for c, g in enumerate(grades)],
        aggregations=vote_predictions(samples, grades, has_reference=True),
    )


def test_class_features_read_the_class_absolutely_not_as_a_share():
    rejected = [sample(0, 0.001), sample(0, 0.002), sample(1, 0.0005)]  # every sample rejected
    f = class_features(rejected, 0, KIND)
    assert f["score_share"] > 0.8  # the share says "confident" ...
    assert f["score_max"] == pytest.approx(math.log(0.002 / 0.998))  # ... the best score says "rejected"
    assert f["count_share"] == pytest.approx(2 / 3)
    assert f["log_n"] == pytest.approx(math.log2(3))
    assert set(class_features(rejected, 0, VOTES_ONLY)) == {"count_share", "log_n", "likelihood"}


def test_a_sample_without_the_kinds_score_counts_as_rejected():
    samples = [sample(0, 0.9), sample(0, None)]
    assert class_features(samples, 0, KIND)["score_mean"] == pytest.approx(math.log(0.45 / 0.55))


def test_uncalibrated_p_correct_is_low_where_every_sample_is_rejected_though_the_share_is_one():
    r = record([sample(0, 0.0004), sample(0, 0.0001), sample(0, 0.0002)], [False])
    Calibration([], "test", KIND).annotate(r)
    vote = r.aggregations[f"weighted:{KIND}"]
    assert vote.confidence == pytest.approx(1.0)
    assert vote.p_correct == pytest.approx(0.0004)
    assert r.classes[0].p_correct == pytest.approx(0.0004)


def test_without_a_verifier_kind_the_uncalibrated_mapping_is_the_sample_share():
    samples = [sample(c, None) for c in (0, 0, 1, -1)]
    r = record(samples, [True, False])
    calibration = Calibration([], "test", None)
    calibration.annotate(r)
    assert r.aggregations["majority"].p_correct == pytest.approx(0.5)
    assert r.classes[1].p_correct == pytest.approx(0.25)
    assert "share of the samples" in calibration.describe(["likelihood"])


def test_a_vote_with_no_answer_has_p_correct_zero():
    r = record([sample(-1, 0.9)], [])
    Calibration([], "test", KIND).annotate(r)
    assert all(v.p_correct == 0.0 for v in r.aggregations.values())


def synthetic_answers(seed: int, size: int) -> tuple[list[dict], list[bool]]:
    """Answers whose chance of being right is a known logistic function of two of their features."""
    rng = random.Random(seed)
    examples, labels = [], []
    for _ in range(size):
        f = {name: rng.gauss(0, 1) for name in ("score_mean", "score_share", "log_n", "likelihood")}
        f["score_max"] = rng.gauss(0, 3)
        f["count_share"] = rng.random()
        p = 1 / (1 + math.exp(-(1.5 * f["score_max"] + 2.0 * (f["count_share"] - 0.5))))
        examples.append(f)
        labels.append(rng.random() < p)
    return examples, labels


def test_the_logistic_fit_is_calibrated_and_ranks_on_fresh_answers():
    examples, labels = synthetic_answers(0, 4000)
    fit = fit_logistic(examples, labels, KIND)
    fresh, fresh_labels = synthetic_answers(1, 4000)
    p = [fit.predict(f) for f in fresh]
    metrics = answer_metrics(p, fresh_labels)
    assert metrics["ece"] < 0.03
    assert metrics["auroc"] > 0.9
    weight = dict(zip(fit.features, fit.weights))
    assert weight["score_max"] > 1.0 and abs(weight["likelihood"]) < 0.2  # the features that matter, and not


def test_a_fit_needs_both_right_and_wrong_answers():
    examples, _ = synthetic_answers(0, 10)
    with pytest.raises(ValueError, match="both right and wrong"):
        fit_logistic(examples, [True] * 10, KIND)


def test_answer_examples_take_the_votes_of_every_prefix_of_the_samples():
    samples = [sample(0, 0.9), sample(1, 0.1), sample(1, 0.2), sample(1, 0.05)]
    examples, labels, ids = answer_examples([record(samples, [True, False]).to_json()], KIND)
    # prefixes of 1, 2 and 4 samples: every vote picks class 0 at 1 and 2 (a tie goes to the first seen); at 4
    # majority picks class 1 (three samples) and the verifier's vote class 0
    assert len(examples) == len(labels) == len(ids) == 4
    assert sorted(labels) == [False, True, True, True]
    assert [e["log_n"] for e in examples] == [0.0, 1.0, 2.0, 2.0]
    assert answer_examples([{**record(samples, [True, False]).to_json(), "reference": None}], KIND)[0] == []


def test_calibration_file_round_trip_and_lookup_beside_a_checkpoint(tmp_path):
    examples, labels = synthetic_answers(0, 500)
    fits = [fit_logistic(examples, labels, KIND)]
    checkpoint = tmp_path / "model"
    checkpoint.mkdir()
    Calibration(fits, "test").save(checkpoint / FILE_NAME)
    found = find_calibration(None, [None, checkpoint], KIND)
    assert found.calibrated and found.fits[0].weights == pytest.approx(fits[0].weights)
    assert "calibrated" in found.describe([KIND]) and "uncalibrated" not in found.describe([KIND])
    assert found.fit_for(["likelihood"]) is None  # no votes-only fit: uncalibrated where the kind is missing
    assert not find_calibration("none", [checkpoint], KIND).calibrated
    assert not find_calibration(None, [tmp_path], KIND).calibrated


def test_a_bad_calibration_file_fails_naming_it(tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text('{"fits": [{"kind": "x"}]}')
    with pytest.raises(ValueError, match="cal.json is not a calibration file"):
        load_calibration(bad)
    with pytest.raises(FileNotFoundError, match="tts calibrate"):
        load_calibration(tmp_path / "missing.json")


def test_the_fit_of_the_kind_the_samples_carry_is_used_else_the_votes_only_fit():
    vote_fit = Fit(VOTES_ONLY, ["count_share", "log_n", "likelihood"], [1.0, 0.0, 0.0], 0.0, [0.5, 0, 0], [1, 1, 1])
    kind_fit = Fit(KIND, ["score_max"], [1.0], 0.0, [0.0], [1.0])
    calibration = Calibration([kind_fit, vote_fit], "test")
    assert calibration.fit_for([KIND, "likelihood"]) is kind_fit
    assert calibration.fit_for(["likelihood"]) is vote_fit
    r = record([sample(0, 0.5)], [True])
    calibration.annotate(r)
    assert r.aggregations["majority"].p_correct == pytest.approx(0.5)  # sigmoid(logit(.5))


def test_each_strategy_family_reads_its_own_fits_and_none_of_another():
    fixed = Fit(KIND, ["score_max"], [1.0], 0.0, [0.0], [1.0])
    adaptive = Fit(KIND, ["score_max"], [2.0], 0.0, [0.0], [1.0], family="adaptive")
    calibration = Calibration([fixed, adaptive], "cal.json", KIND)
    assert calibration.fit_for([KIND]) is fixed  # fixed sampling: the family of a file written before families
    assert calibration.for_family("adaptive").fit_for([KIND]) is adaptive
    search = calibration.for_family("search")
    assert search.fit_for([KIND]) is None  # never another family's fit
    assert search.describe([KIND]).startswith("uncalibrated") and "no fit for search runs in cal.json" in (
        search.describe([KIND])
    )


def test_abstention_marks_the_votes_below_the_threshold_and_keeps_their_answers():
    r = record([sample(0, 0.3), sample(1, 0.95)], [False, True])
    Calibration([], "test", KIND).annotate(r)
    r.mark_abstentions(0.5)
    assert r.aggregations[f"weighted:{KIND}"].abstained is False
    majority = r.aggregations["majority"]  # a tie broken by the first seen: class 0, p .3
    assert majority.abstained is True and majority.answer_class == 0 and majority.p_correct == 0.3
    assert [c.abstained for c in r.classes] == [True, False]  # the classes too (a served choice is a class)


def test_risk_coverage_and_aurc():
    scores, labels = [0.9, 0.8, 0.7, 0.2], [True, True, False, False]
    curve = risk_coverage(scores, labels)
    assert curve["coverage"] == [0.25, 0.5, 0.75, 1.0]
    assert curve["risk"] == pytest.approx([0, 0, 1 / 3, 0.5])
    assert aurc(scores, labels) == pytest.approx(np.mean([0, 0, 1 / 3, 0.5]))
    assert aurc([0.5] * 4, labels) == pytest.approx(0.5)  # a tie enters at once: the error rate
    assert risk_coverage([0.5, 0.5, 0.1], [True, False, True]) == {"coverage": [2 / 3, 1.0], "risk": [0.5, 1 / 3]}


def test_answer_metrics_count_wrong_answers_trusted_at_90():
    m = answer_metrics([0.95, 0.92, 0.1, 0.99], [True, False, False, True])
    assert m["wrong_at_90"] == pytest.approx(0.5)
    assert m["top_half_accuracy"] == pytest.approx(1.0)  # the two most trusted, .99 and .95, are right
    assert reliability([0.95, 0.92, 0.1, 0.99], [True, False, False, True], 10)["ece"] == pytest.approx(m["ece"])


# --- the product path: tts solve -> tts calibrate -> tts solve --calibration ------------------------------
@pytest.fixture(scope="module")
def labelled_runs(tmp_path_factory, default_model_dir):
    """Two results files of the default on the bundled set (different problems), uncalibrated."""
    from tts_engine.cli import main

    folder = tmp_path_factory.mktemp("calibrate")
    problems = [json.loads(line) for line in open(_bundled())]
    random.Random(0).shuffle(problems)
    paths = []
    for name, part in (("a", problems[:40]), ("b", problems[40:72])):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(p) + "\n" for p in part))
        out = folder / f"{name}_results.jsonl"
        args = [str(folder / f"{name}.jsonl"), "--n", "4", "--calibration", "none", "--out", str(out), "--quiet"]
        result = CliRunner().invoke(main, ["solve", *args])
        assert result.exit_code == 0, result.output
        paths.append(out)
    return folder, paths


def _bundled():
    from tts_engine.inputs.models import default_problems_path

    return default_problems_path()


def test_calibrate_fits_a_run_and_solve_uses_the_file(labelled_runs):
    from tts_engine.cli import main
    from tts_engine.running.results import read_results

    folder, (first, second) = labelled_runs
    result = CliRunner().invoke(main, ["calibrate", str(first), "--out", str(folder / "cal.json"), "--holdout", "0.3"])
    assert result.exit_code == 0, result.output
    assert "answers of weighted:verifier_recompute that the fit did not see" in result.output
    assert "p_correct (fitted)" in result.output and (folder / "cal.png").is_file()
    calibration = load_calibration(folder / "cal.json")
    assert [f.kind for f in calibration.fits] == [KIND, VOTES_ONLY]
    assert calibration.fits[0].held_out["answers"] > 0

    out = folder / "calibrated.jsonl"
    args = [str(folder / "b.jsonl"), "--n", "4", "--calibration", str(folder / "cal.json"), "--out", str(out)]
    result = CliRunner().invoke(main, ["solve", *args, "--abstain-below", "0.5"])
    assert result.exit_code == 0, result.output
    assert "p_correct of weighted:verifier_recompute: calibrated" in result.output
    assert "abstained below 0.5: coverage" in result.output
    calibrated, raw = list(read_results(out)), list(read_results(second))
    key = f"weighted:{KIND}"
    assert [r["aggregations"][key]["answer"] for r in calibrated] == [r["aggregations"][key]["answer"] for r in raw]
    p = [r["aggregations"][key]["p_correct"] for r in calibrated]
    assert p != [r["aggregations"][key]["p_correct"] for r in raw]  # the fit, not the uncalibrated mapping
    assert all(r["aggregations"][key]["abstained"] == (v < 0.5) for r, v in zip(calibrated, p))


def test_calibrate_checks_a_fit_on_another_file(labelled_runs):
    from tts_engine.cli import main

    folder, (first, second) = labelled_runs
    args = ["calibrate", str(first), "--test", str(second), "--out", str(folder / "whole.json")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "fitted on 40 problems of 1 file(s); checked on 32 of 1" in result.output
    held = load_calibration(folder / "whole.json").fits[0].held_out
    assert held["answers"] == 32 and 0 <= held["ece"] <= 1


def test_calibrate_fits_each_family_and_relabels_on_request(labelled_runs):
    from tts_engine.cli import main

    folder, (first, _) = labelled_runs
    out = folder / "as_adaptive.json"
    args = ["calibrate", str(first), "--family", "adaptive", "--holdout", "0", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    fits = load_calibration(out).fits
    assert {f.family for f in fits} == {"adaptive"} and {f.kind for f in fits} == {KIND, VOTES_ONLY}
    assert load_calibration(out).fit_for([KIND]) is None  # fixed records read it as uncalibrated


def test_calibrate_refuses_runs_without_references(tmp_path, labelled_runs):
    from tts_engine.cli import main

    _, (first, _) = labelled_runs
    lines = [json.loads(line) for line in open(first)]
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text("".join(json.dumps({**r, "reference": None}) + "\n" for r in lines))
    result = CliRunner().invoke(main, ["calibrate", str(unlabelled), "--out", str(tmp_path / "c.json")])
    assert result.exit_code != 0
    assert "no solved problem with a reference answer" in result.output


def test_the_shipped_checkpoints_carry_their_calibration(default_model_dir, tango_pair):
    from pathlib import Path

    for folder in (default_model_dir, tango_pair[1]):
        calibration = load_calibration(Path(folder) / FILE_NAME)
        assert calibration.calibrated and calibration.fits[0].fitted_on["problems"] > 0


def test_curve_adds_the_selective_view(labelled_runs, tmp_path):
    from tts_engine.eval.cli import curve

    _, (first, _) = labelled_runs
    result = CliRunner().invoke(curve, [str(first), "--out-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "can these answers be trusted? p_correct: uncalibrated" in result.output
    assert (tmp_path / "c" / "risk_coverage.png").is_file() and (tmp_path / "c" / "reliability.png").is_file()
    (c,) = json.loads((tmp_path / "c" / "curves.json").read_text())["curves"]
    head = c["selective"]["votes"][c["selective"]["headline"]]
    assert head["p_correct"]["aurc"] <= head["confidence"]["aurc"]  # the probability ranks answers at least as well
    assert len(head["p_correct"]["risk_coverage"]["coverage"]) >= 1
