"""The hf backend's prefix cache: a prompt that extends a finished sample computes only its new tokens,
and every output is the same as without the cache."""

import math

import pytest
import torch

from tts_engine.backends.hf import HFBackend
from tts_engine.backends.prefix_cache import PrefixCache
from tts_engine.inputs.tiny import TinyModelConfig, build_char_tokenizer, build_tiny_model
from tts_engine.params import SamplingParams


@pytest.fixture(scope="module")
def model_and_tokenizer():
    tokenizer = build_char_tokenizer()
    model = build_tiny_model(
        tokenizer, TinyModelConfig(hidden_size=64, num_heads=4, num_layers=2, max_position_embeddings=256, seed=3)
    )
    return model, tokenizer


def _backends(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    return (
        HFBackend(model, tokenizer, device="cpu", prefix_cache_tokens=0),
        HFBackend(model, tokenizer, device="cpu", prefix_cache_tokens=100_000),
    )


def test_trie_finds_the_longest_shared_prefix_and_cuts_the_kv():
    cache = PrefixCache(max_tokens=100)
    kv = [(torch.arange(12.0).reshape(1, 6, 2), torch.zeros(1, 6, 2))]
    cache.put([1, 2, 3, 4, 5, 6], kv)
    length, layers = cache.longest([1, 2, 3, 9])
    assert length == 3 and layers[0][0].shape == (1, 3, 2)
    assert torch.equal(layers[0][0], kv[0][0][:, :3])
    assert cache.longest([7, 1]) == (0, None)
    cache.put(list(range(10, 105)), [(torch.zeros(1, 95, 2), torch.zeros(1, 95, 2))])
    assert cache.longest([1, 2]) == (0, None)  # the budget was passed: emptied before the new entry
    with pytest.raises(ValueError, match="max_tokens"):
        PrefixCache(0)


def test_samples_are_the_same_with_and_without_the_cache(model_and_tokenizer):
    plain, cached = _backends(model_and_tokenizer)
    prompts = ["Compute left to right: 3+4.\n", "Compute left to right: 12*3-5.\n"]
    params = SamplingParams(n=3, temperature=1.0, max_new_tokens=20, seed=7)
    first = cached.generate(prompts, params)
    assert [[s.text for s in row] for row in plain.generate(prompts, params)] == [
        [s.text for s in row] for row in first
    ]
    # Continue every sample: the prompt + sample prefix is read from the cache, the outputs do not change.
    follow = [p + s.text + "<|endoftext|>Check.\n" for p, row in zip(prompts, first) for s in row]
    params1 = SamplingParams(n=1, temperature=1.0, max_new_tokens=12, seed=1)
    with_cache = cached.generate(follow, params1)
    without = plain.generate(follow, params1)
    for a, b, text in zip(with_cache, without, follow, strict=True):
        assert a[0].text == b[0].text
        assert a[0].logprobs == pytest.approx(b[0].logprobs, abs=1e-4)
        assert a[0].num_cached_tokens > 0 and b[0].num_cached_tokens == 0
        assert a[0].num_prompt_tokens - a[0].num_cached_tokens <= len("<|endoftext|>Check.\n") + 1


def test_verifier_scores_reuse_the_cache_and_match(model_and_tokenizer):
    plain, cached = _backends(model_and_tokenizer)
    prompts = ["Compute left to right: 5-2.\n"]
    params = SamplingParams(n=4, temperature=1.0, max_new_tokens=16, seed=2)
    samples = cached.generate(prompts, params)[0]
    plain.generate(prompts, params)
    queries = [prompts[0] + s.text + "\n\nIs this solution correct? Answer Yes or No.\n" for s in samples]
    assert all(c > len(prompts[0]) for c in cached.cached_prefix_tokens(queries))
    yes, no = 80, 81
    got = cached.yes_no_logprobs(queries, yes, no)
    want = plain.yes_no_logprobs(queries, yes, no)
    for (a, b), (c, d) in zip(got, want, strict=True):
        assert math.isclose(a, c, abs_tol=1e-4) and math.isclose(b, d, abs_tol=1e-4)
    assert plain.cached_prefix_tokens(queries) == [0] * len(queries)


def test_a_full_cache_drops_its_older_half_and_keeps_the_newest_sequences():
    cache = PrefixCache(max_tokens=100)

    def kv(n):
        return [(torch.zeros(1, n, 2), torch.zeros(1, n, 2))]

    a, b, c = list(range(0, 30)), list(range(100, 130)), list(range(200, 230))
    for ids in (a, b, c):
        cache.put(ids, kv(len(ids)))
        assert cache.tokens <= cache.max_tokens
    assert cache.longest(a)[0] == 0  # the oldest half went first
    assert cache.longest(b)[0] == 30 and cache.longest(c)[0] == 30  # the sequence just before the newest stays
