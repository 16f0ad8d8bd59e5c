"""Reading results files into arrays: classes, correctness, scores, tokens, and what is noted on the way."""

import numpy as np
import orjson
import pytest

from tts_engine.eval.synthetic import records_from_arrays, synthetic_records
from tts_engine.eval.table import load_results, table_from_records


def test_arrays_follow_the_records():
    records = synthetic_records(5, 6, seed=2)
    table = table_from_records(records)
    assert table.class_ids.shape == (5, 6) and table.ids == [r["id"] for r in records]
    for i, record in enumerate(records):
        for j, sample in enumerate(record["samples"]):
            assert table.class_ids[i, j] == sample["answer_class"]
            assert table.sample_correct[i, j] == float(sample["correct"])
            assert table.num_tokens[i, j] == sample["num_tokens"]
            assert table.scores["verifier_yes_no"][i, j] == sample["scores"]["verifier_yes_no"]
        for c, cls in enumerate(record["classes"]):
            assert table.class_correct[i, c] == cls["correct"]
    assert table.num_parameters == records[0]["run"]["num_parameters"]
    assert table.fields[0] == records[0]["fields"]


def test_load_names_the_file_and_line_of_a_bad_line_and_skips_only_a_torn_last_one(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [orjson.dumps(r) for r in synthetic_records(3, 4, seed=0)]
    path.write_bytes(lines[0] + b"\n" + lines[1] + b"\n" + lines[2] + b"\n" + b'{"id": "torn", "samp')
    assert load_results(path).num_problems == 3  # a killed run's torn last line
    path.write_bytes(lines[0] + b"\n" + b'{"id": "torn", "samp\n' + lines[1] + b"\n")
    with pytest.raises(ValueError, match="r.jsonl:2: invalid results line, not JSON"):
        load_results(path)
    path.write_bytes(lines[0] + b"\n[1, 2]\n")
    with pytest.raises(ValueError, match="r.jsonl:2: not a results line"):
        load_results(path)
    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"id": "a", "problem": "1+1?", "answer": "2"}\n')
    with pytest.raises(ValueError, match="problems.jsonl:1: not a results line: it has no samples"):
        load_results(problems)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_results(tmp_path / "missing.jsonl")


def test_uneven_sample_counts_missing_scores_and_bad_scores_are_noted():
    records = records_from_arrays(
        [[0, 1, 0], [1, 0, 0]], [[True, False], [False, True]], {"v": [[0.5, 0.2, 0.1], [0.3, 0.4, 0.6]]}
    )
    records[0]["samples"].append(dict(records[0]["samples"][0]))  # 4 samples here, 3 there
    del records[1]["samples"][2]["scores"]["v"]
    records[1]["samples"][1]["scores"]["v"] = 1.7
    table = table_from_records(records)
    assert table.num_samples == 3 and any("first 3 of each" in n for n in table.notes)
    assert np.isnan(table.scores["v"][1, 2]) and any("missing on 1 of 6" in n for n in table.notes)
    assert table.scores["v"][1, 1] == 1.0 and any("outside [0, 1] on 1 samples; clipped" in n for n in table.notes)


def test_classes_derived_from_samples_when_the_record_has_none():
    records = records_from_arrays([[0, 1, -1, 1]], [[False, True]])
    del records[0]["classes"]
    table = table_from_records(records)
    assert table.class_correct[0, :2].tolist() == [False, True]
    assert table.sample_correct[0].tolist() == [0.0, 1.0, 0.0, 1.0]


def test_problems_without_reference_are_marked():
    table = table_from_records(records_from_arrays([[0, 1], [0, 0]], [[True, False], None]))
    assert table.has_reference.tolist() == [True, False]
    assert np.isnan(table.sample_correct[1]).all()
    assert table.select(table.has_reference).ids == ["case/0"]
