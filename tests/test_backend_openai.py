"""The openai backend against a local fake completions server that wraps the hf backend on a tiny model."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from tts_engine.backends import openai as ob
from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.tiny import TinyModelConfig, save_tiny_checkpoint
from tts_engine.params import SamplingParams

MODEL_NAME = "tiny"
API_KEY = "secret"
PROMPTS = ["1+2=", "Compute 3*4 and explain.\n", "x"]


class FakeServer:
    """vLLM-like /v1/completions, /v1/models, /tokenize, /detokenize over an HFBackend; scripted faults."""

    def __init__(self, hf: HFBackend, extensions: bool = True):
        self.hf = hf
        self.extensions = extensions
        self.faults: list = []  # popped per completions request: an HTTP status or ("sleep", seconds)
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    return self._send(200, {"data": [{"id": MODEL_NAME, "max_model_len": 777}]})
                self._send(404, {"error": {"message": "no such route"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.headers.get("Authorization") != f"Bearer {API_KEY}":
                    return self._send(401, {"error": {"message": "invalid API key"}})
                if self.path == "/tokenize":
                    return self._send(200, {"tokens": server.hf.encode(body["prompt"]), "max_model_len": 777})
                if self.path == "/detokenize":
                    return self._send(200, {"prompt": server.hf.decode(body["tokens"])})
                if body.get("model") != MODEL_NAME:
                    return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                with server.lock:
                    server.bodies.append(body)
                    fault = server.faults.pop(0) if server.faults else None
                if isinstance(fault, tuple):
                    time.sleep(fault[1])
                elif fault == 400:
                    return self._send(400, {"error": {"message": "This model's maximum context length is 777"}})
                elif fault is not None:
                    return self._send(fault, {"error": {"message": "overloaded"}}, {"Retry-After": "0"})
                self._send(200, server.complete(body))

        return Handler

    def complete(self, body: dict) -> dict:
        if body.get("echo"):
            return self.echo(body["prompt"])
        ids = self.hf.encode(body["prompt"])
        if body["max_tokens"] == 1 and body.get("logprobs") == ob.TOP_LOGPROBS:
            return {
                "choices": [{"index": 0, "text": "", "logprobs": {"top_logprobs": [self.top(body, ids)]}}],
                "usage": {"prompt_tokens": len(ids)},
            }
        params = SamplingParams(
            n=body["n"],
            temperature=body["temperature"],
            top_p=body["top_p"],
            max_new_tokens=body["max_tokens"],
            seed=body.get("seed"),
            stop=body.get("stop") or [],
        )
        samples = self.hf.generate([body["prompt"]], params)[0]
        choices = []
        for i, s in enumerate(samples):
            choice = {
                "index": i,
                "text": s.text,
                "finish_reason": s.finish_reason,
                "logprobs": {"token_logprobs": s.logprobs, "tokens": [self.hf.decode([t]) for t in s.token_ids]},
            }
            if self.extensions and body.get("return_token_ids"):
                choice.update(token_ids=s.token_ids, prompt_token_ids=ids)
            choices.append(choice)
        return {"choices": choices, "usage": {"prompt_tokens": len(ids)}}

    def echo(self, ids: list[int]) -> dict:
        """The prompt (token ids) echoed with each token's log-prob (None for the first), then one greedy token."""
        with torch.inference_mode():
            logp = self.hf.model(torch.tensor([ids])).logits[0].float().log_softmax(-1)  # (T, V)
        echoed = [None] + logp[:-1].gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1).tolist()
        return {"choices": [{"index": 0, "text": "", "logprobs": {"token_logprobs": echoed + [float(logp[-1].max())]}}]}

    def top(self, body: dict, ids: list[int]) -> dict[str, float]:
        with torch.inference_mode():
            logp = self.hf.model(torch.tensor([ids])).logits[0, -1].float().log_softmax(-1)
        as_ids = self.extensions and body.get("return_tokens_as_token_ids")
        name = (lambda t: f"token_id:{t}") if as_ids else (lambda t: self.hf.decode([t]))
        wanted = set(torch.topk(logp, ob.TOP_LOGPROBS).indices.tolist())
        if self.extensions:
            wanted |= set(body.get("logprob_token_ids") or [])
        return {name(t): float(logp[t]) for t in wanted}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    cfg = TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=256)
    return str(save_tiny_checkpoint(tmp_path_factory.mktemp("openai") / "tiny", cfg))


