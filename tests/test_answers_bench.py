"""The equivalence benchmark runs end to end on a small file and scores each method."""

import json

from tts_engine.eval import equivalence_bench


def test_equivalence_bench_on_a_small_file(tmp_path, capsys):
    rows = [
        ("What is half of 1?", "$\\frac{1}{2}$", "0.5", True),
        ("Solve.", "$(-\\infty,-5)$", "k < -5", True),
        ("Day?", "Monday", "The answer is \\boxed{\\text{Monday}}", True),
        ("Solve.", "$3$", "x = 4", False),
    ]
    path = tmp_path / "dev.jsonl"
    path.write_text(
        "".join(
            json.dumps({"question": q, "ground_truth": g, "model_answer": a, "is_equivalent": e, "pair_id": str(i)})
            + "\n"
            for i, (q, g, a, e) in enumerate(rows)
        )
    )
    scores = {s.method: s for s in equivalence_bench.main(["--data", str(path), "--processes", "1"])}
    ours = scores["tts-engine rule (normalisation + math-verify)"]
    assert (ours.false_negatives, ours.positives, ours.false_positives, ours.negatives) == (0, 3, 0, 1)
    assert scores["string match (whitespace-insensitive)"].false_negatives == 3
    table = capsys.readouterr().out
    assert "| method | false negatives | false positives |" in table
    assert "| tts-engine rule (normalisation + math-verify) | 0.0% (0/3) | 0.0% (0/1) |" in table
