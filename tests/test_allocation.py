"""Where compute goes: pass@1 per problem (not pooled over samples, which weighs the problems an adaptive run spent
most on), the futility stop of the adaptive strategies, and one token budget for a run."""

from __future__ import annotations

from tts_engine.running.summary import summarize
from tts_engine.strategies.adaptive import format_adaptive_summary, plateaued


def line(pid: str, rights: list[bool]) -> dict:
    samples = [{"correct": r, "scores": {"likelihood": 0.5}, "answer_class": 0} for r in rights]
    return {
        "id": pid,
        "reference": "1",
        "status": "ok",
        "samples": samples,
        "aggregations": {"majority": {"correct": rights[0], "answer_class": 0, "confidence": 1.0}},
        "compute": {"prompt_tokens": 1, "generated_tokens": len(rights), "verifier_tokens": 0},
    }


def test_pass_at_1_is_the_mean_over_problems_of_their_share_of_right_samples():
    records = [line("easy", [True]), line("hard", [False] * 7)]  # pooled over samples: 1/8
    assert summarize(records)["pass@1"] == 0.5


# --- the futility stop ---------------------------------------------------------------------------------------------
import json  # noqa: E402
import random  # noqa: E402

import pytest  # noqa: E402

from tts_engine import Engine  # noqa: E402
from tts_engine.inputs.problems import Problem  # noqa: E402
from tts_engine.pipeline.calibration import Calibration  # noqa: E402
from tts_engine.pipeline.futility import AcceptancePrior, chance_of_acceptance, fit_acceptance  # noqa: E402
from tts_engine.strategies.adaptive import AdaptiveConfig  # noqa: E402

KIND = "verifier_recompute"


def test_the_chance_of_an_accepted_sample_falls_with_every_rejection_and_rises_with_an_acceptance():
    chances = [chance_of_acceptance(0.2, 0.2, 0, n, 64 - n) for n in (4, 8, 16, 32)]
    assert chances == sorted(chances, reverse=True) and chances[-1] < 0.15 < chances[0]
    assert chance_of_acceptance(0.2, 0.2, 1, 8, 56) > 0.9 > chances[1]  # one accepted: another is likely
    assert chance_of_acceptance(0.2, 0.2, 0, 8, 0) == 0.0


def test_the_acceptance_prior_is_fitted_back_from_beta_binomial_counts():
    rng = random.Random(0)
    counts = []
    for _ in range(600):
        q = rng.betavariate(0.3, 0.6)
        counts.append((sum(rng.random() < q for _ in range(16)), 16))
    prior = fit_acceptance(counts, KIND)
    assert prior.alpha == pytest.approx(0.3, rel=0.3) and prior.beta == pytest.approx(0.6, rel=0.3)


@pytest.fixture(scope="module")
def engine():
    return Engine(calibration=Calibration([], "test", KIND, acceptance=[AcceptancePrior(KIND, 0.05, 0.05)]))


HARD = Problem("hard", "Compute left to right: " + "+".join(["917", "898", "999", "987", "968"] * 4) + ".", "0")


