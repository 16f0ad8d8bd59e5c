"""The GPU check's serving parts on their own: the bandwidth floor, reports kept across runs, Markdown tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from device_check import run  # noqa: E402
from device_check.plan import DRY_PLAN, SECTIONS  # noqa: E402
from device_check.serving_sections import bandwidth_floor  # noqa: E402


def test_bandwidth_floor_reads_the_weights_once_and_every_rows_cache_once():
    from device_check.serving_sections import build_model

    model, _ = build_model(DRY_PLAN.model, "float32", "cpu")  # 2 layers, 1 KV head of 32, float32
    weights = sum(p.numel() for p in model.parameters()) * 4
    kv_per_position = 2 * 2 * 1 * 32 * 4
    step_bytes = weights + 8 * 100 * kv_per_position  # 8 rows, 100 positions each
    assert bandwidth_floor(model, 8, 100, copy_gbps=2.0) == pytest.approx(8 / (step_bytes / 2e9))


def _section(status: str, value: float) -> dict:
    figure = {"name": "x", "value": value, "unit": "s", "baseline": "y", "baseline_value": 2.0, "ratio": value / 2}
    figure.update(goal=None, met=None, note="a | b")
    return {"status": status, "elapsed_s": 1.0, "limit_s": 5.0, "info": {}, "figures": [figure], "rows": []}


def test_keep_carries_the_sections_not_run_and_markdown_shows_them(tmp_path, capsys):
    earlier = {"device_check": 1, "mode": "dry", "budget_s": 9, "elapsed_s": 1, "sections": {}}
    earlier["sections"] = {"solve": {**_section("ok", 1.5), "errors": [], "notes": []}}
    path = tmp_path / "gpu_report.json"
    path.write_text(json.dumps(earlier))
    out = tmp_path / "new.json"
    assert run.main(["--dry", "--budget", "1", "--only", "machine", "--keep", str(path), "--out", str(out)]) == 1
    report = json.loads(out.read_text())
    assert list(report["sections"]) == ["machine", "solve"]  # in run order
    assert report["sections"]["machine"]["status"] == "skipped"  # run (and skipped: no budget)
    assert report["sections"]["solve"]["kept"] and report["sections"]["solve"]["figures"][0]["value"] == 1.5
    assert "== solve: ok (1 s of 5 s, kept from an earlier run)" in capsys.readouterr().out
    assert run.main(["--markdown", str(out)]) == 0
    table = capsys.readouterr().out
    assert "### solve: ok (kept from an earlier run)" in table
    assert "| x | 1.50 s | y 2 | 0.75 |  | a / b |" in table


def test_keep_refuses_a_report_of_the_other_mode(tmp_path):
    path = tmp_path / "gpu_report.json"
    path.write_text(json.dumps({"mode": "gpu", "sections": {}}))
    with pytest.raises(SystemExit, match="a gpu report cannot be kept in a dry run"):
        run.main(["--dry", "--budget", "1", "--keep", str(path), "--out", str(tmp_path / "x.json")])


def test_every_section_is_registered_and_budgeted():
    assert "e2e" in SECTIONS
    for name in SECTIONS:
        assert callable(run.section_function(name)) and name in DRY_PLAN.budgets_s
