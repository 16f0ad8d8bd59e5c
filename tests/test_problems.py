import json

import pytest

from tts_engine.inputs.problems import load_problems

SHARED = {
    "math500.jsonl": (500, "test/precalculus/807.json", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    "aime2024.jsonl": (30, "60", "204"),
    "amc2023.jsonl": (40, "0", "27"),
    "gsm8k_test.jsonl": (1319, "1", "18"),
    "processbench_math.json": (1000, "math-0", None),
    "hardverify_math_dev.jsonl": (250, "0", None),
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_shared_data_loads_as_it_is(name, shared_data):
    path = shared_data(name)
    count, first_id, first_reference = SHARED[name]
    problems = load_problems(path)
    assert len(problems) == count
    assert problems[0].id == first_id
    assert len({p.id for p in problems}) == count
    if first_reference is not None:
        assert problems[0].reference == first_reference
    assert all(p.text for p in problems)


def test_gsm8k_reference_is_number_after_hashes(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_text(json.dumps({"question": "q", "answer": "work <<2*3=6>>\n#### 1,234"}) + "\n")
    assert load_problems(f)[0].reference == "1234"


def test_fields_ids_and_numeric_answers(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"problem": "a", "answer": 27.0, "level": 3, "subject": "Algebra", "solution": "x" * 500},
                {"question": "b", "answer": 2.5},
                {"problem": "c"},
            ]
        )
        + "\n\n"
    )
    a, b, c = load_problems(f)
    assert (a.id, a.reference, a.fields) == ("1", "27", {"level": 3, "subject": "Algebra"})
    assert (b.id, b.reference) == ("2", "2.5")
    assert c.reference is None
    assert [p.id for p in load_problems(f, limit=2)] == ["1", "2"]


def test_malformed_line_names_file_and_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"problem": "ok"}\n{"problem": oops}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: invalid JSON"):
        load_problems(f)


def test_missing_problem_field_lists_fields_found(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "x", "answer": 1}\n')
    with pytest.raises(ValueError, match=r"p\.jsonl:1: no problem text.*\['answer', 'prompt'\]"):
        load_problems(f)


def test_json_list_and_missing_file(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps([{"problem": "x", "id": 7}]))
    assert load_problems(f)[0].id == "7"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_problems(tmp_path / "nope.jsonl")
