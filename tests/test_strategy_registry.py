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

from tts_engine import Engine, plugins
from tts_engine.cli import main
from tts_engine.inputs.models import default_problems_path
from tts_engine.inputs.problems import Problem, load_problems
from tts_engine.params import SamplingParams
from tts_engine.pipeline.records import StrategyBlock
from tts_engine.running.results import read_results
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


@dataclass
class ToyBlock(StrategyBlock):
    """The toy strategy's part of a record."""

    key = "toy"
    copies: int


class ToyPlan:
    """Solve each chunk `toy_copies` times with the fixed step; record how often."""

    name = "toy"

    def __init__(self, parts, params: SamplingParams, config: ToyConfig):
        self.parts, self.params, self.copies = parts, params, config.toy_copies
        self.rows_per_problem = params.n
        self.run_block: dict[str, Any] = {**parts.run_info(params), "toy": {"copies": self.copies}}

    def solve(self, problems: Sequence[Problem]) -> Iterator[Any]:
        for _ in range(self.copies - 1):
            self.parts.one_step(problems, self.params)
        for record in self.parts.one_step(problems, self.params):
            record.block = ToyBlock(self.copies)
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
    wide = {"terminal_width": 100_000, "max_content_width": 100_000}  # no line breaks (click breaks at hyphens)
    help_text = " ".join(CliRunner().invoke(main, ["solve", "--help"], **wide).output.split())
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
        from tts_engine.serve.options import ServeConfig
        from tts_engine.serve.process import free_port

        self.port = free_port()
        serve_options = ServeConfig(port=self.port, api_key="k", **options)
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


# --- the contract: settings that cannot collide, strategies from other packages ----------------------------
def test_a_setting_declared_again_elsewhere_fails_at_registration_naming_both(monkeypatch):
    strategies()
    monkeypatch.setattr(registry, "_STRATEGIES", dict(registry._STRATEGIES))

    @dataclass
    class ClashConfig:
        """A new strategy's own max_steps: the same option name as the step searches', another field."""

        max_steps: int = 3

    with pytest.raises(
        ValueError, match="strategy 'clash'.*'max_steps'.*collides with strategy '(beam|dvts|particle)'"
    ):
        register_strategy("clash", config_type=ClashConfig)(ToyPlan)
    assert "clash" not in registry._STRATEGIES


def test_step_searches_share_their_step_settings_as_one_field():
    from tts_engine.strategies.particle import ParticleConfig
    from tts_engine.strategies.search.config import SearchConfig, StepSearchConfig

    for name in ("max_steps", "step_reduction", "step_delimiter", "prm_format"):
        assert registry._declared_by(SearchConfig, name) is registry._declared_by(ParticleConfig, name)
        assert registry._declared_by(ParticleConfig, name) is StepSearchConfig


def test_declared_caps_and_request_fields_are_checked(monkeypatch):
    strategies()
    monkeypatch.setattr(registry, "_STRATEGIES", dict(registry._STRATEGIES))
    with pytest.raises(ValueError, match="request_caps names"):
        register_strategy("capped", config_type=ToyConfig, request_caps=(("toy_copies", "minutes"),))(ToyPlan)
    with pytest.raises(ValueError, match=r"request_fields \['nope'\]"):
        register_strategy("fielded", config_type=ToyConfig, request_fields=("nope",))(ToyPlan)


PLUGIN = '''
"""A strategy from another package: every sample at --cool-temperature, n even."""
from dataclasses import dataclass, replace

from tts_engine.strategies import register_strategy


@dataclass
class CoolConfig:
    """Settings of the cool strategy."""

    cool_temperature: float = 0.5
    """cool: the temperature of every sample."""


def even(config, n, strategy):
    if n % 2:
        raise ValueError(f"{strategy}: n must be even, got {n}")


@register_strategy("cool", config_type=CoolConfig, help="Every sample at --cool-temperature.", n_rule=even)
class CoolPlan:
    name = "cool"

    def __init__(self, parts, params, config):
        self.parts, self.params = parts, replace(params, temperature=config.cool_temperature)
        self.rows_per_problem = params.n
        self.run_block = {**parts.run_info(self.params), "cool": {"temperature": config.cool_temperature}}

    def solve(self, problems):
        yield from self.parts.one_step(problems, self.params)
'''


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    """A throwaway distribution, `tts-cool`, installed into a folder on the path: its entry point in the
    `tts_engine.strategies` group names the module that registers `cool`. The registry is restored after."""
    site = tmp_path / "site"
    (site / "tts_cool").mkdir(parents=True)
    (site / "tts_cool" / "__init__.py").write_text(PLUGIN)
    info = site / "tts_cool-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tts-cool\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tts_engine.strategies]\ncool = tts_cool\n")
    strategies()
    monkeypatch.setattr(registry, "_STRATEGIES", dict(registry._STRATEGIES))
    monkeypatch.setattr(plugins, "_loaded", set())
    monkeypatch.syspath_prepend(str(site))
    yield site
    import sys

    sys.modules.pop("tts_cool", None)


def test_an_installed_package_adds_a_strategy_to_solve_engine_and_serve(plugin_path, engine, problems, tmp_path):
    import os
    import subprocess
    import sys

    from tts_engine.serve.process import ServerProcess

    # Engine.solve, in this process: the entry point is loaded with the built-ins
    records = engine.solve(problems, strategy="cool", n=2, max_new_tokens=16, progress=False)
    assert [r["run"]["strategy"] for r in records] == ["cool", "cool"]
    assert records[0]["run"]["temperature"] == 0.5 and records[0]["run"]["cool"] == {"temperature": 0.5}
    with pytest.raises(ValueError, match="cool: n must be even, got 3"):
        engine.solve(problems, strategy="cool", n=3)

    # tts solve, a fresh process that sees the package only through the path
    paths = [str(plugin_path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}  # no empty entry: it would put the root's kernels/ first
    out = tmp_path / "cool.jsonl"
    command = [
        sys.executable,
        "-P",
        "-c",
        "from tts_engine.cli import main; main()",
        "solve",
        "--strategy",
        "cool",
    ]
    args = ["--cool-temperature", "0.25", "--n", "2", "--max-new-tokens", "16", "--limit", "2", "--out", str(out)]
    done = subprocess.run([*command, *args, "--quiet"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["run"]["cool"]["temperature"] for r in read_results(out)] == [0.25, 0.25]

    # tts serve, per request, through the official client
    with ServerProcess(["--n", "2", "--max-new-tokens", "16"], env={"PYTHONPATH": env["PYTHONPATH"]}) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
        assert "cool:tts-default" in [m.id for m in client.models.list().data]
        reply = client.chat.completions.create(
            model="tts-default",
            messages=[{"role": "user", "content": problems[0].text}],
            extra_body={"tts": {"strategy": "cool", "cool_temperature": 0.0}},
        )
        assert reply.tts["strategy"] == "cool" and reply.tts["problems"][0]["compute"]["generated_tokens"] > 0
        with pytest.raises(openai.BadRequestError, match="cool: n must be even"):
            client.chat.completions.create(
                model="cool:tts-default",
                messages=[{"role": "user", "content": problems[0].text}],
                extra_body={"tts": {"n": 3}},
            )
