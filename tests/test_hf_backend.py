from dataclasses import replace

import pytest
import torch

from tts_engine.backends.base import PromptTooLongError
from tts_engine.params import SamplingParams

PROMPTS = ["What is 2+3?\n", "Compute 12*7 step by step, please.\n", "x"]


def test_samples_in_input_order_with_records(hf_backend):
    out = hf_backend.generate(PROMPTS, SamplingParams(n=3, max_new_tokens=12, seed=1))
    assert [len(row) for row in out] == [3, 3, 3]
    for row, prompt in zip(out, PROMPTS):
        for s in row:
            assert s.finish_reason in ("stop", "length")
            assert 1 <= s.num_tokens <= 12 and len(s.logprobs) == s.num_tokens
            assert s.num_prompt_tokens == len(hf_backend.encode(prompt))
            assert all(lp <= 0 for lp in s.logprobs)


def test_batching_and_padding_do_not_change_samples(hf_backend):
    params = SamplingParams(n=4, max_new_tokens=16, seed=3)
    together = hf_backend.generate(PROMPTS, params)
    alone = hf_backend.generate(PROMPTS[1:2], params)
    assert [s.text for s in alone[0]] == [s.text for s in together[1]]
    old = hf_backend.max_batch_rows
    hf_backend.max_batch_rows = 5
    try:
        small_batches = hf_backend.generate(PROMPTS, params)
    finally:
        hf_backend.max_batch_rows = old
    assert [[s.token_ids for s in r] for r in small_batches] == [[s.token_ids for s in r] for r in together]


def test_seed_changes_samples(hf_backend):
    a = hf_backend.generate(PROMPTS[:1], SamplingParams(n=4, max_new_tokens=16, seed=1))
    b = hf_backend.generate(PROMPTS[:1], SamplingParams(n=4, max_new_tokens=16, seed=2))
    assert [s.text for s in a[0]] != [s.text for s in b[0]]
    assert len({s.text for s in a[0]}) > 1  # the N samples of one prompt differ


