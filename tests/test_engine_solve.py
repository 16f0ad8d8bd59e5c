"""`Engine.solve(strategy=...)`: every registered strategy runs from Python through the one run loop, writes
its records as problems finish, and resumes."""

import pytest

from tts_engine.engine import Engine
from tts_engine.inputs.problems import Problem
from tts_engine.pipeline.records import strategy_of
from tts_engine.running.results import read_results
from tts_engine.strategies import strategies
from tts_engine.strategies.adaptive import AdaptiveConfig
from tts_engine.strategies.deepconf import DeepConfConfig
from tts_engine.strategies.particle import ParticleConfig
from tts_engine.strategies.search import SearchConfig
from tts_engine.strategies.thinking import BudgetForcingConfig, ProbeConfig, ThinkingConfig

PROBLEMS = [Problem(id=f"p{i}", text=f"Compute {i}+{i}.", reference=str(2 * i)) for i in range(3)]
SETTINGS = {
    "fixed": {},
    "adaptive-length": {"config": AdaptiveConfig(budgets=[4, 8], tau=1.0)},
    "adaptive-n": {"config": AdaptiveConfig(wave=2, min_n=2, max_n=4, tau=1.0)},
    "beam": {"config": SearchConfig(beam_width=2, max_steps=2, step_delimiter=" ")},
    "dvts": {"config": SearchConfig(beam_width=2, max_steps=2, step_delimiter=" ")},
    "deepconf": {"config": DeepConfConfig(warmup=2, trace_wave=2)},
    "particle": {"config": ParticleConfig(max_steps=2, step_delimiter=" ", sweeps=2)},
    "thinking-budget": {"config": ThinkingConfig(thinking_budget=6, answer_tokens=4)},
    "budget-forcing": {"config": BudgetForcingConfig(thinking_budget=6, min_thinking=4, answer_tokens=4)},
    "probe": {"config": ProbeConfig(thinking_budget=6, probe_every=3, answer_tokens=4, probe_tokens=2)},
}


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return Engine(tiny_model_dir)


def test_every_registered_strategy_has_a_case_here():
    assert set(strategies()) == set(SETTINGS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_each_strategy_runs_from_python_and_resumes(engine, name, tmp_path):
    out = tmp_path / f"{name}.jsonl"
    records = engine.solve(PROBLEMS, strategy=name, n=4, max_new_tokens=8, out=out, progress=False, **SETTINGS[name])
    assert [r["id"] for r in records] == [p.id for p in PROBLEMS]  # input order
    assert all(strategy_of(r) == name for r in records)
    assert all(r["run"]["model"] == engine.model_label and r["samples"] for r in records)
    written = list(read_results(out))
    assert sorted(r["id"] for r in written) == sorted(p.id for p in PROBLEMS)  # one line per problem
    calls = []
    original = engine.backend.generate
    engine.backend.generate = lambda *a, **k: calls.append(a) or original(*a, **k)
    try:
        again = engine.solve(PROBLEMS, strategy=name, n=4, max_new_tokens=8, out=out, progress=False, **SETTINGS[name])
    finally:
        engine.backend.generate = original
    assert calls == [] and again == records  # a rerun reads every problem back, generating nothing


def test_settings_of_another_strategy_are_an_error(engine):
    with pytest.raises(ValueError, match="strategy 'fixed' takes no AdaptiveConfig settings"):
        engine.solve(PROBLEMS, strategy="fixed", config=AdaptiveConfig())
    with pytest.raises(ValueError, match="strategy 'beam' takes no AdaptiveConfig settings"):
        engine.solve(PROBLEMS, strategy="beam", n=4, config=AdaptiveConfig())
    with pytest.raises(ValueError, match="strategy must be one of .*'deepconf'.*got 'mcts'"):
        engine.solve(PROBLEMS, strategy="mcts")


def test_extra_stop_strings_end_samples(engine):
    (free,) = engine.solve(PROBLEMS[:1], n=8, max_new_tokens=24, temperature=1.0, seed=3, progress=False)
    letter = next(c for s in free["samples"] for c in s["text"] if c.isalpha())  # a character the model writes
    (stopped,) = engine.solve(
        PROBLEMS[:1], n=8, max_new_tokens=24, temperature=1.0, seed=3, progress=False, stop=[letter]
    )
    assert all(letter not in s["text"] for s in stopped["samples"])
    assert any(s["finish_reason"] == "stop" for s in stopped["samples"])


def test_strategies_in_rounds_report_the_problems_still_open(engine):
    updates = []
    records = engine.solve(
        PROBLEMS,
        strategy="adaptive-n",
        n=4,
        max_new_tokens=8,
        progress=False,
        config=AdaptiveConfig(wave=2, min_n=2, max_n=4, tau=1.0),  # only a unanimous vote stops
        on_progress=updates.append,
    )
    open_after_first = [r for r in records if r["adaptive"]["n_used"] == 4]  # these were still open after wave 1
    assert open_after_first
    assert sorted(u.problem_id for u in updates) == sorted(r["id"] for r in open_after_first)
    for update in updates:
        assert update.samples == 2 and 0.0 <= update.confidence < 1.0
    fixed = []
    engine.solve(PROBLEMS, n=2, max_new_tokens=8, progress=False, on_progress=fixed.append)
    assert fixed == []  # one round: the records say it all
