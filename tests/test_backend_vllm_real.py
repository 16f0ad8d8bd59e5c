"""The real vllm backend end to end on a tiny checkpoint, against the hf backend (skipped without vLLM)."""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed"),
]

from tts_engine.params import SamplingParams  # noqa: E402

PROMPTS = ["12+7=", "Compute 3*4 and explain step by step.\n", "x y z\n"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from tts_engine.inputs.tiny import save_tiny_checkpoint

    return str(save_tiny_checkpoint(tmp_path_factory.mktemp("vllm") / "tiny"))


@pytest.fixture(scope="module")
def hf(tiny_dir):
    from tts_engine.backends.hf import HFBackend

    return HFBackend(tiny_dir, device="cpu")


@pytest.fixture(scope="module")
def vllm_backend(tiny_dir):
    from tts_engine.backends.vllm import VLLMBackend

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    backend = VLLMBackend(tiny_dir, dtype="float32", max_model_len=512, enforce_eager=True)
    yield backend
    backend.close()


def teacher_forced_logprobs(hf, prompt: str, token_ids: list[int]) -> list[float]:
    """Raw (temperature 1) log-probs of `token_ids` after `prompt` under the hf model."""
    ids = hf.encode(prompt)
    with torch.inference_mode():
        logits = hf.model(torch.tensor([ids + token_ids])).logits[0].float()
    logp = logits[len(ids) - 1 : -1].log_softmax(-1)  # (T, V)
    return logp.gather(-1, torch.tensor(token_ids)[:, None]).squeeze(-1).tolist()


def test_greedy_generation_matches_hf(vllm_backend, hf):
    params = SamplingParams(n=2, temperature=0.0, max_new_tokens=24)
    got, want = vllm_backend.generate(PROMPTS, params), hf.generate(PROMPTS, params)
    for g_samples, w_samples in zip(got, want):
        assert len(g_samples) == 2
        g, w = g_samples[0], w_samples[0]
        assert g.token_ids == w.token_ids and g.text == w.text and g.finish_reason == w.finish_reason
        assert g.num_prompt_tokens == w.num_prompt_tokens
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-3)
        # token confidence from vLLM's top-k log-probs equals hf's from its logits (the same k by default)
        assert len(g.confidences) == g.num_tokens and g.confidences == pytest.approx(w.confidences, abs=1e-3)


def test_sampled_logprobs_are_raw(vllm_backend, hf):
    params = SamplingParams(n=4, temperature=0.7, top_p=0.9, max_new_tokens=16, seed=5)
    out = vllm_backend.generate(PROMPTS, params)
    assert [len(s) for s in out] == [4, 4, 4]
    for prompt, samples in zip(PROMPTS, out):
        for s in samples:
            assert len(s.logprobs) == s.num_tokens and s.finish_reason in ("stop", "length")
            assert s.logprobs == pytest.approx(teacher_forced_logprobs(hf, prompt, s.token_ids), abs=1e-3)
    again = vllm_backend.generate(PROMPTS, params)
    assert [[s.token_ids for s in x] for x in again] == [[s.token_ids for s in x] for x in out]


def test_yes_no_logprobs_match_hf(vllm_backend, hf):
    yes, no = hf.encode("Yes")[0], hf.encode("No")[0]
    prompts = [p + "solution\n\nIs this solution correct? Answer Yes or No.\n" for p in PROMPTS]
    got = vllm_backend.yes_no_logprobs(prompts, yes, no)
    for prompt, (gy, gn) in zip(prompts, got):
        wy, wn = teacher_forced_logprobs(hf, prompt, [yes])[0], teacher_forced_logprobs(hf, prompt, [no])[0]
        assert gy == pytest.approx(wy, abs=1e-3) and gn == pytest.approx(wn, abs=1e-3)


def test_continuation_logprobs_match_hf(vllm_backend, hf):
    continuations = ["19\n", "12 because", "w"]
    got = vllm_backend.continuation_logprobs(PROMPTS, continuations)
    want = hf.continuation_logprobs(PROMPTS, continuations)
    assert got == pytest.approx(want, abs=1e-3)
    assert len(set(round(g, 3) for g in got)) == 3  # three different pairs, three different values


def test_verification_prompt_hits_the_prefix_cache(vllm_backend):
    prompt = "".join(f"{i}+{i}={2 * i}. " for i in range(40)) + "\n"  # > 128 tokens: one CPU cache block
    solution = vllm_backend.generate([prompt], SamplingParams(n=1, temperature=0.0, max_new_tokens=8))[0][0]
    verify = vllm_backend.encode(prompt + solution.text + "\n\nIs this solution correct? Answer Yes or No.\n")
    out = vllm_backend.llm.generate(
        [{"prompt_token_ids": verify}], vllm_backend._vllm.SamplingParams(max_tokens=1), use_tqdm=False
    )[0]
    assert out.num_cached_tokens >= 128


def test_protocol_facts(vllm_backend, hf):
    assert vllm_backend.max_model_len == 512
    assert vllm_backend.num_parameters == hf.num_parameters
    assert vllm_backend.decode(vllm_backend.encode("a b\nc")) == "a b\nc"


def test_many_seeded_requests_in_one_call(vllm_backend):
    prompts = [f"Problem {i}: compute {i}*{i}+{i} step by step, then give the answer.\n" for i in range(32)]
    out = vllm_backend.generate(prompts, SamplingParams(n=8, max_new_tokens=32, seed=0))
    assert [len(s) for s in out] == [8] * 32
    assert all(s.num_prompt_tokens == len(vllm_backend.encode(p)) for p, x in zip(prompts, out) for s in x)
