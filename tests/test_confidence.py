"""Token confidence (DeepConf): the pure definitions on hand-made top-k log-probs, the filtering rule, every
backend's per-token confidences, the hf backend's in-loop stop, and the score kinds in the engine's records."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from tts_engine.backends import openai as ob
from tts_engine.backends import vllm as vb
from tts_engine.backends.base import Sample
from tts_engine.engine import Engine
from tts_engine.inputs.problems import Problem
from tts_engine.params import SamplingParams
from tts_engine.pipeline.aggregate import aggregation_keys, filter_top, vote_classes
from tts_engine.pipeline.confidence import (
    CONFIDENCE_KINDS,
    confidence_scores,
    from_score,
    group_confidences,
    percentile_threshold,
    to_score,
    token_confidence,
    trace_confidences,
    window_confidence,
)
from tts_engine.strategies.rounds import join_continuation


# --- the definitions --------------------------------------------------------------------------------------
def test_token_confidence_is_minus_the_mean_top_k_log_prob():
    assert token_confidence([-0.5, -1.5, -4.0]) == pytest.approx(2.0)
    assert token_confidence([-0.1, -math.inf, -2.1]) == pytest.approx(1.1)  # -inf entries skipped
    assert token_confidence([]) == 0.0


def test_group_tail_and_bottom_confidences_by_hand():
    conf = [4.0, 2.0, 6.0, 1.0, 3.0, 8.0]
    # windows of 2: (4,2) (2,6) (6,1) (1,3) (3,8) -> 3, 4, 3.5, 2, 5.5
    assert group_confidences(conf, 2) == pytest.approx([3.0, 4.0, 3.5, 2.0, 5.5])
    assert group_confidences(conf, 10) == pytest.approx([4.0])  # shorter than a window: one group
    assert window_confidence(conf, 3) == pytest.approx(4.0)  # (1 + 3 + 8) / 3
    assert window_confidence(conf[:2], 3) is None
    got = trace_confidences(conf, window=2, tail=2)
    assert got == pytest.approx({"conf_mean": 4.0, "conf_lowest_group": 2.0, "conf_bottom10": 2.0, "conf_tail": 5.5})
    # 20 groups of window 1: bottom 10% = mean of the 2 lowest
    twenty = [float(v) for v in range(1, 21)]
    assert trace_confidences(twenty, window=1, tail=4)["conf_bottom10"] == pytest.approx(1.5)
    assert trace_confidences(twenty, window=1, tail=4)["conf_tail"] == pytest.approx(18.5)


def test_scores_map_c_into_unit_interval_monotonically():
    assert to_score(0.0) == 0.0 and to_score(1.0) == 0.5 and to_score(3.0) == 0.75
    assert from_score(0.75) == pytest.approx(3.0)
    scores = confidence_scores([4.0, 2.0, 6.0, 1.0, 3.0, 8.0], 2, 2)
    assert set(scores) == set(CONFIDENCE_KINDS)
    assert scores["conf_lowest_group"] == pytest.approx(2 / 3) and scores["conf_mean"] == pytest.approx(0.8)
    assert confidence_scores([], 2, 2) == dict.fromkeys(CONFIDENCE_KINDS, 0.0)


def test_percentile_threshold_keeps_the_top_eta():
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert percentile_threshold(values, 0.9) == pytest.approx(1.9)  # 10th percentile
    assert percentile_threshold(values, 0.1) == pytest.approx(9.1)  # 90th percentile
    assert sum(v >= percentile_threshold(values, 0.1) for v in values) == 1
    with pytest.raises(ValueError, match="keep must be in"):
        percentile_threshold(values, 0.0)


# --- filtering --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 10, 64])
@pytest.mark.parametrize("keep", [0.1, 0.9, 0.25])
def test_filter_keeps_exactly_ceil_eta_n_highest(n, keep):
    scores = [((i * 37) % 11) / 11 for i in range(n)]
    kept = filter_top(scores, keep)
    assert len(kept) == math.ceil(keep * n)
    dropped = set(range(n)) - set(kept)
    assert all(scores[k] >= scores[d] for k in kept for d in dropped)


def test_filtered_vote_by_hand():
    classes = [0, 0, 0, 1, 1, -1, 2, 0, 0, 0]  # class 0 has the majority
    scores = [0.1, 0.2, 0.1, 0.9, 0.8, 0.99, 0.3, 0.1, 0.2, 0.1]
    assert vote_classes("majority", classes).answer_class == 0
    # top 10% = 1 sample: index 5, no answer -> nothing votes
    assert vote_classes("filtered10", classes, scores).answer_class == -1
    # top 30% = 3 samples: 5 (none), 3 and 4 (class 1)
    vote = vote_classes("filtered30", classes, scores)
    assert vote.answer_class == 1 and vote.class_counts == [0, 2, 0] and vote.confidence == 1.0
    # top 90% = 9 samples: all but one of the 0.1s (the last, ties go to the earlier sample)
    vote = vote_classes("filtered90", classes, scores)
    assert vote.class_counts == [5, 2, 1] and vote.answer_class == 0
    weighted = vote_classes("filtered50_weighted", classes, scores)  # 5, 3, 4, 6, 1 -> class 1 weighs 1.7
    assert weighted.answer_class == 1 and weighted.class_totals[1] == pytest.approx(1.7)
    with pytest.raises(ValueError, match="filtered<percent>"):
        vote_classes("filtered0", classes, scores)


def test_records_carry_filters_for_every_kind():
    assert aggregation_keys(["conf_tail"]) == [
        "majority",
        "weighted:conf_tail",
        "best_of_n:conf_tail",
        "filtered10:conf_tail",
        "filtered90:conf_tail",
    ]


# --- backends ---------------------------------------------------------------------------------------------
def test_hf_confidences_match_a_full_forward_pass(hf_backend):
    prompt = "What is 2+3?\n"
    sample = hf_backend.generate([prompt], SamplingParams(n=1, max_new_tokens=10, seed=5, top_logprobs=5))[0][0]
    ids = torch.tensor([hf_backend.encode(prompt) + sample.token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(hf_backend.model(ids).logits[0].float(), -1)
    start = len(hf_backend.encode(prompt)) - 1
    expected = [-logp[start + k].topk(5).values.mean().item() for k in range(sample.num_tokens)]
    assert sample.confidences == pytest.approx(expected, abs=1e-4)
    off = hf_backend.generate([prompt], SamplingParams(n=1, max_new_tokens=10, seed=5, top_logprobs=0))[0][0]
    assert off.confidences == [] and off.token_ids == sample.token_ids


def test_hf_stops_a_row_mid_sequence_below_the_threshold(hf_backend):
    prompts = ["Compute 12*7 step by step.\n", "What is 2+3?\n"]
    free = hf_backend.generate(prompts, SamplingParams(n=2, max_new_tokens=24, seed=2, top_logprobs=4))
    assert all(s.num_tokens > 6 for row in free for s in row)  # the tiny model rarely ends early
    window = 3
    low = [free[0][0].confidences, free[0][1].confidences]
    # the first prompt's threshold: just above its sample 0's lowest full window -> it stops exactly there
    groups = group_confidences(low[0], window)
    first_low = min(range(len(groups)), key=lambda g: groups[g])
    threshold = groups[first_low] + 1e-6
    params = SamplingParams(
        n=2, max_new_tokens=24, seed=2, top_logprobs=4, confidence_window=window, stop_below=[threshold, -math.inf]
    )
    out = hf_backend.generate(prompts, params)
    for s, f in zip(out[0], free[0]):
        stop_at = next((g for g, c in enumerate(group_confidences(f.confidences, window)) if c < threshold), None)
        if stop_at is None:
            assert s.token_ids == f.token_ids and s.finish_reason == f.finish_reason
        else:
            assert s.finish_reason == "low_confidence"
            assert s.token_ids == f.token_ids[: stop_at + window]  # stopped at the window's last token
            assert s.num_tokens < f.num_tokens and s.confidences == pytest.approx(f.confidences[: s.num_tokens])
    assert out[0][0].finish_reason == "low_confidence" and out[0][0].num_tokens == first_low + window
    assert [s.token_ids for s in out[1]] == [s.token_ids for s in free[1]]  # -inf: never stopped


def test_stop_below_is_validated():
    with pytest.raises(ValueError, match="stop_below needs top_logprobs >= 1"):
        SamplingParams(top_logprobs=0, stop_below=1.0)
    with pytest.raises(ValueError, match="top_logprobs must be an integer >= 0"):
        SamplingParams(top_logprobs=-1)
    with pytest.raises(ValueError, match="stop_below is checked inside the hf backend"):
        vb.build_sampling_kwargs(SamplingParams(stop_below=1.0), seed=0, max_tokens=4)
    with pytest.raises(ValueError, match="stop_below is checked inside the hf backend"):
        ob.build_completion_body("m", "p", SamplingParams(stop_below=1.0), max_tokens=4, vllm_extensions=True)


def _lp(value):
    return SimpleNamespace(logprob=value, rank=1, decoded_token=None)


def test_vllm_confidences_from_the_top_k_of_each_position():
    assert vb.build_sampling_kwargs(SamplingParams(top_logprobs=3), seed=0, max_tokens=4)["logprobs"] == 3
    # position 0: top 3 plus the sampled token (id 9, rank 5) -> only the 3 largest count
    positions = [{1: _lp(-0.1), 2: _lp(-2.0), 3: _lp(-3.9), 9: _lp(-6.0)}, {9: _lp(-0.3), 4: _lp(-1.2), 5: _lp(-1.5)}]
    out = SimpleNamespace(index=0, text="ab", token_ids=[9, 9], logprobs=positions, finish_reason="stop")
    sample = vb.parse_completion(out, 3, top_k=3)
    assert sample.confidences == pytest.approx([2.0, 1.0])
    assert sample.logprobs == pytest.approx([-6.0, -0.3])
    assert vb.parse_completion(out, 3).confidences == []


def test_openai_confidences_from_top_logprobs():
    body = ob.build_completion_body("m", "p", SamplingParams(n=2, top_logprobs=5), max_tokens=4, vllm_extensions=True)
    assert body["logprobs"] == 5 and body["return_tokens_as_token_ids"] is True
    off = ob.build_completion_body("m", "p", SamplingParams(n=2, top_logprobs=0), max_tokens=4, vllm_extensions=True)
    assert off["logprobs"] == 1 and "return_tokens_as_token_ids" not in off
    choice = {
        "index": 0,
        "text": "ab",
        "token_ids": [7, 8],
        "finish_reason": "stop",
        "logprobs": {
            "token_logprobs": [-0.1, -0.3],
            "top_logprobs": [
                {"token_id:7": -0.1, "token_id:1": -2.0, "token_id:2": -3.9},
                {"token_id:8": -0.3, "token_id:4": -1.2, "token_id:5": -1.5, "token_id:6": -9.0},
            ],
        },
    }
    sample = ob.parse_choice(choice, 3, lambda text: [], top_k=3)
    assert sample.confidences == pytest.approx([2.0, 1.0])


def test_continuation_joins_confidences():
    old = Sample(text="a", token_ids=[1], finish_reason="length", logprobs=[-0.1], confidences=[2.0])
    new = Sample(text="b", token_ids=[2], finish_reason="stop", logprobs=[-0.2], confidences=[3.0])
    assert join_continuation(old, new).confidences == [2.0, 3.0]


# --- records ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return Engine(tiny_model_dir, verifier="none")


def test_records_carry_the_confidence_kinds(engine):
    problems = [Problem(id="a", text="Compute 1+1.", reference="2")]
    record = engine.solve(problems, n=3, max_new_tokens=12, top_logprobs=4, confidence_window=3, progress=False)[0]
    for s in record["samples"]:
        assert set(CONFIDENCE_KINDS) <= set(s["scores"]) and all(0 <= v < 1 for v in s["scores"].values())
    assert {"filtered10:conf_lowest_group", "weighted:conf_tail", "filtered90:likelihood"} <= set(
        record["aggregations"]
    )
    assert record["run"]["top_logprobs"] == 4 and record["run"]["confidence_window"] == 3
    # the same samples scored by hand
    sample = engine.backend.generate(
        [record["prompt"]], SamplingParams(n=3, max_new_tokens=12, top_logprobs=4, confidence_window=3)
    )[0][0]
    assert record["samples"][0]["scores"]["conf_lowest_group"] == pytest.approx(
        to_score(min(group_confidences(sample.confidences, 3))), abs=1e-6
    )
    plain = engine.solve(problems, n=2, max_new_tokens=8, top_logprobs=0, progress=False)[0]
    assert list(plain["samples"][0]["scores"]) == ["likelihood"] and "top_logprobs" not in plain["run"]
