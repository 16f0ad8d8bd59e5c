"""Particle filtering and particle Gibbs: resampling by the step scorer on a scripted backend (exact), the
settings' errors, and end to end on the embedded default."""

from __future__ import annotations

import pytest
from test_search import DELIM, PROBLEMS, DigitScorer, ScriptedBackend

from tts_engine.engine import Engine
from tts_engine.strategies.particle import ParticleConfig, resampling_weights


@pytest.fixture(scope="module")
def engine():
    return Engine(verifier="none")


@pytest.fixture
def scripted(engine):
    backend = ScriptedBackend(depth=4)
    original = engine.backend
    engine.backend = backend
    yield backend
    engine.backend = original


def run(engine, n=8, scorer=None, seed=0, **config):
    config.setdefault("step_delimiter", DELIM)
    return engine.solve(
        PROBLEMS,
        strategy="particle",
        config=ParticleConfig(**config),
        step_scorer=scorer or DigitScorer(),
        n=n,
        seed=seed,
        temperature=0.8,
        progress=False,
    )


def by_round(record):
    rounds: dict[int, list[dict]] = {}
    for node in record["search"]["nodes"][1:]:
        rounds.setdefault(node["round"], []).append(node)
    return rounds


def test_resampling_weights_are_a_softmax_of_the_scores_logits_at_a_temperature():
    assert resampling_weights([0.5, 0.9], 1.0) == pytest.approx([0.1, 0.9])
    assert resampling_weights([0.5, 0.9], 0.5) == pytest.approx([1 / 82, 81 / 82])
    assert resampling_weights([0.2, 0.9, 0.0, 1.0], 1e9) == pytest.approx([0.25] * 4)
    assert resampling_weights([0.0, 1.0], 1.0)[1] == pytest.approx(1.0)  # clipped, never a division by zero


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"resample_temperature": 0}, "resample_temperature must be a number > 0"),
        ({"resample_temperature": -1.0}, "resample_temperature must be a number > 0"),
        ({"sweeps": 0}, "sweeps must be an integer >= 1"),
        ({"max_steps": 0}, "max_steps must be an integer >= 1"),
        ({"step_reduction": "median"}, "step_reduction must be one of"),
    ],
)
def test_bad_settings_name_the_setting(settings, message):
    with pytest.raises(ValueError, match=message):
        ParticleConfig(**settings)


def test_sweeps_must_split_the_particles_into_sweeps_of_at_least_two():
    ParticleConfig(sweeps=4).check_n(8, "particle")
    with pytest.raises(ValueError, match="n must be a multiple of sweeps"):
        ParticleConfig(sweeps=3).check_n(8, "particle")
    with pytest.raises(ValueError, match="at least 2 per sweep"):
        ParticleConfig(sweeps=4).check_n(4, "particle")
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        ParticleConfig().check_n(0, "particle")


def test_a_cold_resampling_keeps_only_the_best_particles_and_a_hot_one_keeps_others(engine, scripted):
    for record in run(engine, resample_temperature=0.02):
        for nodes in by_round(record).values():
            best = max(node["score"] for node in nodes)
            kept = [node["score"] for node in nodes if node["kept"]]
            assert kept and set(kept) == {best}
    hot = [node for r in run(engine, resample_temperature=1e6) for nodes in by_round(r).values() for node in nodes]
    assert any(
        node["kept"] and node["score"] < max(n["score"] for n in hot if n["round"] == node["round"]) for node in hot
    )


def test_every_round_is_one_scoring_call_for_every_problem_and_records_hold_n_particles(engine, scripted):
    scorer = DigitScorer()
    records = run(engine, n=8, scorer=scorer)
    # 4 step rounds + the answer round, each one scoring call for every problem; the first round samples 8 first
    # steps of each problem in one request; a particle drawn k times is one request for k steps (a generate call
    # per distinct k)
    assert len(scorer.batches) == 5 and sum(len(batch) for batch in scorer.batches) == 5 * 8 * len(PROBLEMS)
    assert scripted.calls[0][1].n == 8 and len(scripted.calls[0][0]) == len(PROBLEMS)
    assert all(len(set(prompts)) == len(prompts) for prompts, _ in scripted.calls)
    for record in records:
        assert len(record["samples"]) == 8 and sorted(record["search"]["sweeps"][0]) == [
            s["node"] for s in record["samples"]
        ]
        assert {"step_last", "step_min", "step_prod", "step_mean"} <= set(record["samples"][0]["scores"])
        assert record["compute"]["verifier_tokens"] > 0 and record["run"]["strategy"] == "particle"
        for nodes in by_round(record).values():  # each round grows one child per open particle
            assert len(nodes) <= 8
    again = run(engine, n=8)
    assert [[s["text"] for s in r["samples"]] for r in again] == [[s["text"] for s in r["samples"]] for r in records]


def test_particle_gibbs_keeps_a_reference_from_the_sweep_before(engine, scripted):
    records = run(engine, n=8, sweeps=2)
    roots = [params.n for prompts, params in scripted.calls if all(not p.endswith(DELIM) for p in prompts)]
    assert roots[:2] == [4, 3]  # sweep 2 samples 3 new particles beside its reference
    seeds = {params.seed for _, params in scripted.calls}
    assert len(seeds) > 1  # the second sweep draws its own steps
    for record in records:
        first, second = record["search"]["sweeps"]
        assert len(first) == len(second) == 4 and len(record["samples"]) == 8
        assert second[-1] in first  # the reference particle is one of the first sweep's final particles


def test_particle_filtering_on_the_embedded_default_reads_each_new_step_once():
    engine = Engine()
    problems = [p for p in _bundled() if p.fields.get("level") == 7][:2]
    records = engine.solve(problems, strategy="particle", n=4, seed=1, progress=False)
    for record in records:
        steps = max(len(s["steps"]) for s in record["samples"])
        assert steps >= 4 and all(0 <= s["scores"]["step_prod"] <= 1 for s in record["samples"])
        # Each round's reads extend the reads before them (kept in the prefix cache): far fewer verifier
        # tokens than re-reading every prefix from the start.
        check_query = len(engine.backend.encode(record["prompt"]))
        assert record["compute"]["verifier_tokens"] < 4 * steps * check_query / 2


def _bundled():
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems

    return load_problems(default_problems_path())


def test_particle_gibbs_per_request_over_tts_serve_with_the_official_client():
    openai = pytest.importorskip("openai")
    pytest.importorskip("uvicorn")
    from test_strategy_registry import InProcessServer

    problem = _bundled()[150].text  # a level 7 problem
    with InProcessServer(Engine()) as client:
        reply = client.chat.completions.create(
            model="particle:tts-default",
            messages=[{"role": "user", "content": problem}],
            extra_body={"tts": {"sweeps": 2, "resample_temperature": 0.5}},
        )
        for bad, message in (({"sweeps": 3}, "n must be a multiple of sweeps"), ({"resample_temperature": 0}, "> 0")):
            with pytest.raises(openai.BadRequestError, match=message):
                client.chat.completions.create(
                    model="particle:tts-default",
                    messages=[{"role": "user", "content": problem}],
                    extra_body={"tts": bad},
                )
    (record,) = reply.tts["problems"]
    assert reply.tts["strategy"] == "particle" and reply.choices[0].message.content
    assert record["compute"]["verifier_tokens"] > 0 and len(record["search"]["sweeps"]) == 2
