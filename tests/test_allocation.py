"""Where compute goes: pass@1 per problem (not pooled over samples, which weighs the problems an adaptive run spent
most on), the futility stop of the adaptive strategies, and one token budget for a run."""

from __future__ import annotations

from tts_engine.running.summary import summarize


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