@pytest.fixture(scope="module")
def hf(model_dir):
    return HFBackend(model_dir, device="cpu")


@pytest.fixture
def server(hf):
    s = FakeServer(hf)
    yield s
    s.close()


def backend(server, model_dir=None, **options):
    options = {"api_key": API_KEY, "backoff": 0.01, "max_backoff": 0.05, "timeout": 5.0, **options}
    return ob.OpenAIBackend(model=MODEL_NAME, base_url=server.url, tokenizer=model_dir, **options)


def yes_no_ids(hf):
    return hf.encode("Yes")[0], hf.encode("No")[0]


def reference_yes_no(hf, prompts, yes, no):
    """log P(yes), log P(no) from the model's full next-token log-softmax."""
    result = []
    with torch.inference_mode():
        for prompt in prompts:
            logp = hf.model(torch.tensor([hf.encode(prompt)])).logits[0, -1].float().log_softmax(-1)
            result.append((float(logp[yes]), float(logp[no])))
    return result


def test_greedy_matches_the_hf_backend(server, hf, model_dir):
    params = SamplingParams(n=3, temperature=0.0, max_new_tokens=12)
    got = backend(server, model_dir, max_concurrency=3).generate(PROMPTS, params)
    want = hf.generate(PROMPTS, params)
    assert all(b["n"] == 1 and b["return_token_ids"] for b in server.bodies)
    for got_samples, want_samples, prompt in zip(got, want, PROMPTS, strict=True):
        assert len(got_samples) == 3
        for g, w in zip(got_samples, want_samples, strict=True):
            assert (g.text, g.token_ids, g.finish_reason) == (w.text, w.token_ids, w.finish_reason)
            assert g.logprobs == pytest.approx(w.logprobs, abs=1e-5)
            assert g.num_prompt_tokens == len(hf.encode(prompt))


def test_sampling_keeps_input_order_under_concurrency(server, hf):
    prompts = [f"{'q' * k}=" for k in range(1, 9)]
    out = backend(server, max_concurrency=4).generate(prompts, SamplingParams(n=4, max_new_tokens=5, seed=1))
    assert [len(s) for s in out] == [4] * 8
    assert [s[0].num_prompt_tokens for s in out] == [len(hf.encode(p)) for p in prompts]
    assert all(1 <= x.num_tokens <= 5 and len(x.logprobs) == x.num_tokens for s in out for x in s)
    assert {b["seed"] for b in server.bodies} == {ob.prompt_seed(1, p) for p in prompts}


def test_token_ids_from_the_local_tokenizer_without_extensions(hf, model_dir):
    plain = FakeServer(hf, extensions=False)
    try:
        params = SamplingParams(n=1, temperature=0.0, max_new_tokens=8)
        got = backend(plain, model_dir, vllm_extensions=False).generate(PROMPTS[:1], params)[0][0]
        want = hf.generate(PROMPTS[:1], params)[0][0]
        assert "return_token_ids" not in plain.bodies[0]
        assert got.token_ids == hf.encode(want.text) and got.text == want.text
    finally:
        plain.close()


def test_yes_no_logprobs_exact_with_extensions(server, hf):
    yes, no = yes_no_ids(hf)
    prompts = [p + " solution\nIs this solution correct? Answer Yes or No.\n" for p in PROMPTS]
    got = backend(server).yes_no_logprobs(prompts, yes, no)
    want = reference_yes_no(hf, prompts, yes, no)
    assert server.bodies[0]["logprob_token_ids"] == [yes, no]
    for (gy, gn), (wy, wn) in zip(got, want, strict=True):
        assert gy == pytest.approx(wy, abs=1e-4) and gn == pytest.approx(wn, abs=1e-4)


