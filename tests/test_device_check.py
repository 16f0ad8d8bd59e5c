"""The GPU check (scripts/device_check): its dry run end to end, and its parts on their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from device_check import run  # noqa: E402
from device_check.kernel_sections import float64_logp, junit_counts  # noqa: E402
from device_check.plan import DRY_PLAN, SECTIONS  # noqa: E402
from device_check.pytest_cuda import moved, on_device  # noqa: E402
from device_check.recorder import Recorder  # noqa: E402
from device_check.serving_sections import generated_tokens  # noqa: E402


@pytest.fixture(scope="module")
def dry_report(tmp_path_factory):
    """One dry run of every section (CPU, tiny shapes, interpreter), as the shell script starts it."""
    out = tmp_path_factory.mktemp("device_check") / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "scripts"), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-P", "-m", "device_check", "--dry", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=DRY_PLAN.total_budget_s + 60,
    )
    return done, json.loads(out.read_text()) if out.is_file() else None, out


@pytest.mark.slow
def test_dry_run_reports_every_section_with_numbers(dry_report):
    done, report, out = dry_report
    assert report is not None, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-3000:] + out.with_suffix(".log").read_text()[-3000:]
    assert report["mode"] == "dry" and list(report["sections"]) == list(SECTIONS)
    for name, section in report["sections"].items():
        assert section["status"] == "ok" and not section["errors"], (name, section["errors"])
        numbers = [f["value"] for f in section["figures"] if isinstance(f["value"], float)]
        assert numbers and all(v >= 0 for v in numbers), (name, section["figures"])
        assert f"== {name}: ok" in done.stdout
    assert "device check (dry)" in done.stdout and "| torch reference" in done.stdout


@pytest.mark.slow
def test_dry_run_figures_are_checked_not_just_printed(dry_report):
    sections = {name: {f["name"]: f for f in s["figures"]} for name, s in dry_report[1]["sections"].items()}
    errors = [f for name, f in sections["score"].items() if name.endswith("vs float64")]
    assert errors and all(f["value"] < 1e-4 and f["baseline_value"] < 1e-4 for f in errors)  # float32 on CPU
    votes = [f for name, f in sections["vote"].items() if name.endswith("triton time")]
    assert len(votes) == len(DRY_PLAN.vote_ks) and all(f["met"] for f in votes)  # same winners everywhere
    tests = sections["kernel_tests"]["kernel tests passed"]
    assert tests["met"] and tests["value"] == tests["baseline_value"] > 0
    assert "Triton calls on cpu: 0" not in tests["note"]  # the plugin saw the kernel calls
    generate = sections["generate"]
    for path in ("generate: hf backend (HFBackend.generate)", "generate: engine (Engine.solve)"):
        assert generate[path]["value"] > 0 and generate[path]["baseline_value"] > 0
    assert sections["solve"]["solve: tts solve wall time on cpu"]["value"] > 0


def test_budget_too_small_skips_every_section_without_starting_one(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert run.main(["--dry", "--budget", "1", "--out", str(out)]) == 1
    report = json.loads(out.read_text())
    assert {s["status"] for s in report["sections"].values()} == {"skipped"}
    assert "budget left" in report["sections"]["machine"]["notes"][0]


def test_bad_budget_is_a_one_line_error(capsys):
    with pytest.raises(SystemExit):
        run.parse_args(["--budget", "-5"])
    assert "--budget must be > 0 seconds, got -5.0" in capsys.readouterr().err


def test_recorder_keeps_other_steps_after_a_failure(tmp_path):
    rec = Recorder(tmp_path / "part.json", deadline=0)
    with rec.step("first"):
        raise ValueError("broken input")
    with rec.step("second"):
        rec.figure("x", 2.5, "ms", baseline="y", baseline_value=5.0, goal="< y", met=True)
    saved = json.loads((tmp_path / "part.json").read_text())
    assert saved["errors"][0]["step"] == "first" and "ValueError: broken input" in saved["errors"][0]["error"]
    assert saved["figures"][0]["ratio"] == 0.5
    line = run.format_figure(saved["figures"][0])
    assert "2.50 ms" in line and "| y" in line and "x0.5" in line and "goal < y: MET" in line


def test_moved_reaches_tensors_in_containers_and_dataclasses():
    from tts_engine.kernels import SubsetVotes

    votes = SubsetVotes(torch.zeros(2, 3), torch.ones(2, 3), torch.ones(2, 3), {"majority": torch.zeros(2)})
    out = moved((votes, [torch.zeros(1)], {"k": torch.zeros(1)}, "triton", 3), "meta")
    assert out[0].majority.is_meta and out[0].accuracy["majority"].is_meta
    assert out[1][0].is_meta and out[2]["k"].is_meta and out[3:] == ("triton", 3)


def test_on_device_moves_only_triton_calls_and_returns_cpu_results():
    seen = []

    def kernel(x, *, impl="auto"):
        seen.append(x.device.type)
        return torch.zeros(x.shape)  # a new CPU tensor, as the results a GPU call gives back would be

    wrapped = on_device(kernel, "meta", "impl")
    assert wrapped(torch.ones(2)).device.type == "cpu"
    assert wrapped(torch.ones(2), impl="triton").device.type == "cpu"
    assert seen == ["cpu", "meta"]


def test_junit_counts(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(
        '<testsuites><testsuite><testcase classname="a" name="ok"/>'
        '<testcase classname="a" name="bad"><failure message="x"/></testcase>'
        '<testcase classname="a" name="err"><error message="y"/></testcase>'
        '<testcase classname="a" name="skip"><skipped/></testcase></testsuite></testsuites>'
    )
    assert junit_counts(path) == {
        "tests": 4,
        "passed": 1,
        "skipped": 1,
        "failed": 2,
        "failed_names": ["a::bad", "a::err"],
    }


def test_float64_logp_in_row_blocks_matches_log_softmax():
    gen = torch.Generator().manual_seed(0)
    hidden, weight = torch.randn(7, 5, generator=gen), torch.randn(11, 5, generator=gen)
    want = torch.log_softmax(hidden.double() @ weight.double().T, dim=1)[:, [3, 10]].T
    torch.testing.assert_close(float64_logp(hidden, weight, (3, 10), rows_per_block=2), want)


def test_generated_tokens_stop_at_the_first_eos():
    new = torch.tensor([[5, 6, 0, 0], [5, 6, 7, 8], [0, 1, 0, 2]])
    assert generated_tokens(new, eos_id=0) == 3 + 4 + 1
