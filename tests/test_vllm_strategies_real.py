"""Every registered strategy end to end on real vLLM (skipped without vLLM): `tts solve --backend vllm` as a
subprocess (so its exit status is real) against `tts solve --backend hf`, and `tts serve --backend vllm` answering
one request per strategy through the official openai client, then stopping cleanly on SIGTERM; and the sequential
strategies on a checkpoint of a thinking model's shape.

The strategies come from the registry, so a new one is covered without editing this file. Both backends run the
embedded default in float32 at temperature 0 on a few problems: there they must agree on every sample's answer,
carry the same score kinds, and give verifier scores within SCORE_TOL.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed"),
]

from tts_engine.strategies.registry import strategies  # noqa: E402

STRATEGIES = sorted(strategies())
PROBLEMS, N, MAX_NEW_TOKENS = 3, 8, 96
"""3 problems of the bundled set, 8 samples (deepconf's default warm-up), 96 tokens: enough to finish level-1
problems, small enough that all strategies on both backends take a few minutes on 2 cores."""
SCORE_TOL = 2e-3
"""vLLM's float32 log-probs matched transformers' to ~1e-4 (tests/test_backend_vllm_real.py); scores are
products of a few of them."""
VLLM_OPTIONS = ["--backend-option", "dtype=float32", "--backend-option", "enforce_eager=true"]
COMMON = ["--n", str(N), "--temperature", "0", "--max-new-tokens", str(MAX_NEW_TOKENS), "--seed", "0"]
SOLVE_TIMEOUT_S = 600
ABORT = "terminate called"


def tts(*args: str, timeout: float = SOLVE_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`tts ARGS` in a fresh interpreter of this environment, output captured."""
    command = [sys.executable, "-P", "-c", "from tts_engine.cli import main; main()", *args]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def solve(tmp_path, backend: str, strategy: str) -> list[dict]:
    """Records of `tts solve --backend BACKEND --strategy STRATEGY`, after checking it exited 0 cleanly."""
    import orjson

    out = tmp_path / f"{backend}-{strategy}.jsonl"
    extra = VLLM_OPTIONS if backend == "vllm" else []
    done = tts(
        "solve", "--backend", backend, *extra, "--strategy", strategy, *COMMON,
        "--limit", str(PROBLEMS), "--quiet", "--out", str(out),
    )  # fmt: skip
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, (
        f"tts solve --backend {backend} --strategy {strategy} exited {done.returncode}:\n{tail}"
    )
    assert ABORT not in done.stderr, tail
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(records) == PROBLEMS and all(r["status"] == "ok" for r in records), tail
    return records


def score_kinds(record: dict) -> set[str]:
    return {k for s in record["samples"] for k in s.get("scores", {})}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_solve_on_vllm_exits_cleanly_and_agrees_with_hf(strategy, tmp_path):
    got, want = solve(tmp_path, "vllm", strategy), solve(tmp_path, "hf", strategy)
    for g, w in zip(got, want, strict=True):
        assert g["id"] == w["id"] and g["run"]["backend"] == "vllm"
        assert [s["answer"] for s in g["samples"]] == [s["answer"] for s in w["samples"]], g["id"]
        assert score_kinds(g) == score_kinds(w)
        assert {k: a["answer"] for k, a in g["aggregations"].items()} == {
            k: a["answer"] for k, a in w["aggregations"].items()
        }
        for gs, ws in zip(g["samples"], w["samples"], strict=True):
            for kind, value in ws.get("scores", {}).items():
                if kind.startswith(("verifier", "step_")) and value is not None:
                    assert gs["scores"][kind] == pytest.approx(value, abs=SCORE_TOL), (g["id"], kind)


@pytest.fixture(scope="module")
def vllm_server():
    """`tts serve --backend vllm` (the embedded default at the solve test's settings) on loopback."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from tts_engine.serve.process import ServerProcess

    args = ["--backend", "vllm", *VLLM_OPTIONS, *COMMON]
    server = ServerProcess(args, startup_timeout=SOLVE_TIMEOUT_S, env={"VLLM_CPU_KVCACHE_SPACE": "1"})
    with server:
        yield server
    # uvicorn shuts down on SIGTERM, then re-raises it: -15 is its clean exit (0 where it does not re-raise)
    assert server.process.returncode in (0, -15), f"tts serve exited {server.process.returncode}:\n{server.output()}"
    assert ABORT not in server.output() and "MPClient: complete" in server.output(), server.output()


def test_serve_on_vllm_answers_every_strategy_then_stops_on_sigterm(vllm_server):
    openai = pytest.importorskip("openai")
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems

    client = openai.OpenAI(base_url=f"{vllm_server.url}/v1", api_key="none", max_retries=0, timeout=SOLVE_TIMEOUT_S)
    problem = load_problems(default_problems_path())[0]
    for strategy in STRATEGIES:
        reply = client.chat.completions.create(
            model="tts-default",
            messages=[{"role": "user", "content": problem.text}],
            extra_body={"tts": {"strategy": strategy}},
        )
        assert reply.tts["strategy"] == strategy
        assert reply.choices[0].answer == problem.reference, (strategy, reply.choices[0].message.content)
    vllm_server.stop()  # SIGTERM; the fixture checks the exit status and output


THINKING = {
    "thinking-budget": ["--thinking-budget", "12", "--answer-tokens", "4"],
    "budget-forcing": ["--thinking-budget", "12", "--min-thinking", "8", "--answer-tokens", "4"],
    "probe": ["--thinking-budget", "12", "--probe-every", "4", "--probe-tokens", "4", "--answer-tokens", "4"],
}
"""The sequential strategies on a checkpoint of a thinking model's shape (tests/conftest.py: `<think>` and `</think>`
single non-special tokens, a chat template that opens the trace), with budgets a random model's trace runs past."""


@pytest.mark.parametrize("strategy", sorted(THINKING))
def test_a_thinking_checkpoint_is_capped_extended_and_probed_on_vllm(strategy, thinking_model_dir, tmp_path):
    import orjson

    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": "a", "problem": "1+1", "answer": "2"}\n{"id": "b", "problem": "2+3", "answer": "5"}\n')
    out = tmp_path / "r.jsonl"
    done = tts(
        "solve", str(problems), "--model", thinking_model_dir, "--verifier", "none", "--backend", "vllm",
        *VLLM_OPTIONS, "--strategy", strategy, *THINKING[strategy], "--n", "2", "--temperature", "0",
        "--seed", "0", "--quiet", "--out", str(out),
    )  # fmt: skip
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0 and ABORT not in done.stderr, tail
    for record in (orjson.loads(line) for line in out.read_bytes().splitlines()):
        assert record["status"] == "ok" and record["prompt"].endswith("<think>\n"), tail
        assert sum(record["thinking"]["stopped"].values()) == 2, record["thinking"]
        for sample in record["samples"]:
            assert "</think>" in sample["text"] and sample["thinking_tokens"] > 0, sample  # the marker kept
