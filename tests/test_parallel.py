"""Sharding, merging, and launching data-parallel `tts solve` workers."""

from __future__ import annotations

import json

import orjson
import pytest
from click.testing import CliRunner

from tts_engine.cli.parallel import launch, merge
from tts_engine.launch.shards import (
    build_workers,
    gpu_groups,
    merge_results,
    parse_shard,
    shard_path,
    shard_problems,
)
from tts_engine.running.results import read_results


@pytest.mark.parametrize(
    "shard, message",
    [
        ("1/0", "K must be >= 1"),
        ("2/2", r"I must be in \[0, 1\]"),
        ("-1/2", r"I must be in"),
        ("a/2", "must look like I/K"),
        ("1", "must look like I/K"),
        ("1/2/3", "must look like I/K"),
    ],
)
def test_bad_shards_are_named(shard, message):
    with pytest.raises(ValueError, match=message):
        parse_shard(shard)


@pytest.mark.parametrize("count", [1, 3, 7, 12])
def test_shards_partition_the_problems(count):
    problems = list(range(10))
    shards = [shard_problems(problems, f"{i}/{count}") for i in range(count)]
    assert sorted(x for s in shards for x in s) == problems
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards[0][:2] == ([0, count] if count < 10 else [0])


def write_shard(path, ids, tag="a", torn=False):
    lines = [orjson.dumps({"id": i, "tag": tag, "samples": []}) for i in ids]
    data = b"\n".join(lines) + b"\n"
    if torn:
        data += b'{"id": "x'
    path.write_bytes(data)
    return path


def test_merge_restores_problem_order_and_reports(tmp_path):
    a = write_shard(tmp_path / "r.shard0.jsonl", ["p0", "p2", "p4"])
    b = write_shard(tmp_path / "r.shard1.jsonl", ["p1", "p3", "p0", "zz"], tag="b", torn=True)
    report = merge_results([a, b], tmp_path / "r.jsonl", problem_order=[f"p{i}" for i in range(7)])
    merged = list(read_results(tmp_path / "r.jsonl"))
    assert [r["id"] for r in merged] == ["p0", "p1", "p2", "p3", "p4", "zz"]
    assert merged[0]["tag"] == "a"  # first copy kept
    assert report.missing == ["p5", "p6"] and report.duplicated == ["p0"] and report.unexpected == ["zz"]
    assert report.written == 6 and not report.complete
    assert "2 missing: p5, p6" in report.describe()
    assert not (tmp_path / "r.jsonl.tmp").exists()


def test_merge_without_order_keeps_file_order(tmp_path):
    a = write_shard(tmp_path / "a.jsonl", ["b", "a"])
    report = merge_results([a], tmp_path / "out" / "m.jsonl")
    assert [r["id"] for r in read_results(tmp_path / "out" / "m.jsonl")] == ["b", "a"] and report.complete


def test_merge_names_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        merge_results([tmp_path / "nope.jsonl"], tmp_path / "m.jsonl")


def test_merge_command_fails_on_missing_problems(tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_text("".join(json.dumps({"id": f"p{i}", "problem": "1+1"}) + "\n" for i in range(3)))
    a = write_shard(tmp_path / "r.shard0.jsonl", ["p2", "p0"])
    result = CliRunner().invoke(merge, [str(a), "--out", str(tmp_path / "r.jsonl"), "--problems", str(problems)])
    assert result.exit_code == 1 and "1 problems have no results yet" in result.output
    assert [r["id"] for r in read_results(tmp_path / "r.jsonl")] == ["p0", "p2"]


def test_gpu_workers_get_their_devices_and_global_shards(tmp_path):
    out = tmp_path / "r.jsonl"
    plan = build_workers(
        "probs.jsonl", out, ["--n", "64", "--backend", "vllm"], gpu_groups=["0,1", "2,3"], node_rank=1, num_nodes=3
    )
    assert [w.shard for w in plan] == ["2/6", "3/6"]
    assert [w.env for w in plan] == [{"CUDA_VISIBLE_DEVICES": "0,1"}, {"CUDA_VISIBLE_DEVICES": "2,3"}]
    argv = plan[0].argv
    assert argv[argv.index("solve") + 1 :] == [
        "probs.jsonl",
        "--n",
        "64",
        "--backend",
        "vllm",
        "--shard",
        "2/6",
        "--out",
        str(tmp_path / "r.shard2.jsonl"),
        "--quiet",
    ]
    assert plan[1].out == shard_path(out, 3) and plan[1].log == tmp_path / "r.shard3.log"


def test_cpu_workers_split_the_cores(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    plan = build_workers("p.jsonl", tmp_path / "r.jsonl", [], workers=2, cpu_count=8)
    assert [w.shard for w in plan] == ["0/2", "1/2"] and plan[0].env == {"OMP_NUM_THREADS": "4"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "either GPU groups"),
        ({"workers": 2, "gpu_groups": ["0"]}, "either GPU groups"),
        ({"workers": 0}, "at least one worker"),
        ({"workers": 1, "node_rank": 2, "num_nodes": 2}, "node_rank"),
    ],
)
def test_bad_launch_plans_are_named(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_workers("p.jsonl", tmp_path / "r.jsonl", [], **kwargs)


def test_launcher_owns_shard_and_out(tmp_path):
    with pytest.raises(ValueError, match="--out is set by the launcher"):
        build_workers("p.jsonl", tmp_path / "r.jsonl", ["--out=x"], workers=1)


def test_gpu_groups():
    assert gpu_groups("0,1,2,3") == ["0", "1", "2", "3"]
    assert gpu_groups("0,1,2,3", 2) == ["0,1", "2,3"]
    with pytest.raises(ValueError, match="divide the 3 GPUs"):
        gpu_groups("0,1,2", 2)
    with pytest.raises(ValueError, match="device ids"):
        gpu_groups(" , ")


@pytest.mark.slow
def test_two_local_workers_match_one_process(tmp_path, tiny_model_dir):
    problems = tmp_path / "p.jsonl"
    problems.write_text(
        "".join(json.dumps({"id": f"q{i}", "problem": f"{i}+{i}=", "answer": str(2 * i)}) + "\n" for i in range(5))
    )
    solve = ["--model", tiny_model_dir, "--n", "2", "--max-new-tokens", "6", "--seed", "3"]
    out = tmp_path / "r.jsonl"
    result = CliRunner().invoke(launch, [str(problems), "--workers", "2", "--out", str(out), *solve])
    assert result.exit_code == 0, result.output + "".join(
        (tmp_path / f"r.shard{i}.log").read_text() for i in range(2) if (tmp_path / f"r.shard{i}.log").exists()
    )
    merged = list(read_results(out))
    assert [r["id"] for r in merged] == [f"q{i}" for i in range(5)]
    assert [r["id"] for r in read_results(tmp_path / "r.shard1.jsonl")] == ["q1", "q3"]

    from tts_engine.cli import main

    single = tmp_path / "single.jsonl"
    result = CliRunner().invoke(main, ["solve", str(problems), *solve, "--out", str(single), "--quiet"])
    assert result.exit_code == 0, result.output
    for sharded, whole in zip(merged, read_results(single), strict=True):
        assert [s["text"] for s in sharded["samples"]] == [s["text"] for s in whole["samples"]]
        assert sharded["aggregations"]["majority"]["answer"] == whole["aggregations"]["majority"]["answer"]
