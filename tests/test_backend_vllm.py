"""The vllm backend's request building and output parsing, on fake objects shaped like vLLM's outputs."""

from __future__ import annotations

import importlib.util
import math
import os
from types import SimpleNamespace

import pytest

from tts_engine.backends import vllm as vb
from tts_engine.params import SamplingParams


def logprob(value):
    return SimpleNamespace(logprob=value, rank=1, decoded_token=None)


def completion(index, text, token_ids, lps, finish_reason="stop"):
    positions = [{t: logprob(lp), 999: logprob(-9.0)} for t, lp in zip(token_ids, lps)]
    return SimpleNamespace(
        index=index,
        text=text,
        token_ids=token_ids,
        cumulative_logprob=sum(lps),
        logprobs=positions,
        finish_reason=finish_reason,
        stop_reason=None,
    )


def request_output(completions, prompt_ids=(1, 2, 3)):
    return SimpleNamespace(
        request_id="0", prompt=None, prompt_token_ids=list(prompt_ids), outputs=completions, finished=True
    )


def test_sampling_kwargs_map_one_to_one():
    params = SamplingParams(n=8, temperature=0.7, top_p=0.9, max_new_tokens=100, seed=3, stop=["\n\n"])
    kwargs = vb.build_sampling_kwargs(params, seed=11, max_tokens=64)
    assert kwargs["n"] == 8 and kwargs["temperature"] == 0.7 and kwargs["top_p"] == 0.9
    assert kwargs["max_tokens"] == 64 and kwargs["seed"] == 11 and kwargs["stop"] == ["\n\n"]
    assert kwargs["logprobs"] == params.top_logprobs and kwargs["include_stop_str_in_output"] is False


def test_greedy_asks_for_one_sample_and_no_stop_list():
    kwargs = vb.build_sampling_kwargs(SamplingParams(n=4, temperature=0.0), seed=None, max_tokens=5)
    assert kwargs["n"] == 1 and kwargs["top_p"] == 1.0 and kwargs["stop"] is None


def test_bad_max_tokens_is_named():
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        vb.build_sampling_kwargs(SamplingParams(), seed=0, max_tokens=0)


def test_prompt_seed_depends_on_seed_and_prompt_only():
    import subprocess
    import sys

    # the same in another process with another string-hash salt (a resumed run, another shard)
    code = "from tts_engine.backends import vllm as vb; print(vb.prompt_seed(0, 'a'), vb.prompt_seed(7, 'b'))"
    other = subprocess.run(
        [sys.executable, "-P", "-c", code],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.split() == [str(vb.prompt_seed(0, "a")), str(vb.prompt_seed(7, "b"))]
    assert vb.prompt_seed(0, "a") != vb.prompt_seed(0, "b")
    assert vb.prompt_seed(0, "a") != vb.prompt_seed(1, "a")
    assert vb.prompt_seed(None, "a") is None
    assert 0 <= vb.prompt_seed(123, "x") < 2**31


def test_yes_no_kwargs_prefer_token_ids():
    exact = vb.build_yes_no_kwargs(5, 6, token_ids_supported=True)
    assert exact["logprob_token_ids"] == [5, 6] and "logprobs" not in exact and exact["max_tokens"] == 1
    full = vb.build_yes_no_kwargs(5, 6, token_ids_supported=False)
    assert full["logprobs"] == -1 and "logprob_token_ids" not in full


def test_parse_request_output_in_index_order_with_records():
    out = request_output(
        [
            completion(1, "b", [7, 8], [-0.5, -0.25], "length"),
            completion(0, "a", [4, 0], [-1.0, -2.0], "stop"),
        ]
    )
    samples = vb.parse_request_output(out, n=2)
    assert [s.text for s in samples] == ["a", "b"]
    assert samples[0].token_ids == [4, 0] and samples[0].logprobs == [-1.0, -2.0]
    assert samples[1].finish_reason == "length" and samples[1].num_tokens == 2
    assert all(s.num_prompt_tokens == 3 for s in samples)


def test_parse_request_output_repeats_a_greedy_sample():
    out = request_output([completion(0, "a", [4], [-1.0])])
    samples = vb.parse_request_output(out, n=3, num_prompt_tokens=9)
    assert [s.text for s in samples] == ["a"] * 3 and samples[0] is not samples[1]
    assert samples[2].num_prompt_tokens == 9


def test_parse_request_output_rejects_a_wrong_count():
    out = request_output([completion(0, "a", [4], [-1.0]), completion(1, "b", [4], [-1.0])])
    with pytest.raises(RuntimeError, match="2 completions for a request of n=3"):
        vb.parse_request_output(out, n=3)


def test_unknown_finish_reason_becomes_length_and_missing_logprobs_nan():
    comp = completion(0, "a", [4, 5], [-1.0, -1.0], finish_reason="abort")
    comp.logprobs[1] = {}
    sample = vb.parse_request_output(request_output([comp]), n=1)[0]
    assert sample.finish_reason == "length"
    assert sample.logprobs[0] == -1.0 and math.isnan(sample.logprobs[1])
    comp.logprobs = None
    assert all(math.isnan(x) for x in vb.parse_completion(comp, 0).logprobs)


def test_parse_yes_no_reads_both_tokens():
    comp = SimpleNamespace(
        index=0,
        text="",
        token_ids=[9],
        logprobs=[{9: logprob(-0.1), 5: logprob(-0.3), 6: logprob(-2.5)}],
        finish_reason="length",
    )
    assert vb.parse_yes_no(request_output([comp]), 5, 6) == (-0.3, -2.5)
    with pytest.raises(RuntimeError, match=r"lack token ids \[7\]"):
        vb.parse_yes_no(request_output([comp]), 5, 7)
    comp.logprobs = None
    with pytest.raises(RuntimeError, match="no log-probs"):
        vb.parse_yes_no(request_output([comp]), 5, 6)


def test_parse_continuation_reads_the_continuation_positions():
    out = request_output([], prompt_ids=(4, 5, 6, 7))
    out.prompt_logprobs = [None, {5: logprob(-1.0)}, {6: logprob(-0.5), 9: logprob(-0.1)}, {7: logprob(-0.25)}]
    assert vb.parse_continuation(out, 2, 2) == [-0.5, -0.25]  # tokens 6 and 7: the continuation only
    assert vb.parse_continuation(out, 1, 1) == [-1.0]
    out.prompt_logprobs[3] = {9: logprob(-0.1)}
    with pytest.raises(RuntimeError, match="lack position 3"):
        vb.parse_continuation(out, 2, 2)
    out.prompt_logprobs = None
    with pytest.raises(RuntimeError, match="no prompt log-probs"):
        vb.parse_continuation(out, 2, 2)


def test_checkpoint_num_parameters_matches_the_model(tmp_path):
    from transformers import AutoModelForCausalLM

    from tts_engine.inputs.tiny import TinyModelConfig, save_tiny_checkpoint

    path = save_tiny_checkpoint(
        tmp_path / "m", TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    )
    model = AutoModelForCausalLM.from_pretrained(path)
    assert vb.checkpoint_num_parameters(path) == sum(p.numel() for p in model.parameters())
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors"):
        vb.checkpoint_num_parameters(tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_constructing_without_vllm_says_how_to_install():
    with pytest.raises(ImportError, match=r"pip install tts-engine\[vllm\]"):
        vb.VLLMBackend("/nonexistent")