def test_a_problem_every_sample_of_which_is_rejected_stops_as_futile(engine):
    config = AdaptiveConfig(wave=4, max_n=32, futility=0.2)
    [record] = engine.solve([HARD], strategy="adaptive-n", config=config, max_new_tokens=96, progress=False)
    block = record["adaptive"]
    assert block["stopped_because"] == "futile" and block["n_used"] == 8  # the chance is below .2 from 4 samples on
    assert record["run"]["adaptive"]["futility_min_n"] == 8  # but the stop waits for futility_min_n samples
    early = AdaptiveConfig(wave=4, max_n=32, futility=0.2, futility_min_n=4)
    [at_four] = engine.solve([HARD], strategy="adaptive-n", config=early, max_new_tokens=96, progress=False)
    assert at_four["adaptive"]["n_used"] == 4
    with pytest.raises(ValueError, match="futility_min_n must be an integer >= 1"):
        AdaptiveConfig(futility_min_n=0)
    assert all(s["scores"][KIND] < 0.5 for s in record["samples"])
    never = AdaptiveConfig(wave=4, max_n=12, futility=0.0)
    [kept_on] = engine.solve([HARD], strategy="adaptive-n", config=never, max_new_tokens=96, progress=False)
    assert kept_on["adaptive"]["stopped_because"] == "max_n"  # futility 0: the stop is off
    [stopped] = [x for x in format_adaptive_summary([record, kept_on]) if "stopped:" in x]
    cost = lambda r: r["adaptive"]["tokens_spent"] + r["adaptive"]["verifier_tokens_spent"]  # noqa: E731
    assert stopped == (
        f"  stopped: futile 1 ({cost(record):.0f} tokens, {block['n_used']:.1f} samples / problem); "
        f"max_n 1 ({cost(kept_on):.0f} tokens, 12.0 samples / problem)"
    )


def test_a_problem_whose_p_correct_has_stopped_rising_stops_on_a_plateau():
    flat = [0.1, 0.8, 0.84, 0.86, 0.85, 0.86, 0.855, 0.87]  # one answer accepted, p_correct stuck below tau
    assert plateaued(flat, waves=4, wave=4, more=40, tau=0.9)
    assert not plateaued(flat, waves=4, wave=4, more=80, tau=0.9)  # at its pace (.0006 a sample) it gets there
    assert not plateaued(flat[:6], waves=4, wave=4, more=40, tau=0.9)  # .80 to .86 in 16 samples: still rising
    assert not plateaued([0.2, 0.3, 0.4, 0.5, 0.6, 0.7], waves=4, wave=4, more=40, tau=0.9)  # still rising fast
    assert plateaued([0.8, 0.8, 0.7, 0.6, 0.6, 0.5], waves=4, wave=4, more=40, tau=0.9)  # falling: flat
    assert not plateaued(flat[:4], waves=4, wave=4, more=40, tau=0.9)  # fewer than 5 waves seen
    assert not plateaued(flat, waves=0, wave=4, more=40, tau=0.9)  # off


# --- one token budget for a run ------------------------------------------------------------------------------------
def spent(records) -> int:
    return sum(r["compute"]["generated_tokens"] + r["compute"]["verifier_tokens"] for r in records)


def test_a_run_spends_its_budget_and_at_most_one_wave_more(engine, tmp_path):
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems

    problems = load_problems(default_problems_path())[:6]
    config = AdaptiveConfig(wave=4, max_n=32)
    records = engine.solve(problems, strategy="adaptive-n", config=config, budget_tokens=2000, progress=False)
    assert len(records) == 6 and all(r["adaptive"]["n_used"] >= 4 for r in records)  # every problem: a first wave
    most_per_wave = max(4 * r["adaptive"]["tokens_spent"] / r["adaptive"]["n_used"] for r in records) * 2
    assert spent(records) <= 2000 + most_per_wave
    assert records[0]["run"]["budget_tokens"] == 2000

    out = tmp_path / "r.jsonl"  # a killed run resumed: the budget counts what the file already spent
    engine.solve(problems, strategy="adaptive-n", config=config, budget_tokens=2000, out=out, progress=False)
    kept = out.read_text().splitlines()[:3]
    out.write_text("\n".join(kept) + "\n")
    again = engine.solve(problems, strategy="adaptive-n", config=config, budget_tokens=2000, out=out, progress=False)
    done = spent([json.loads(line) for line in kept])
    new = spent(again) - done
    assert new <= max(0, 2000 - done) + 3 * most_per_wave  # what was left, and at most a wave for each of the 3


