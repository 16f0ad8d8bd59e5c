"""`tts launch --ray`: actors pull chunks, the driver writes one results file, a lost worker loses nothing.

The Ray tests share one local cluster of 2 CPUs (started once, shut down at the end of the session) and a tiny
random model; the driver-side rules (retries, failures) are also checked against a stand-in for Ray.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tts_engine.cli.parallel import launch, parse_launch
from tts_engine.config import Job, RunConfig
from tts_engine.inputs.problems import Problem
from tts_engine.launch.ray import (
    MAX_WORKER_DEATHS,
    Driver,
    LaunchError,
    RayConfig,
    chunk_size,
    launch_on_ray,
    make_chunks,
)
from tts_engine.running.results import read_results

ROOT = Path(__file__).resolve().parents[1]
SOLVE = ["--n", "2", "--max-new-tokens", "24", "--seed", "3"]


def write_problems(path: Path, count: int) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "problem": f"{i}+{i}=", "answer": str(2 * i)}) + "\n" for i in range(count))
    )
    return path


def same_records(got: list[dict], want: list[dict]) -> None:
    """Record for record: texts, answers, classes and votes exactly; scores to float rounding (a batch's padding
    changes the last bits of a log-prob, never a sampled token here)."""
    assert [r["id"] for r in got] == [r["id"] for r in want]
    for a, b in zip(got, want):
        assert a["status"] == b["status"]
        assert [s["text"] for s in a["samples"]] == [s["text"] for s in b["samples"]], a["id"]
        assert [s["answer"] for s in a["samples"]] == [s["answer"] for s in b["samples"]], a["id"]
        assert {k: v["answer"] for k, v in a["aggregations"].items()} == {
            k: v["answer"] for k, v in b["aggregations"].items()
        }
        for s, t in zip(a["samples"], b["samples"]):
            assert s["scores"] == pytest.approx(t["scores"], rel=1e-5, abs=1e-6)


def by_id(path: Path) -> dict[str, dict]:
    records = list(read_results(path))
    counts = Counter(r["id"] for r in records)
    assert max(counts.values()) == 1, f"written twice: {[i for i, c in counts.items() if c > 1]}"
    return {r["id"]: r for r in records}


# --- no cluster needed -----------------------------------------------------------------------------------
def test_import_never_imports_ray():
    code = "import sys, tts_engine, tts_engine.cli.commands, tts_engine.cli.parallel, tts_engine.launch.ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_chunks_cover_every_problem_once():
    problems = [Problem(f"p{i}", "x") for i in range(23)]
    size = chunk_size(23, workers=2, most=32)
    chunks = make_chunks(problems, size)
    assert size == 6 and all(len(c) <= size for c in chunks)
    assert sorted(p.id for c in chunks for p in c) == sorted(p.id for p in problems)
    assert chunks == make_chunks(problems, size)  # one fixed order
    assert chunk_size(1000, workers=2, most=32) == 32 and chunk_size(0, workers=2, most=32) == 1


@pytest.mark.parametrize(
    "address, message",
    [("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1"), ("nowhere", "must be auto, local or HOST:PORT")],
)
def test_bad_address_is_a_one_line_error(tmp_path, address, message):
    problems = write_problems(tmp_path / "p.jsonl", 2)
    result = CliRunner().invoke(launch, [str(problems), "--ray", address, "--out", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 1 and message in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_ray_refuses_the_local_launch_options(tmp_path):
    problems = write_problems(tmp_path / "p.jsonl", 2)
    args = [str(problems), "--ray", "auto", "--gpus", "0,1", "--out", str(tmp_path / "r.jsonl")]
    result = CliRunner().invoke(launch, args)
    assert result.exit_code == 1 and "drop --gpus" in result.output


# --- the driver's rules, against a stand-in for Ray ----------------------------------------------------------
class FakeRay:
    """Just what the Driver uses: remote calls run at once, a poisoned problem kills its actor."""

    class exceptions:  # noqa: N801 - mirrors ray.exceptions
        class RayActorError(Exception):
            actor_init_failed = False

        class ObjectLostError(Exception):
            pass

        class RayTaskError(Exception):
            pass

    def __init__(self, poison: set[str]):
        self.poison, self.killed = poison, 0

    def wait(self, refs, num_returns=1):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        if isinstance(ref, Exception):
            raise ref
        return ref

    def kill(self, actor, no_restart=True):
        self.killed += 1


class FakeActor:
    def __init__(self, ray: FakeRay, pid: int):
        self.ray, self.pid = ray, pid
        self.describe = type("M", (), {"remote": lambda _: {"pid": pid, "host": "here"}})()
        self.solve = type("M", (), {"remote": lambda _, chunk, budget=None: self._solve(chunk, budget)})()
        self.budgets = []

    def _solve(self, chunk, budget):
        self.budgets.append(budget)
        for problem in chunk:  # a poisoned problem kills the actor before its record
            if problem.id in self.ray.poison:
                yield self.ray.exceptions.RayActorError("The actor died unexpectedly")
                return
            compute = {"generated_tokens": 50, "verifier_tokens": 10}
            yield {"id": problem.id, "status": "ok", "run": {"strategy": "fixed", "n": 2}, "compute": compute}


class FakeRun:
    def __init__(self):
        self.done, self.written, self.checked = {}, [], []

    def same_experiment(self, run_block):
        self.checked.append(run_block)

    def finish(self, record):
        self.done[record["id"]] = record
        self.written.append(record)


def test_a_dead_workers_chunk_is_retried_and_a_poison_problem_fails_alone():
    ray, run = FakeRay(poison={"p3"}), FakeRun()
    problems = [Problem(f"p{i}", "x") for i in range(8)]
    pids = iter(range(100, 200))
    chunks = [problems[i : i + 4] for i in range(0, 8, 4)]
    driver = Driver(ray, lambda: FakeActor(ray, next(pids)), Job(None, RunConfig(), None), run, chunks, 2, print)
    driver.loop()
    assert sorted(r["id"] for r in run.written) == [f"p{i}" for i in range(8)]  # every problem, once
    failed = [r for r in run.written if r["status"] != "ok"]
    assert [r["id"] for r in failed] == ["p3"] and "died 2 times" in failed[0]["failure"]["reason"]
    assert failed[0]["run"] == {"strategy": "fixed", "n": 2}  # the run block of the run's records
    assert run.checked == [{"strategy": "fixed", "n": 2}]  # the file checked once against the actors' settings
    assert driver.deaths == {"p3": MAX_WORKER_DEATHS}
    assert sum(w.died for w in driver.stats()) == MAX_WORKER_DEATHS  # each death replaced its actor


def test_the_driver_hands_each_chunk_its_share_of_the_run_budget():
    ray, run = FakeRay(poison=set()), FakeRun()
    problems = [Problem(f"p{i}", "x") for i in range(8)]
    actors = []

    def make_actor():
        actors.append(FakeActor(ray, 100 + len(actors)))
        return actors[-1]

    job = Job(None, RunConfig("adaptive-n", budget_tokens=1000), None)
    driver = Driver(ray, make_actor, job, run, [problems[:4], problems[4:]], 1, print)
    driver.loop()
    assert [b for a in actors for b in a.budgets] == [500, 760]  # 1000 x 4/8; then what is left after 240 spent
    assert driver.budget.spent == 8 * 60  # every record's generated + verifier tokens, reservations trued up


def test_an_actor_that_cannot_build_its_engine_stops_the_run():
    ray, run = FakeRay(poison=set()), FakeRun()

    class Broken(FakeActor):
        def __init__(self, ray):
            super().__init__(ray, 1)
            error = ray.exceptions.RayActorError(
                "The actor died because of an error raised in its creation task\nOSError: no such model: /nope"
            )
            error.actor_init_failed = True
            self.describe = type("M", (), {"remote": lambda _: error})()

    driver = Driver(ray, lambda: Broken(ray), Job(None, RunConfig(), None), run, [[Problem("a", "x")]], 1, print)
    with pytest.raises(LaunchError, match="could not build its engine: OSError: no such model: /nope"):
        driver.loop()


# --- on a local cluster of 2 CPUs ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 2 CPUs for these tests (this process is its driver), shut down after them; its GCS
    address."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def solved(tmp_path_factory, tiny_model_dir):
    """12 problems and a single-process `tts solve` of them: the records every Ray run must equal."""
    from tts_engine.cli import main

    folder = tmp_path_factory.mktemp("ray_solve")
    problems = write_problems(folder / "p.jsonl", 12)
    out = folder / "single.jsonl"
    args = ["solve", str(problems), "--model", tiny_model_dir, *SOLVE, "--out", str(out), "--quiet"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return problems, list(read_results(out))


def solve_args(tiny_model_dir) -> list[str]:
    return ["--model", tiny_model_dir, *SOLVE]


def test_two_actors_write_the_records_of_tts_solve(ray_cluster, solved, tiny_model_dir, tmp_path):
    problems, want = solved
    out = tmp_path / "r.jsonl"
    args = [str(problems), "--ray", "auto", "--workers", "2", "--chunk-size", "2", "--out", str(out)]
    result = CliRunner().invoke(launch, [*args, *solve_args(tiny_model_dir), "--quiet"])
    assert result.exit_code == 0, result.output
    got = by_id(out)
    same_records([got[r["id"]] for r in want], want)
    workers = re.findall(r"worker \d \(pid \d+ on .+?\): (\d+) problems", result.output)
    ready = re.findall(r"worker \d \(pid \d+ on .+?\) ready", result.output)
    # Each worker's throughput in the summary (on a busy machine one actor may start after the other solved all).
    assert 1 <= len(workers) == len(ready) <= 2 and sum(map(int, workers)) == 12, result.output
    assert "majority" in result.output  # the summary of `tts solve`


def test_a_killed_actor_loses_nothing(ray_cluster, solved, tiny_model_dir, tmp_path):
    problems, want = solved
    out, notes, killed = tmp_path / "r.jsonl", [], []

    def echo(line):
        notes.append(line)
        match = re.search(r"worker \d \(pid (\d+) on", line)
        if match and line.endswith("ready") and not killed:  # the first worker ready: it holds a chunk soon
            killed.append(int(match.group(1)))

    settings = RayConfig("auto", workers=2, chunk_size=1)  # a ready worker always holds a chunk
    runner = threading.Thread(
        target=launch_on_ray,
        args=(parse_launch(str(problems), [*solve_args(tiny_model_dir), "--quiet"]), str(out), settings, echo, echo),
    )
    runner.start()
    deadline = time.time() + 180  # a worker starts slowly on a busy machine
    while not (killed and out.exists() and out.read_bytes().count(b"\n") >= 1) and time.time() < deadline:
        time.sleep(0.005)
    assert killed, notes
    os.kill(killed[0], signal.SIGKILL)
    assert out.read_bytes().count(b"\n") < 12  # mid-run: the file holds some records, not all
    runner.join(timeout=120)
    assert not runner.is_alive()
    assert any("died with" in n for n in notes), notes
    got = by_id(out)  # every problem exactly once
    same_records([got[r["id"]] for r in want], want)


def test_a_killed_driver_resumes(ray_cluster, solved, tiny_model_dir, tmp_path):
    problems, want = solved
    out = tmp_path / "r.jsonl"
    code = 'from tts_engine.cli import main; main(prog_name="tts")'
    argv = [sys.executable, "-P", "-c", code, "launch", str(problems), "--ray", ray_cluster, "--workers", "1"]
    argv += ["--chunk-size", "1", "--out", str(out), *solve_args(tiny_model_dir), "--quiet"]
    driver = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 180  # a worker starts slowly on a busy machine
    while not (out.exists() and out.read_bytes().count(b"\n") >= 1) and time.time() < deadline:
        assert driver.poll() is None, driver.stderr.read().decode()
        time.sleep(0.005)
    driver.kill()
    driver.wait()
    before = len(by_id(out))
    assert 1 <= before < 12
    notes = []
    launch = parse_launch(str(problems), [*solve_args(tiny_model_dir), "--quiet"])
    launch_on_ray(launch, str(out), RayConfig("auto"), notes.append)
    assert any(f"{12 - before} of 12 problems to solve" in n for n in notes), notes
    got = by_id(out)
    same_records([got[r["id"]] for r in want], want)
