"""The openai backend against a real vLLM OpenAI-compatible server on loopback (skipped without vLLM).

The server is started here on a free port of 127.0.0.1, with the settings that work on a CPU (float32, no
chunked prefill; shared/PLATFORM.md), waited for at most SERVER_START_S, and stopped after the module.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed"),
]

SERVER_START_S = 300
"""Measured ~60 s to ready on 2 CPU cores; the bound stops a broken start from hanging CI."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tts_engine.inputs.tiny import save_tiny_checkpoint

    model = str(save_tiny_checkpoint(tmp_path_factory.mktemp("served") / "tiny"))
    port = _free_port()
    log = open(tmp_path_factory.mktemp("log") / "server.log", "w+")
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--dtype",
            "float32",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--max-model-len",
            "256",
            "--enforce-eager",
            "--max-logprobs",
            "-1",
            "--no-enable-chunked-prefill",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"vLLM server did not start: {log.read()[-2000:]}")
                time.sleep(2)
        yield model, url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_solve_through_a_real_server_matches_hf_greedy(server, tmp_path):
    from tts_engine.engine import Engine
    from tts_engine.inputs.problems import Problem

    model, url = server
    problems = [Problem(f"p{i}", f"{i}+{i}=", str(2 * i)) for i in range(4)]
    served = Engine(model, backend="openai", backend_options={"base_url": url}).solve(
        problems, n=2, temperature=0.0, max_new_tokens=12, seed=0, progress=False
    )
    local = Engine(model, backend="hf").solve(problems, n=2, temperature=0.0, max_new_tokens=12, seed=0, progress=False)
    for got, want in zip(served, local):
        assert [s["text"] for s in got["samples"]] == [s["text"] for s in want["samples"]]
        for g, w in zip(got["samples"], want["samples"], strict=True):
            assert g["scores"]["verifier_yes_no"] == pytest.approx(w["scores"]["verifier_yes_no"], abs=1e-3)
            # the token confidence kinds, from the server's top-k log-probs, equal hf's from its logits
            kinds = [k for k in w["scores"] if k.startswith("conf_")]
            assert len(kinds) == 4 and set(kinds) <= set(g["scores"])
            for kind in kinds:
                assert g["scores"][kind] == pytest.approx(w["scores"][kind], abs=1e-3)


def test_sampled_requests_with_seeds(server):
    from tts_engine.backends.openai import OpenAIBackend
    from tts_engine.params import SamplingParams

    model, url = server
    backend = OpenAIBackend(model=model, base_url=url)
    out = backend.generate([f"Problem {i}: {i}*{i}=" for i in range(8)], SamplingParams(n=4, max_new_tokens=16, seed=3))
    assert [len(x) for x in out] == [4] * 8
    assert all(s.finish_reason in ("stop", "length") and len(s.logprobs) == s.num_tokens for x in out for s in x)


def test_continuation_logprobs_through_a_real_server_match_hf(server):
    from tts_engine.backends.hf import HFBackend
    from tts_engine.backends.openai import OpenAIBackend

    model, url = server
    prompts, continuations = ["12+7=", "Compute 3*4.\n", "x y"], ["19\n", "12 because", " z"]
    got = OpenAIBackend(model=model, base_url=url).continuation_logprobs(prompts, continuations)
    assert got == pytest.approx(HFBackend(model, device="cpu").continuation_logprobs(prompts, continuations), abs=1e-3)


def test_beam_search_through_a_real_server_matches_hf(server):
    """A search strategy on the openai backend: step scores from the server's verdict log-probs, as on hf."""
    from tts_engine.engine import Engine
    from tts_engine.inputs.problems import Problem

    model, url = server
    problems = [Problem(f"p{i}", f"{i}+{i}=", str(2 * i)) for i in range(2)]
    settings = dict(strategy="beam", n=4, temperature=0.0, max_new_tokens=24, seed=0, progress=False)
    served = Engine(model, backend="openai", backend_options={"base_url": url}).solve(problems, **settings)
    local = Engine(model, backend="hf").solve(problems, **settings)
    for got, want in zip(served, local, strict=True):
        assert got["status"] == "ok" and got["run"]["strategy"] == "beam" and got["search"]["nodes"]
        assert [s["text"] for s in got["samples"]] == [s["text"] for s in want["samples"]]
        for g, w in zip(got["samples"], want["samples"], strict=True):
            kinds = [k for k in w["scores"] if k.startswith("step_")]
            assert kinds and set(kinds) <= set(g["scores"])
            for kind in kinds:
                assert g["scores"][kind] == pytest.approx(w["scores"][kind], abs=1e-3)