def test_yes_no_logprobs_top20_exact_or_upper_bound(hf, model_dir):
    plain = FakeServer(hf, extensions=False)
    try:
        yes, no = yes_no_ids(hf)
        prompts = [p + " ok\n" for p in PROMPTS]
        got = backend(plain, model_dir, vllm_extensions=False).yes_no_logprobs(prompts, yes, no)
        want = reference_yes_no(hf, prompts, yes, no)
        for prompt, g, w in zip(prompts, got, want, strict=True):
            top = plain.top({}, hf.encode(prompt))
            for token, gv, wv in ((yes, g[0], w[0]), (no, g[1], w[1])):
                if hf.decode([token]) in top:
                    assert gv == pytest.approx(wv, abs=1e-4)
                else:
                    assert wv <= gv + 1e-6 and gv <= min(top.values()) + 1e-9
    finally:
        plain.close()


def test_bound_for_an_absent_token():
    top = {"a": math.log(0.5), "b": math.log(0.3)}
    assert ob.token_logprob_or_bound(top, ["a"]) == (math.log(0.5), True)
    value, exact = ob.token_logprob_or_bound(top, ["z"])
    assert not exact and value == pytest.approx(math.log(0.2))  # 1 - 0.8 of mass is left
    value, _ = ob.token_logprob_or_bound({"a": math.log(0.9), "b": math.log(0.05)}, ["z"])
    assert value == pytest.approx(math.log(0.05))  # rarer than the last listed token


def test_continuation_logprobs_match_the_hf_backend(server, hf):
    continuations = ["3\n", "12 because", "y z"]
    got = backend(server).continuation_logprobs(PROMPTS, continuations)
    assert got == pytest.approx(hf.continuation_logprobs(PROMPTS, continuations), abs=1e-4)
    assert server.bodies[-1]["echo"] and server.bodies[-1]["logprobs"] == 0


def test_a_server_without_echoed_logprobs_fails_clearly():
    with pytest.raises(ob.ServerError, match="echoed no prompt log-probs"):
        ob.parse_continuation({"choices": [{"logprobs": {"token_logprobs": [None, -1.0]}}]}, 1, 2)
    with pytest.raises(ob.ServerError, match="echoed no prompt log-probs"):
        ob.parse_continuation({"choices": [{"logprobs": {"token_logprobs": [None, None, -1.0]}}]}, 1, 2)
    assert ob.parse_continuation({"choices": [{"logprobs": {"token_logprobs": [None, -1.0, -0.5, -9]}}]}, 1, 2) == [
        -1.0,
        -0.5,
    ]


def test_transient_errors_mid_run_are_retried(server):
    server.faults = [None, 500, 503, 429, None, 502]
    out = backend(server, max_concurrency=1).generate(PROMPTS, SamplingParams(n=2, max_new_tokens=4))
    assert [len(s) for s in out] == [2, 2, 2]
    assert len(server.bodies) == 7  # 3 prompts + 4 failed attempts


def test_a_slow_answer_times_out_and_the_retry_succeeds(server):
    server.faults = [("sleep", 1.0)]
    out = backend(server, timeout=0.3).generate(PROMPTS[:1], SamplingParams(n=1, max_new_tokens=4))
    assert len(out[0]) == 1 and len(server.bodies) == 2


def test_a_server_that_never_answers_in_time_fails_clearly(server):
    server.faults = [("sleep", 0.6)] * 2
    with pytest.raises(
        ob.PromptFailedError, match=r"prompt 0 failed: .*failed after 2 attempts: no answer within 0.2s"
    ):
        backend(server, timeout=0.2, max_retries=1).generate(PROMPTS[:1], SamplingParams(max_new_tokens=4))


