"""The online confidence strategy (deepconf) on a tiny random model: warm-up, thresholds, the stop on every
path (in the hf loop, by chunks), votes without stopped samples, consensus and the budget of N."""

from __future__ import annotations

import math

import pytest

from tts_engine.backends.base import Sample
from tts_engine.engine import Engine
from tts_engine.inputs.problems import Problem
from tts_engine.pipeline.aggregate import vote_predictions
from tts_engine.pipeline.confidence import group_confidences, percentile_threshold
from tts_engine.pipeline.records import SampleRecord, voting_samples
from tts_engine.strategies.deepconf import DeepConfConfig, stop_low, votes_from

PROBLEMS = [Problem(id=f"p{i}", text=f"Compute {i}+{i}.", reference=str(2 * i)) for i in range(2)]


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return Engine(tiny_model_dir, verifier="none")


def solve(engine, **config):
    n = config.pop("n", 8)
    return engine.solve(
        PROBLEMS, strategy="deepconf", n=n, max_new_tokens=16, config=DeepConfConfig(**config), progress=False
    )


def test_consensus_zero_stops_after_the_warm_up_with_a_fixed_runs_samples(engine):
    records = solve(engine, warmup=3, consensus=0.0)
    fixed = engine.solve(PROBLEMS, n=3, max_new_tokens=16, progress=False)
    for record, plain in zip(records, fixed):
        block = record["deepconf"]
        assert block["n_used"] == 3 and block["stopped_because"] == "consensus" and block["waves"] == 0
        assert [s["text"] for s in record["samples"]] == [s["text"] for s in plain["samples"]]
        assert record["run"]["strategy"] == "deepconf" and record["run"]["deepconf"]["warmup"] == 3


def test_unreachable_consensus_runs_to_n_and_stops_low_confidence_samples(engine):
    # eta 0.1: the threshold is the warm-up's 90th percentile of lowest group confidence: most later samples stop
    records = solve(engine, n=11, warmup=3, trace_wave=4, eta=0.1, consensus=1.0)
    for record in records:
        block = record["deepconf"]
        assert block["n_used"] == 11 and len(record["samples"]) == 11 and block["waves"] == 2  # 3 + 4 + 4 (cut)
        assert block["stopped_because"] == "max_n"
        warm = record["samples"][:3]
        assert all(s["finish_reason"] != "low_confidence" for s in warm)  # warm-up samples are never stopped
        stopped = [s for s in record["samples"][3:] if s["finish_reason"] == "low_confidence"]
        assert block["stopped_samples"] == len(stopped) and len(stopped) >= 1
        assert all(s["num_tokens"] < 16 for s in stopped)
        assert block["tokens_spent"] == sum(s["num_tokens"] for s in record["samples"])


def test_thresholds_are_the_percentile_of_the_warm_ups_lowest_group(engine, monkeypatch):
    seen = []
    original = engine.backend.generate
    monkeypatch.setattr(engine.backend, "generate", lambda p, params: seen.append(params) or original(p, params))
    records = solve(engine, n=6, warmup=4, trace_wave=2, eta=0.5, consensus=1.0)
    warm_params, later = seen[0], seen[1]
    assert warm_params.n == 4 and warm_params.stop_below is None
    assert later.n == 2 and len(later.stop_below) == len(PROBLEMS)
    for record, threshold in zip(records, later.stop_below):
        warm = engine.backend.generate([record["prompt"]], warm_params)[0]
        lows = [min(group_confidences(s.confidences, warm_params.confidence_window)) for s in warm]
        assert threshold == pytest.approx(percentile_threshold(lows, 0.5))
        assert record["deepconf"]["threshold"] == pytest.approx(threshold, abs=1e-5)


def test_chunked_stop_on_backends_without_an_in_loop_stop(engine, monkeypatch):
    monkeypatch.setattr(engine.backend, "stops_in_loop", False)
    seen = []
    original = engine.backend.generate
    monkeypatch.setattr(engine.backend, "generate", lambda p, params: seen.append(params) or original(p, params))
    records = solve(engine, n=7, warmup=3, trace_wave=4, eta=0.1, consensus=1.0, stop_check_tokens=5)
    assert records[0]["run"]["deepconf"]["stop_mode"] == "chunks of 5 tokens"
    assert all(p.stop_below is None for p in seen)
    assert seen[1].max_new_tokens == 5 and all(p.max_new_tokens <= 5 for p in seen[2:])  # chunk by chunk
    window = engine.solve(PROBLEMS[:1], n=1, max_new_tokens=2, progress=False)[0]["run"]["confidence_window"]
    for record in records:
        for s in record["samples"][3:]:
            if s["finish_reason"] == "low_confidence":
                assert s["num_tokens"] >= window  # at a chunk's end, or where it ended within that chunk
    assert any(s["finish_reason"] == "low_confidence" for r in records for s in r["samples"])


def test_stop_low_marks_only_samples_with_a_low_window():
    high = Sample(text="a", token_ids=[1, 2, 3], finish_reason="length", confidences=[5.0, 5.0, 5.0])
    dip = Sample(text="b", token_ids=[1, 2, 3], finish_reason="stop", confidences=[5.0, 1.0, 1.0])
    short = Sample(text="c", token_ids=[1], finish_reason="length", confidences=[0.1])
    out = stop_low([high, dip, short], threshold=2.0, window=2)
    assert [s.finish_reason for s in out] == ["length", "low_confidence", "length"]


def test_stopped_samples_vote_for_nothing_or_low():
    def sample(answer, cls, reason, conf):
        return SampleRecord(answer, answer, cls, "ok", cls == 0, 1, reason, {"likelihood": 0.5, "conf_tail": conf})

    samples = [
        sample("1", 0, "stop", 0.9),
        sample("2", 1, "low_confidence", 0.2),
        sample("2", 1, "low_confidence", 0.2),
    ]

    def votes(stopped_votes):
        rule = votes_from(stopped_votes)
        for sample in samples:
            sample.votes = rule is None or rule(sample)
        return vote_predictions(voting_samples(samples), [True, False], has_reference=True)

    none = votes("none")
    assert none["majority"].answer == "1" and none["majority"].correct
    low = votes("low")
    assert low["majority"].answer == "2"  # two stopped votes outnumber one
    assert low["weighted:conf_tail"].answer == "1"  # but weigh less
    assert [s.answer for s in samples] == ["1", "2", "2"]  # the record keeps every answer


def test_bad_settings_fail_early(engine):
    with pytest.raises(ValueError, match="eta must be in"):
        DeepConfConfig(eta=0)
    with pytest.raises(ValueError, match="warmup must be an integer >= 1"):
        DeepConfConfig(warmup=0)
    with pytest.raises(ValueError, match="vote_from must be one of"):
        solve(engine, vote_from="weighted:nothing")
    with pytest.raises(ValueError, match="warmup must be <= n"):
        solve(engine, n=2, warmup=4)
    with pytest.raises(ValueError, match="needs token confidences"):
        engine.solve(PROBLEMS, strategy="deepconf", n=4, top_logprobs=0, progress=False)
    assert math.isfinite(DeepConfConfig().consensus)
