"""p_correct under every registered strategy, on a small labelled run of the embedded default with its shipped fit:
present on every headline answer, said to be calibrated where the shipped file has a fit for the strategy's family
(and "uncalibrated", in those words, where it has none), and, where calibrated, with an ECE under a generous bound.

The bound catches a fit of the wrong family or a fit read on the wrong features (beam's answers read by the fixed
runs' verifier fit were off by .2-.3), not noise: the set is small and fixed by its seed."""

from __future__ import annotations

import pytest

from tts_engine import Engine
from tts_engine.inputs.problems import Problem
from tts_engine.pipeline.aggregate import headline_vote
from tts_engine.pipeline.metrics import reliability
from tts_engine.strategies.registry import strategies
from tts_engine.tasks.arith.generator import make_problem_set

STRATEGIES = sorted(strategies())
ECE_BOUND = 0.15
"""Generous: 16 answers in ten bins. The shipped fits gave .015-.077 on this set (search .077, on votes only)."""


@pytest.fixture(scope="module")
def engine(default_model_dir):
    return Engine(default_model_dir)


@pytest.fixture(scope="module")
def problems():
    made = make_problem_set(seed=8701, levels=range(1, 9), per_level=2)  # a seed no fit or report uses
    return [Problem(p.id, p.problem, p.answer) for p in made]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_p_correct_is_present_and_calibrated_where_the_shipped_file_has_a_fit(strategy, engine, problems):
    n = 8 if strategy == "deepconf" else 4  # deepconf's warm-up is 8 samples
    records = engine.solve(problems, strategy=strategy, n=n, progress=False)
    run = records[0]["run"]
    headline = [r["aggregations"][headline_vote(run.get("headline_kind"))] for r in records]
    p = [vote["p_correct"] for vote in headline]
    assert all(0.0 <= x <= 1.0 for x in p), (strategy, p)
    if run["calibration"].startswith("uncalibrated"):
        assert "no fit for" in run["calibration"], run["calibration"]
        return
    ece = reliability(p, [bool(vote["correct"]) for vote in headline])["ece"]
    assert ece <= ECE_BOUND, (strategy, run["calibration"], round(ece, 3))
