"""Step-level evaluation: task labels by recomputation, ProcessBench metrics, the ProcessBench loader."""

from __future__ import annotations

import pytest

from tts_engine.eval.process_eval import (
    NO_ERROR,
    arith_first_error,
    first_error_metrics,
    load_processbench,
    score_processbench,
    tagged_solution,
    weighted_vote_accuracy,
)
from tts_engine.verifiers.process import ProcessSampleScore
from tts_engine.verifiers.steps import split_steps

PROBLEM = "Compute left to right: 28*4-18+80."
RIGHT = "28*4=112\n112-18=94\n94+80=174\n\\boxed{174}"


@pytest.mark.parametrize(
    "solution, first_error",
    [
        (RIGHT, NO_ERROR),
        ("28*4=113\n113-18=95\n95+80=175\n\\boxed{175}", 0),  # arithmetic slip, later lines consistent with it
        ("28*4=112\n112-17=95\n95+80=175\n\\boxed{175}", 1),  # wrong operand copied
        ("28*4=112\n110-18=92\n92+80=172\n\\boxed{172}", 1),  # wrong carry of the running value
        ("28*4=112\n112-18=94\n94+80=174\n\\boxed{147}", 3),  # wrong copy into the box
        ("28*4=112\n112-18=94\n94+80=174\n\\boxed{174}\nmore", 4),
        ("28*4=112\nhello\n94+80=174\n\\boxed{174}", 1),
        ("28*4=112\n112-18=94", None),  # right so far but incomplete
    ],
)
def test_arith_first_error(solution, first_error):
    assert arith_first_error(PROBLEM, solution) == first_error


def test_not_a_task_problem_is_a_clear_error():
    with pytest.raises(ValueError, match="arithmetic-task"):
        arith_first_error("What is 2+2?", "4")


def test_first_error_metrics_and_f1():
    m = first_error_metrics([1, 2, None, -1, -1, 0], [1, 1, 0, -1, -1, -1])
    assert m["acc_erroneous"] == pytest.approx(1 / 3) and m["acc_correct"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 * (1 / 3) * (2 / 3) / 1.0)
    assert m["unreadable"] == 1 and m["num_erroneous"] == 3
    assert first_error_metrics([-1], [-1])["f1"] is None


def test_weighted_vote():
    problems = [{"answer": "5"}, {"answer": "7"}]
    texts = [["\\boxed{5}", "\\boxed{6}", "\\boxed{6}"], ["\\boxed{7}", "none"]]
    assert weighted_vote_accuracy(problems, texts, [[0.9, 0.2, 0.2], [0.1, 1.0]]) == 1.0
    assert weighted_vote_accuracy(problems, texts, [[0.1, 0.2, 0.2], [0.1, 1.0]]) == 0.5


class OracleVerifier:
    """Names the given first-error indices, in order (a stand-in for a real model)."""

    name = "fake"
    kinds = ("process",)

    def __init__(self, answers):
        self.answers = list(answers)
        self.seen_steps = []

    def score(self, questions, prompts, outputs):
        out = []
        for q, outs in zip(questions, outputs):
            self.seen_steps.append(len(split_steps(outs[0])))
            out.append([ProcessSampleScore({"process": 0.5}, 1, first_error=self.answers.pop(0))])
        return out


def test_processbench_loads_and_scores_with_a_fake_verifier(shared_data):
    every = load_processbench(shared_data("processbench_math.json"))
    records = [r for r in every if r["label"] == NO_ERROR][:20] + [r for r in every if r["label"] != NO_ERROR][:20]
    assert len(records) == 40 and all(isinstance(r["steps"], list) and isinstance(r["label"], int) for r in records)
    perfect = OracleVerifier([r["label"] for r in records])
    m = score_processbench(perfect, records, batch_size=16)
    assert m["f1"] == 1.0 and m["num_erroneous"] + m["num_correct"] == 40
    assert perfect.seen_steps == [len(r["steps"]) for r in records]  # multi-line steps survive the <step> tags
    always_ok = OracleVerifier([NO_ERROR] * len(records))
    m = score_processbench(always_ok, records)
    assert m["acc_correct"] == 1.0 and m["acc_erroneous"] == 0.0 and m["f1"] == 0.0


def test_tagged_solution_round_trips_steps():
    steps = ["a\nb", "c", "  d  "]
    assert split_steps(tagged_solution(steps)) == ["a\nb", "c", "d"]


def test_loader_names_missing_fields(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('[{"problem": "x", "steps": []}]')
    with pytest.raises(ValueError, match="label"):
        load_processbench(path)


class KnowingVerifier:
    """Scores 1 for the right final answer, 0 otherwise; names step 0 as the error of wrong solutions."""

    name = "knowing"

    def score(self, questions, prompts, outputs):
        def one(text):
            ok = text.endswith("\\boxed{20}")
            s = 1.0 if ok else 0.0
            return ProcessSampleScore({"process_final": s, "verifier_yes_no": s}, 3, first_error=NO_ERROR if ok else 0)

        return [[one(t) for t in outs] for outs in outputs]


def test_verifier_and_unified_metrics_on_a_verifier_that_knows():
    from tts_engine.eval.process_eval import unified_metrics, verifier_metrics

    problems = [{"problem": "Compute left to right: 2+3*4.", "answer": "20"}] * 2
    right, wrong = "2+3=5\n5*4=20\n\\boxed{20}", "2+3=6\n6*4=24\n\\boxed{24}"
    texts = [[right, wrong, wrong], [wrong, right, wrong]]
    prompts = ["p"] * 2
    m = verifier_metrics(KnowingVerifier(), problems, prompts, texts, batch_problems=1)
    assert m["outcome_bal_acc"] == 1.0 and m["step"]["f1"] == 1.0
    # each problem has 2 distinct texts of 3: each is verified once (3 tokens), the repeat costs nothing
    assert m["weighted"]["process_final"] == 1.0 and m["verifier_tokens_per_sample"] == 2
    u = unified_metrics(KnowingVerifier(), problems, prompts, texts)
    assert u["outcome_bal_acc"] == 1.0 and "step" not in u


def test_task_problems_reads_a_made_set_and_keeps_the_first_of_each_level(tmp_path):
    from tts_engine.eval.process_eval import task_problems
    from tts_engine.tasks.arith.generator import write_problem_set

    path = write_problem_set(tmp_path / "long.jsonl", seed=7, per_level=3, levels=(6, 7), cap=999)
    records = task_problems(str(path), limit_per_level=2)
    assert [r["id"] for r in records] == ["arith-L6-000", "arith-L6-001", "arith-L7-000", "arith-L7-001"]
    assert len(task_problems(None)) == 200  # the bundled set
