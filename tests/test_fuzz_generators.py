"""The fuzzers' generators send what their seed says: every request of every seed can be built and serialised,
nothing one request holds is shared with another or with a module constant (a shared junk `{}` once grew with
every request until it contained itself), and building another seed's inputs never changes a seed's. Also the
serve fuzzer's leak rule: a steady growth fails it, a one-time step does not. No server, no check pool."""

from __future__ import annotations

import copy
import importlib.util
import pickle
import random
from pathlib import Path

import pytest

from tts_engine.tasks.arith.generator import make_problem

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz_serve, fuzz_answers, planted_samples = (load_script(n) for n in ("fuzz_serve", "fuzz_answers", "planted_samples"))


def serve_requests(seed: int, count: int = 300) -> bytes:
    """The first `count` requests fuzz_serve.py sends at `seed`, serialised (building one serialises its body)."""
    rng = random.Random(seed)
    return pickle.dumps([fuzz_serve.hostile(rng, k) for k in range(count)])


def answer_inputs(seed: int, count: int = 200) -> bytes:
    """The first `count` inputs fuzz_answers.py checks at `seed`, serialised as its check workers get them."""
    rng = random.Random(seed)
    return pickle.dumps(fuzz_answers.make_inputs(count, rng, Path("/nonexistent/marker")))


def planted(seed: int, count: int = 20) -> bytes:
    """planted_samples.py's texts for `count` problems drawn at `seed`, serialised."""
    rng = random.Random(seed)
    problems = [make_problem(rng, rng.randint(1, 8)).problem for _ in range(count)]
    return pickle.dumps([planted_samples.planted_texts(p, wrong=3, rng=rng) for p in problems])


def containers(value) -> list[int]:
    """The ids of every list and dict in `value`, itself included."""
    if isinstance(value, dict):
        return [id(value)] + [i for v in value.values() for i in containers(v)]
    if isinstance(value, list):
        return [id(value)] + [i for v in value for i in containers(v)]
    return []


def test_every_seed_builds_its_serve_requests():
    junk_before = copy.deepcopy(fuzz_serve.JUNK_VALUES)
    for seed in range(51):
        assert serve_requests(seed)
    assert fuzz_serve.JUNK_VALUES == junk_before


def test_serve_bodies_share_no_list_or_dict():
    rng = random.Random(6608)
    bodies = [fuzz_serve.mutated(rng) for _ in range(2000)]  # kept alive, so that no id is reused
    ids = [i for body in bodies for i in containers(body)]
    assert len(ids) == len(set(ids))
    assert not set(ids) & set(containers(list(fuzz_serve.JUNK_VALUES)))


@pytest.mark.parametrize("build", [serve_requests, answer_inputs, planted])
@pytest.mark.parametrize(("seed", "other"), [(6607, 6608), (6608, 6607), (0, 1)])
def test_a_seeds_inputs_do_not_depend_on_what_was_built_before(build, seed, other):
    first = build(seed)
    build(other)
    assert build(seed) == first


def readings(memory: list[float], block: int = 100) -> list[tuple[int, float]]:
    """(requests sent, MB) after each block, as fuzz_serve.py reads them."""
    return [((k + 1) * block, mb) for k, mb in enumerate(memory)]


def trend(memory: list[float]) -> float:
    return fuzz_serve.memory_trend(readings(memory), warmup=500)


def test_the_leak_rule_fails_a_steady_growth_and_passes_a_one_time_step():
    noise = [1.0 if k % 2 else -1.0 for k in range(20)]
    leak = [530 + 1.5 * k + e for k, e in enumerate(noise)]  # 15 KB a request
    warmup = [500, 515, 525] + [560 + e for e in noise[3:]]
    step = [530 + e + 8 * (k >= 12) for k, e in enumerate(noise)]  # 8 MB once, in the middle of the fit
    swing = [531 + 4 * (k % 4 == 0) + e for k, e in enumerate(noise)]  # a bounded cache's turnover
    assert trend(leak) == pytest.approx(15.0, abs=0.5) and trend(leak) > fuzz_serve.MAX_TREND_MB
    assert abs(trend(warmup)) < 1.0 and abs(trend(swing)) < 1.0
    assert 0 < trend(step) < fuzz_serve.MAX_TREND_MB