def test_wrong_api_key_fails_at_once_with_a_fix(server):
    with pytest.raises(ob.ServerError, match="refused the API key.*OPENAI_API_KEY"):
        backend(server, api_key="wrong").generate(PROMPTS[:1], SamplingParams(max_new_tokens=4))
    assert server.bodies == []


def test_unknown_model_fails_at_once_with_a_fix(server):
    client = ob.OpenAIBackend(model="nope", base_url=server.url, api_key=API_KEY, backoff=0.01)
    with pytest.raises(ob.ServerError, match=r"404.*model 'nope' is not served there.*/v1/models"):
        client.generate(PROMPTS[:1], SamplingParams(max_new_tokens=4))


def test_context_overflow_becomes_prompt_too_long(server, model_dir):
    server.faults = [400]
    with pytest.raises(ob.PromptTooLongError, match="prompt 0 has 4 tokens, but the model's context is 4"):
        backend(server, model_dir, max_model_len=4).generate(["1+2="], SamplingParams(max_new_tokens=4))
    assert len(server.bodies) == 1


def test_context_overflow_of_the_budget_is_retried_with_the_room_left(server, model_dir):
    server.faults = [400]
    out = backend(server, model_dir, max_model_len=10).generate(["1+2="], SamplingParams(max_new_tokens=8))
    assert [b["max_tokens"] for b in server.bodies] == [8, 6]
    assert 1 <= out[0][0].num_tokens <= 6


def test_no_server_at_start_up_is_one_clear_error_at_once(monkeypatch):
    monkeypatch.setattr(ob.time, "sleep", lambda s: pytest.fail("a refused connection at start-up is not retried"))
    with pytest.raises(ValueError, match="no server answers at http://127.0.0.1:9/v1.*base_url"):
        ob.OpenAIBackend(model=MODEL_NAME, base_url="http://127.0.0.1:9/v1", max_retries=2, backoff=0.01)


def test_tts_solve_with_no_server_says_so_in_one_line(monkeypatch):
    from click.testing import CliRunner

    from tts_engine.cli import main

    monkeypatch.setattr(ob.time, "sleep", lambda s: pytest.fail("a refused connection at start-up is not retried"))
    args = ["solve", "--backend", "openai", "--backend-option", "base_url=http://127.0.0.1:9/v1", "--limit", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: no server answers at http://127.0.0.1:9/v1 ([Errno 111] Connection refused): start it, or point the "
        "openai backend at it (--backend-option base_url=http://HOST:PORT/v1, or OPENAI_BASE_URL)"
    ]


def test_a_connection_lost_mid_run_is_retried_then_reported(server):
    client = ob.OpenAIBackend(model=MODEL_NAME, base_url=server.url, max_retries=2, backoff=0.01)
    client.client.base_url = "http://127.0.0.1:9/v1"  # the server went away after start-up
    with pytest.raises(ob.ServerError, match="failed after 3 attempts: connection failed"):
        client.generate(["x"], SamplingParams(max_new_tokens=2))


def test_server_tokenizer_and_context_length(server, hf):
    client = backend(server)
    assert client.tokenizer is None
    assert client.encode("a b\nc") == hf.encode("a b\nc")
    assert client.decode(hf.encode("a b\nc")) == "a b\nc"
    assert client.max_model_len == 777
    assert client.apply_chat_template([{"role": "user", "content": "x"}]) is None


def test_parameters_counted_from_a_local_checkpoint(server, hf, model_dir):
    assert backend(server, model_dir).num_parameters == hf.num_parameters
    assert backend(server, num_parameters=42).num_parameters == 42


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="max_concurrency must be >= 1, got 0"):
        ob.OpenAIBackend(model="m", max_concurrency=0)
    with pytest.raises(ValueError, match="timeout must be > 0, got -1"):
        ob.OpenAIBackend(model="m", timeout=-1)
