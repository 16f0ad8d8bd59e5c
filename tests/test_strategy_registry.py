"""A strategy is one file: a toy strategy registered here alone is reached from `Engine.solve`, `tts solve` and
`tts serve` (model prefix and tts.strategy, with the official client), and every registered strategy answers over
`tts serve` with no settings but tts.strategy."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pytest
from click.testing import CliRunner

from tts_engine import Engine
from tts_engine.cli import main
from tts_engine.models import default_problems_path
from tts_engine.params import SamplingParams
from tts_engine.problems import Problem, load_problems
from tts_engine.results import read_results
from tts_engine.strategies import register_strategy, registry, strategies

openai = pytest.importorskip("openai")
uvicorn = pytest.importorskip("uvicorn")


@dataclass
class ToyConfig:
    """Settings of the toy strategy."""

    toy_copies: int = 1
    """toy: how many times each problem is solved (the record keeps the last)."""

    def __post_init__(self) -> None:
        if self.toy_copies < 1:
            raise ValueError(f"toy_copies must be >= 1, got {self.toy_copies}")


class ToyPlan:
    """Solve each chunk `toy_copies` times with the fixed step; record how often."""

    name = "toy"

    def __init__(self, engine, params: SamplingParams, config: ToyConfig):
        self.engine, self.params, self.copies = engine, params, config.toy_copies
        self.rows_per_problem = params.n
        self.run_block: dict[str, Any] = {**engine.run_info(params), "toy": {"copies": self.copies}}

    def solve(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any]]:
        for _ in range(self.copies - 1):
            self.engine.solve_batch(problems, self.params)
        for record in self.engine.solve_batch(problems, self.params):
            record["toy"] = {"copies": self.copies}
            yield record


@pytest.fixture
def toy(monkeypatch):
    """The toy strategy, registered for one test (the registry is left as it was)."""
    strategies()  # the built-ins are loaded into the registry this test then copies
    monkeypatch.setattr(registry, "_STRATEGIES", dict(registry._STRATEGIES))
    register_strategy("toy", config_type=ToyConfig, help="Solve each problem toy_copies times.")(ToyPlan)
    return "toy"


@pytest.fixture(scope="module")
def engine():
    return Engine()


@pytest.fixture(scope="module")
def problems():
    return load_problems(default_problems_path())[:2]


def test_engine_solve_reaches_a_registered_strategy(toy, engine, problems):
    records = engine.solve(problems, strategy="toy", config=ToyConfig(toy_copies=2), n=2, max_new_tokens=16)
    assert [r["run"]["strategy"] for r in records] == ["toy", "toy"]
    assert all(r["toy"] == {"copies": 2} and len(r["samples"]) == 2 for r in records)
    with pytest.raises(ValueError, match="strategy 'toy' takes no SamplingParams settings"):
        engine.solve(problems, strategy="toy", config=SamplingParams())


def test_tts_solve_lists_and_runs_a_registered_strategy(toy, tmp_path):
    help_text = " ".join(CliRunner().invoke(main, ["solve", "--help"]).output.split())  # unwrapped
    assert "toy: Solve each problem toy_copies times." in help_text and "--toy-copies" in help_text
    for name in strategies():
        assert f"{name}: " in help_text  # every registered strategy, from the registry
    out = tmp_path / "r.jsonl"
    args = ["solve", "--strategy", "toy", "--toy-copies", "2", "--n", "2", "--max-new-tokens", "16", "--limit", "2"]
    result = CliRunner().invoke(main, [*args, "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert [r["toy"]["copies"] for r in read_results(out)] == [2, 2]
    bad = CliRunner().invoke(main, ["solve", "--strategy", "toy", "--toy-copies", "0", "--limit", "1"])
    assert bad.exit_code != 0 and "toy_copies must be >= 1, got 0" in bad.output


class InProcessServer:
    """`tts serve`'s app over `engine` on a loopback port, in a thread of this process (so strategies registered
    by the test are served)."""

    def __init__(self, engine, **options: Any):
        from tts_engine.serve.app import create_app, make_server
        from tts_engine.serve.options import ServeOptions
        from tts_engine.serve.process import free_port

        self.port = free_port()
        serve_options = ServeOptions(port=self.port, api_key="k", **options)
        server = make_server(engine, serve_options, SamplingParams(n=8, max_new_tokens=24), {}, "tts-default")
        config = uvicorn.Config(create_app(server), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        return openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key="k", max_retries=0)

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(30)


def test_tts_serve_reaches_a_registered_strategy(toy, engine, problems):
    with InProcessServer(engine) as client:
        assert "toy:tts-default" in [m.id for m in client.models.list().data]
        by_name = client.chat.completions.create(
            model="toy:tts-default", messages=[{"role": "user", "content": problems[0].text}]
        )
        by_field = client.chat.completions.create(
            model="tts-default",
            messages=[{"role": "user", "content": problems[0].text}],
            extra_body={"tts": {"strategy": "toy", "toy_copies": 2}},
        )
        with pytest.raises(openai.BadRequestError, match="toy_copies must be >= 1"):
            client.chat.completions.create(
                model="toy:tts-default",
                messages=[{"role": "user", "content": problems[0].text}],
                extra_body={"tts": {"toy_copies": 0}},
            )
    assert by_name.tts["strategy"] == "toy" and by_name.tts["problems"][0]["toy"] == {"copies": 1}
    assert by_field.tts["problems"][0]["toy"] == {"copies": 2}


def test_every_registered_strategy_answers_over_tts_serve(engine, problems):
    with InProcessServer(engine) as client:
        for name in strategies():
            reply = client.chat.completions.create(
                model="tts-default",
                messages=[{"role": "user", "content": problems[0].text}],
                extra_body={"tts": {"strategy": name}},
            )
            assert reply.tts["strategy"] == name and reply.choices[0].message.content, name
            assert json.dumps(reply.tts["problems"][0]["compute"])  # what the problem spent is reported
