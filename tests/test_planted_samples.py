"""scripts/planted_samples.py: step-labelled samples without a generator (the right solution and planted errors),
read back by process_eval's --samples."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from tts_engine.eval.process_eval import NO_ERROR, arith_first_error, read_samples
from tts_engine.tasks.arith.generator import make_problem

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "planted_samples.py"
spec = importlib.util.spec_from_file_location("planted_samples", SCRIPT)
ps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ps)


@pytest.mark.parametrize("level", [1, 5, 8])
def test_the_right_solution_is_the_tasks_and_every_planted_one_has_a_first_error(level):
    rng = random.Random(level)
    problem = make_problem(rng, level)
    texts = ps.planted_texts(problem.problem, wrong=4, rng=rng)
    assert texts[0] == problem.solution and arith_first_error(problem.problem, texts[0]) == NO_ERROR
    labels = [arith_first_error(problem.problem, t) for t in texts[1:]]
    assert all(label is not None and label >= 0 for label in labels)
    assert len(set(texts)) == len(texts)  # distinct where the draws allow (always, at these lengths)


def test_samples_files_are_checked_against_the_problem_set(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"prompts": ["p1", "p2"], "texts": [["a"], ["b"]]}))
    assert read_samples(path, 2) == (["p1", "p2"], [["a"], ["b"]])
    with pytest.raises(SystemExit, match="samples of 2 problems, the problem set has 3"):
        read_samples(path, 3)
    path.write_text(json.dumps({"texts": []}))
    with pytest.raises(SystemExit, match=f"{path}: not a samples file of process_eval"):
        read_samples(path, 0)


@pytest.mark.weights
def test_the_table_verifies_a_samples_file_before_any_generator(tmp_path, default_model_dir):
    from tts_engine.backends.hf import HFBackend
    from tts_engine.eval.process_eval import run_table
    from tts_engine.inputs.prompts import PromptConfig, build_prompt
    from tts_engine.tasks.arith.generator import write_problem_set

    problems = write_problem_set(tmp_path / "set.jsonl", seed=3, per_level=2, levels=(4, 5))
    records = [json.loads(line) for line in problems.read_text().splitlines()]
    rng = random.Random(0)
    texts = [ps.planted_texts(r["problem"], wrong=3, rng=rng) for r in records]
    samples = tmp_path / "planted.json"
    backend, config = HFBackend(default_model_dir, device="cpu"), PromptConfig.load(default_model_dir)
    prompts = [build_prompt(config, r["problem"], backend) for r in records]  # the check is read after them
    samples.write_text(json.dumps({"prompts": prompts, "texts": texts}))
    result = run_table(
        {}, {"default": default_model_dir}, str(tmp_path / "out"), n=4, problems_path=str(problems),
        sample_files={"planted": str(samples)},
    )  # fmt: skip
    assert result["generators"]["planted"]["pass_at_1"] == 0.25  # 1 right of 4 per problem
    m = result["verifiers"]["default"]
    assert m["step"]["num_erroneous"] == 12 and m["step"]["num_correct"] == 4
    assert m["outcome_bal_acc"] == 1.0 and m["step"]["f1"] > 0.9  # the default's check finds the planted lines