def test_logprobs_match_a_full_forward_pass(hf_backend):
    prompt = PROMPTS[0]
    sample = hf_backend.generate([prompt], SamplingParams(n=1, max_new_tokens=10, seed=5))[0][0]
    ids = torch.tensor([hf_backend.encode(prompt) + sample.token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(hf_backend.model(ids).logits[0].float(), -1)
    start = len(hf_backend.encode(prompt)) - 1
    expected = [logp[start + k, t].item() for k, t in enumerate(sample.token_ids)]
    assert sample.logprobs == pytest.approx(expected, abs=1e-4)


def test_greedy_stop_string_and_length(hf_backend):
    greedy = hf_backend.generate(PROMPTS[:1], SamplingParams(n=2, temperature=0, max_new_tokens=8))[0]
    assert greedy[0].text == greedy[1].text and greedy[0].finish_reason == "length"
    first_char = greedy[0].text[2]
    stopped = hf_backend.generate(PROMPTS[:1], SamplingParams(n=1, temperature=0, max_new_tokens=8, stop=[first_char]))[
        0
    ][0]
    assert stopped.finish_reason == "stop"
    assert first_char not in stopped.text and greedy[0].text.startswith(stopped.text)


def test_prompt_longer_than_context_fails_clearly(hf_backend):
    with pytest.raises(PromptTooLongError, match="prompt 1 has .* tokens, but the model's context is"):
        hf_backend.generate(["ok", "x" * (hf_backend.max_model_len + 5)], SamplingParams(max_new_tokens=2))


def test_yes_no_logprobs_match_full_logits(hf_backend):
    yes, no = hf_backend.encode("Yes")[0], hf_backend.encode("No")[0]
    prompts = ["3+4=7\nIs this solution correct? Answer Yes or No.\n", "short"]
    got = hf_backend.yes_no_logprobs(prompts, yes, no)
    for prompt, (ly, ln) in zip(prompts, got, strict=True):
        with torch.no_grad():
            logp = torch.log_softmax(hf_backend.model(torch.tensor([hf_backend.encode(prompt)])).logits[0, -1], -1)
        assert ly == pytest.approx(logp[yes].item(), abs=1e-4)
        assert ln == pytest.approx(logp[no].item(), abs=1e-4)


def test_continuation_logprobs_sum_the_teacher_forced_token_log_probs(hf_backend):
    import torch

    prompts, continuations = ["12+3=", "a much longer prompt 7*8="], ["15\n", "56\n"]
    got = hf_backend.continuation_logprobs(prompts, continuations)
    per_token = hf_backend.continuation_token_logprobs(prompts, continuations)
    for prompt, cont, value, tokens in zip(prompts, continuations, got, per_token, strict=True):
        p, c = hf_backend.encode(prompt), hf_backend.encode(cont)
        with torch.no_grad():
            logp = torch.log_softmax(hf_backend.model(torch.tensor([p + c])).logits[0].float(), -1)  # (T, V)
        expected = [logp[len(p) - 1 + k, t].item() for k, t in enumerate(c)]
        assert tokens == pytest.approx(expected, abs=1e-4)
        assert value == pytest.approx(sum(expected), abs=1e-4)
    assert got[0] != pytest.approx(hf_backend.continuation_logprobs(prompts[:1], ["16\n"])[0])


def test_continuation_logprobs_reuse_the_prefix_cache_without_changing_values(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    cold, warm = HFBackend(tiny_model_dir, prefix_cache_tokens=0), HFBackend(tiny_model_dir)
    prompt = "Compute 12+3*4 and check it. "
    written = warm.generate([prompt], SamplingParams(n=1, temperature=0.0, max_new_tokens=12))[0][0].text
    prompts = [prompt + written[:6], prompt + written, "not cached at all "]  # cached: part, all, none
    continuations = [written[6:9] or "x", "\n", "12"]
    assert warm.cached_prefix_tokens(prompts) == [len(warm.encode(p)) - 1 for p in prompts[:2]] + [0]
    got = warm.continuation_logprobs(prompts, continuations)
    assert got == pytest.approx(cold.continuation_logprobs(prompts, continuations), abs=1e-4)


def _records(out):
    return [[(s.token_ids, s.finish_reason, s.num_cached_tokens) for s in row] for row in out]


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(n=4, max_new_tokens=24, seed=2, stop=["\n", "7"]),
        SamplingParams(n=3, max_new_tokens=30, seed=4, top_p=0.8, temperature=0.7, stop_below=4.377),
        SamplingParams(n=2, max_new_tokens=10, temperature=0),
    ],
    ids=["stop strings", "top_p + low-confidence stop", "greedy"],
)
def test_static_loop_gives_the_dynamic_loops_samples(tiny_model_dir, params):
    """The static-shape loop (all columns, rows in a power-of-two bucket, finished rows masked until compaction),
    run eagerly on the CPU as the compiled CUDA step runs it, against the dynamic loop: same samples, same reasons,
    same log-probs and confidences, the same prefix-cache hits."""
    from tts_engine.backends.hf import HFBackend

    prompts = PROMPTS + ["Compute 12*7 step by step, please.\nYes"]  # shares a prefix with PROMPTS[1]
    outs = {}
    for loop in ("dynamic", "static"):
        backend = HFBackend(tiny_model_dir, decode_loop=loop, max_batch_rows=7)
        outs[loop] = [backend.generate(prompts, params), backend.generate(prompts[1:], params)]  # 2nd: cache hits
    assert _records(outs["static"][0]) == _records(outs["dynamic"][0])
    assert _records(outs["static"][1]) == _records(outs["dynamic"][1])
    assert any(s.num_cached_tokens for row in outs["static"][1] for s in row)
    reasons = {s.finish_reason for row in outs["dynamic"][0] for s in row}
    assert reasons >= ({"stop"} if params.stop else {"low_confidence"} if params.stop_below else {"length"})
    for a, b in zip(outs["static"][0], outs["dynamic"][0]):
        for x, y in zip(a, b):
            assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
            assert x.confidences == pytest.approx(y.confidences, abs=1e-4)


def test_decode_loop_option_is_checked(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    with pytest.raises(ValueError, match=r"decode_loop must be one of \('dynamic', 'static'\), got 'fast'"):
        HFBackend(tiny_model_dir, decode_loop="fast")
    with pytest.raises(ValueError, match="compile_decode needs decode_loop=static"):
        HFBackend(tiny_model_dir, decode_loop="dynamic", compile_decode=True)
    assert HFBackend(tiny_model_dir).decoder.mode == "dynamic"  # the CPU default


def _fail_above(backend, rows: int) -> list[int]:
    """Make every forward of more than `rows` rows raise torch.OutOfMemoryError; the batch sizes it saw."""
    seen = []

    def hook(module, args, kwargs):
        batch = kwargs["input_ids"].shape[0]
        seen.append(batch)
        if batch > rows:
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate for {batch} rows")

    backend.model.register_forward_pre_hook(hook, with_kwargs=True)
    return seen


def test_out_of_memory_halves_the_rows_and_keeps_every_sample(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    params = SamplingParams(n=4, max_new_tokens=12, seed=9, stop=["\n"])
    want = HFBackend(tiny_model_dir, max_batch_rows=1, prefix_cache_tokens=0).generate(PROMPTS, params)
    backend = HFBackend(tiny_model_dir, max_batch_rows=16, prefix_cache_tokens=0)
    seen = _fail_above(backend, 3)
    got = backend.generate(PROMPTS, params)
    assert [[s.token_ids for s in row] for row in got] == [[s.token_ids for s in row] for row in want]
    assert [[s.finish_reason for s in row] for row in got] == [[s.finish_reason for s in row] for row in want]
    assert max(seen) == 12 and 3 in seen and 6 in seen  # 12 rows failed, 6 failed, then chunks of 3


def test_a_row_that_does_not_fit_alone_fails_its_prompt(tiny_model_dir):
    from tts_engine.backends.base import PromptFailedError
    from tts_engine.backends.hf import HFBackend

    backend = HFBackend(tiny_model_dir, max_batch_rows=8)
    _fail_above(backend, 0)
    with pytest.raises(PromptFailedError, match="prompt 2 failed: out of memory with a single row") as err:
        backend.generate(["longer prompt one", "longer prompt two", "x"], SamplingParams(n=2, max_new_tokens=4))
    assert err.value.index == 2  # rows run shortest prompt first


def test_stop_strings_across_tokens_and_with_spaces_stop_where_the_text_shows_them(hf_backend):
    """The tail is decoded only when the new token could complete a stop string; stops must land where a check
    at every token puts them."""
    params = SamplingParams(n=6, max_new_tokens=40, seed=11)
    free = hf_backend.generate(PROMPTS[:2], params)
    texts = [s.text for row in free for s in row]
    pair = next(t[i : i + 2] for t in texts for i in range(len(t) - 1) if t[i] != t[i + 1] and t[i : i + 2].strip())
    for stop in ([pair], [" " + pair[1]], ["\n", pair[0] + " "]):
        got = hf_backend.generate(PROMPTS[:2], replace(params, stop=stop))
        assert any(s.finish_reason == "stop" for row in got for s in row), stop
        for row_free, row_got in zip(free, got):
            for a, b in zip(row_free, row_got):
                full = hf_backend.decode(a.token_ids)
                hits = [full.find(s) for s in stop if s in full]
                if not hits:
                    assert b.token_ids == a.token_ids and b.finish_reason == a.finish_reason
                    continue
                end = min(h + len(s) for s in stop for h in [full.find(s)] if h >= 0)  # first completed stop
                stop_at = next(
                    k for k in range(1, len(a.token_ids) + 1) if len(hf_backend.decode(a.token_ids[:k])) >= end
                )
                assert b.token_ids == a.token_ids[:stop_at] and b.finish_reason == "stop", (stop, full)


def test_remembered_reads_are_reused_by_the_read_that_extends_them_without_changing_values(tiny_model_dir):
    from tts_engine.backends.hf import HFBackend

    cold, warm = HFBackend(tiny_model_dir, prefix_cache_tokens=0), HFBackend(tiny_model_dir)
    queries = ["Compute 1+2. ", "Compute left to right: 12*3+4-5. "]  # ragged: the batch is left-padded
    steps = ["1+2=3\n", "12*3=36\n"]
    first = warm.continuation_logprobs(queries, steps, remember=True)
    assert first == pytest.approx(cold.continuation_logprobs(queries, steps), abs=1e-4)
    extended = [q + s for q, s in zip(queries, steps)]
    assert warm.cached_prefix_tokens(extended) == [len(warm.encode(q)) - 1 for q in extended]
    more = ["\\boxed{3}", "36+4=40\n"]
    got = warm.continuation_logprobs(extended, more)
    assert got == pytest.approx(cold.continuation_logprobs(extended, more), abs=1e-4)
    warm.prefix_cache.clear()
    warm.continuation_logprobs(queries, steps)  # not remembered unless asked
    assert warm.cached_prefix_tokens(extended) == [0, 0]
