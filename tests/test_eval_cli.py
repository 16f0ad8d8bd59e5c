"""`tts curve` end to end on small synthetic results files, through click's CliRunner."""

import csv
import json

import orjson
import pytest
from click.testing import CliRunner

from tts_engine.eval.cli import bench, curve
from tts_engine.eval.synthetic import records_from_arrays, synthetic_records

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_results(path, records):
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


@pytest.fixture
def results_file(tmp_path):
    return write_results(tmp_path / "small_set.jsonl", synthetic_records(24, 16, seed=7))


def test_curve_writes_json_csv_png_and_prints_a_table(results_file, tmp_path):
    out = tmp_path / "curves"
    result = CliRunner().invoke(curve, [str(results_file), "--out-dir", str(out), "--subsets", "60"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "curves.json").read_text())
    (c,) = data["curves"]
    assert c["label"] == "small_set" and c["k"] == [1, 2, 4, 8, 16] and c["num_problems_scored"] == 24
    kinds = ("likelihood", "verifier_vocab", "verifier_yes_no")
    expected = {"pass@k", "majority"} | {f"{s}:{k}" for s in ("weighted", "best_of_n") for k in kinds}
    assert set(c["aggregations"]) == expected
    assert set(c["efficiency"]) == expected - {"pass@k"}
    assert set(c["verifier"]) == set(kinds) and 0.5 < c["verifier"]["verifier_yes_no"]["auroc"] <= 1
    assert c["aggregations"]["majority"]["compute"]["flops"][0] > 0
    assert [p["id"] for p in c["problems"]] == [f"synthetic/{i}" for i in range(24)]
    rows = list(csv.DictReader((out / "curves.csv").open()))
    overall = [r for r in rows if r["group_field"] == ""]
    assert len(overall) == len(expected) * 5
    first = next(r for r in overall if r["aggregation"] == "majority" and r["k"] == "16")
    assert float(first["accuracy"]) == pytest.approx(c["aggregations"]["majority"]["accuracy"][-1])
    assert {r["group_field"] for r in rows} == {"", "level", "subject"}
    for name in ("accuracy_vs_samples.png", "accuracy_vs_tokens.png", "accuracy_vs_flops.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    assert "majority" in result.output and "efficiency vs majority@16" in result.output
    assert "verifier_yes_no" in result.output and "AUROC" in result.output


def test_curve_overlays_labelled_files(results_file, tmp_path):
    other = write_results(tmp_path / "other.jsonl", synthetic_records(10, 8, seed=1, separation=0.3))
    out = tmp_path / "both"
    result = CliRunner().invoke(
        curve,
        [
            str(results_file),
            str(other),
            "--out-dir",
            str(out),
            "--subsets",
            "20",
            "--label",
            "strong",
            "--label",
            "weak",
            "--only",
            "yes_no",
        ],
    )
    assert result.exit_code == 0, result.output
    labels = [c["label"] for c in json.loads((out / "curves.json").read_text())["curves"]]
    assert labels == ["strong", "weak"]
    assert "== strong" in result.output and "== weak" in result.output
    assert (out / "accuracy_vs_samples.png").read_bytes()[:8] == PNG_MAGIC


def test_curve_reports_bad_input_clearly(results_file, tmp_path):
    runner = CliRunner()
    result = runner.invoke(curve, [str(results_file), "--out-dir", str(tmp_path / "o"), "--label", "a", "--label", "b"])
    assert result.exit_code != 0 and "--label must be given once per results file (1), got 2" in result.output
    unreferenced = write_results(tmp_path / "noref.jsonl", records_from_arrays([[0, 1]], [None], {"v": [[0.1, 0.2]]}))
    result = runner.invoke(curve, [str(unreferenced), "--out-dir", str(tmp_path / "o2")])
    assert result.exit_code != 0 and "no problem has a reference answer" in result.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = runner.invoke(curve, [str(empty), "--out-dir", str(tmp_path / "o3")])
    assert result.exit_code != 0 and "holds no problem records" in result.output


def test_curve_without_plots_or_verifier_scores(tmp_path):
    path = write_results(
        tmp_path / "plain.jsonl",
        records_from_arrays([[0, 0, 1, -1], [1, 0, 1, 1]], [[True, False], [False, True]], num_parameters=None),
    )
    out = tmp_path / "o"
    result = CliRunner().invoke(curve, [str(path), "--out-dir", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    (c,) = json.loads((out / "curves.json").read_text())["curves"]
    assert set(c["aggregations"]) == {"pass@k", "majority"} and c["verifier"] == {}
    assert c["aggregations"]["majority"]["compute"]["flops"] is None
    assert not list(out.glob("*.png"))


def test_bench_generates_then_draws(tiny_model_dir, tmp_path):
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        "".join(json.dumps({"id": f"p{i}", "problem": f"{i}+{i}=", "answer": str(2 * i)}) + "\n" for i in range(3))
    )
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        bench,
        [
            "--model",
            tiny_model_dir,
            "--problems",
            str(problems),
            "--n",
            "4",
            "--max-new-tokens",
            "6",
            "--out-dir",
            str(out),
            "--subsets",
            "10",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    (c,) = json.loads((out / "curves.json").read_text())["curves"]
    assert c["label"] == "problems" and c["k"] == [1, 2, 4] and c["num_problems"] == 3
    assert (out / "accuracy_vs_samples.png").exists()


def test_curve_keeps_the_old_out_flag_with_a_warning(results_file, tmp_path):
    out = tmp_path / "old_flag"
    result = CliRunner().invoke(curve, [str(results_file), "--out", str(out), "--subsets", "20", "--no-plots"])
    assert result.exit_code == 0, result.output
    assert (out / "curves.json").is_file()
    assert "--out is deprecated and will be removed; use --out-dir" in result.output