def test_a_budget_is_allocated_over_the_whole_run_not_chunk_by_chunk(engine, monkeypatch):
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems
    from tts_engine.running import loop
    from tts_engine.strategies.adaptive import AdaptiveNPlan

    monkeypatch.setattr(loop, "ROWS_PER_CHUNK", 8)  # 2 problems a chunk at wave 4 without a budget
    handed = []
    solve = AdaptiveNPlan.solve
    monkeypatch.setattr(
        AdaptiveNPlan, "solve", lambda self, problems: handed.append(len(problems)) or solve(self, problems)
    )
    problems = load_problems(default_problems_path())[:6]
    config = AdaptiveConfig(wave=4, max_n=32)
    engine.solve(problems, strategy="adaptive-n", config=config, progress=False)
    assert handed == [2, 2, 2]
    handed.clear()
    engine.solve(problems, strategy="adaptive-n", config=config, budget_tokens=2000, progress=False)
    assert handed == [6]  # one allocation over every problem


def test_a_budget_needs_a_strategy_that_allocates(engine):
    with pytest.raises(ValueError, match="strategy 'fixed' spends per problem and cannot share a run's budget"):
        engine.solve([HARD], budget_tokens=1000, progress=False)


# --- the rescue fit: will more samples bring an accepted one to a problem whose every sample was rejected? ---------
from tts_engine.eval.calibrate import rescue_examples, rescue_fits  # noqa: E402
from tts_engine.pipeline.calibration import load_calibration  # noqa: E402


def test_rescue_examples_are_the_states_a_fixed_run_passes_through_while_every_sample_is_rejected():
    scores = [0.0] * 8 + [0.9] + [0.0] * 7  # 16 samples: the ninth is accepted
    examples, labels = rescue_examples([scores])
    # seen 4: the next 4 bring none, the 12 left do; seen 8: the 8 left do; seen 12: one was already accepted
    assert [(2 ** e["log_seen"], 2 ** e["log_more"]) for e in examples] == [(4, 4), (4, 12), (8, 8)]
    assert labels == [False, True, True]


def fixed_line(pid: str, scores: list[float]) -> dict:
    samples = [{"scores": {KIND: s}, "answer_class": 0, "correct": s >= 0.5} for s in scores]
    return {"id": pid, "samples": samples, "run": {"strategy": "fixed", "headline_kind": KIND}}


def test_the_rescue_fit_tells_a_problem_almost_solved_from_one_out_of_reach(tmp_path):
    rng = random.Random(1)
    lines = []
    for k in range(120):  # out of reach: every sample scores ~0; almost solved: near misses, now and then accepted
        near = k % 2 == 0
        scores = [rng.choice([0.02, 0.2, 0.9 if rng.random() < 0.25 else 0.05]) if near else 1e-7 for _ in range(32)]
        lines.append(fixed_line(f"p{k}", scores))
    [fit] = rescue_fits(lines, None, 1.0)
    calibration = Calibration([], "test", KIND, rescue=[fit])
    out_of_reach = calibration.chance_of_acceptance(KIND, [1e-7] * 8, 56)
    almost = calibration.chance_of_acceptance(KIND, [0.02, 0.2, 0.05, 0.02, 0.05, 0.2, 0.02, 0.05], 56)
    assert out_of_reach < 0.1 < 0.5 < almost
    again = load_calibration(calibration.save(tmp_path / "calibration.json"), KIND)  # the file keeps it
    assert again.chance_of_acceptance(KIND, [1e-7] * 8, 56) == pytest.approx(out_of_reach)
    # an accepted sample: the acceptance prior's posterior, not the rescue fit
    assert calibration.chance_of_acceptance(KIND, [0.9] + [1e-7] * 7, 56) > 0.9
    assert calibration.chance_of_acceptance(KIND, [1e-7] * 8, 0) == 0.0
    # runs of fewer than 16 samples a problem teach no rescue fit
    assert (
        rescue_fits(
            [fixed_line(line["id"], [s["scores"][KIND] for s in line["samples"][:8]]) for line in lines], None, 1.0
        )
        == []
    )
