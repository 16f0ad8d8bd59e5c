"""Data parallelism: split a problem set into K shards, run one worker per shard, merge their results.

Shard I of K holds problems I, I+K, I+2K, ... (round robin), so shards get the same mix of easy and hard
problems when a set is sorted by difficulty. Each worker is a plain `tts solve --shard I/K --out OUT.shardI.jsonl`
process (resumable like any run); `merge_results` joins the shard files in problem order.
"""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import orjson

from ..interpreter import PYTHON
from ..running.results import read_results

log = logging.getLogger(__name__)

TTS_COMMAND = (*PYTHON, "-c", 'from tts_engine.cli import main; main(prog_name="tts")')
"""How a worker runs `tts`: the same Python as the launcher, so the same installation."""


def parse_shard(shard: str) -> tuple[int, int]:
    """ "I/K" as (I, K), with 0 <= I < K."""
    parts = str(shard).split("/")
    try:
        index, count = (int(p) for p in parts)
    except ValueError:
        raise ValueError(f"shard must look like I/K with integers (e.g. 0/4), got {shard!r}") from None
    if count < 1:
        raise ValueError(f"shard count K must be >= 1, got {shard!r}")
    if not 0 <= index < count:
        raise ValueError(f"shard index I must be in [0, {count - 1}] (0-based), got {shard!r}")
    return index, count


def shard_problems(problems: Sequence[Any], shard: str) -> list:
    """The problems of shard "I/K": every K-th problem starting at I."""
    index, count = parse_shard(shard)
    return list(problems[index::count])


def shard_path(out: str | Path, index: int) -> Path:
    """Results file of shard `index`: OUT.shardI.jsonl beside OUT."""
    out = Path(out)
    return out.with_name(f"{out.stem}.shard{index}{out.suffix or '.jsonl'}")


# --- merging ---------------------------------------------------------------------------------------------
@dataclass
class MergeReport:
    """What a merge wrote and what was wrong with its inputs."""

    written: int = 0
    """Records in the merged file."""
    missing: list[str] = field(default_factory=list)
    """Ids of `problem_order` that no shard file holds (a worker failed or has not finished)."""
    duplicated: list[str] = field(default_factory=list)
    """Ids found more than once (the first copy is kept)."""
    unexpected: list[str] = field(default_factory=list)
    """Ids not in `problem_order` (kept, after the ordered ones)."""

    @property
    def complete(self) -> bool:
        return not self.missing

    def describe(self) -> str:
        parts = [f"{self.written} problems merged"]
        for name in ("missing", "duplicated", "unexpected"):
            ids = getattr(self, name)
            if ids:
                shown = ", ".join(ids[:10]) + (f", ... ({len(ids)} in all)" if len(ids) > 10 else "")
                parts.append(f"{len(ids)} {name}: {shown}")
        return "; ".join(parts)


def merge_results(
    paths: Sequence[str | Path], out: str | Path, problem_order: Sequence[str] | None = None
) -> MergeReport:
    """Merge shard results files into `out`, in `problem_order` (ids) if given, else in file order.

    Records are deduplicated by id (first kept). The file is written whole to a temporary name, then renamed,
    so `out` is never half written.
    """
    records: dict[str, dict] = {}
    report = MergeReport()
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"shard results file {str(path)!r} does not exist")
        for record in read_results(path):
            key = str(record["id"])
            if key in records:
                report.duplicated.append(key)
            else:
                records[key] = record
    if problem_order is None:
        ordered = list(records)
    else:
        order = [str(i) for i in problem_order]
        known = set(order)
        ordered = [i for i in order if i in records]
        report.missing = [i for i in order if i not in records]
        report.unexpected = [i for i in records if i not in known]
        ordered += report.unexpected
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as f:
        for key in ordered:
            f.write(orjson.dumps(records[key], option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    tmp.replace(out)
    report.written = len(ordered)
    return report


# --- launching workers -----------------------------------------------------------------------------------
@dataclass
class Worker:
    """One `tts solve` process of a data-parallel run."""

    shard: str
    """"I/K" of this worker."""
    argv: list[str]
    """Command line."""
    env: dict[str, str]
    """Environment variables set on top of the launcher's."""
    out: Path
    """Its results file."""
    log: Path
    """Its stdout + stderr."""


def build_workers(
    problems: str | Path,
    out: str | Path,
    solve_args: Sequence[str],
    *,
    gpu_groups: Sequence[str] | None = None,
    workers: int | None = None,
    node_rank: int = 0,
    num_nodes: int = 1,
    cpu_count: int | None = None,
) -> list[Worker]:
    """The worker commands of one node: one per GPU group (CUDA_VISIBLE_DEVICES) or `workers` CPU processes.

    With `num_nodes` M, node R runs global shards R*W ... R*W + W - 1 of M*W (W workers per node).
    """
    if (gpu_groups is None) == (workers is None):
        raise ValueError("give either GPU groups (--gpus) or a number of CPU workers (--workers), not both")
    if num_nodes < 1 or not 0 <= node_rank < num_nodes:
        raise ValueError(f"node_rank must be in [0, {num_nodes - 1}] for num_nodes={num_nodes}, got {node_rank}")
    for flag in ("--shard", "--out"):
        if any(a == flag or a.startswith(flag + "=") for a in solve_args):
            raise ValueError(f"{flag} is set by the launcher for each worker; remove it from the solve options")
    per_node = len(gpu_groups) if gpu_groups is not None else workers
    if per_node < 1:
        raise ValueError(f"a node needs at least one worker, got {per_node}")
    total = per_node * num_nodes
    threads = max(1, (cpu_count or os.cpu_count() or 1) // per_node)
    result = []
    for local in range(per_node):
        index = node_rank * per_node + local
        shard_out = shard_path(out, index)
        if gpu_groups is not None:
            env = {"CUDA_VISIBLE_DEVICES": gpu_groups[local]}
        else:
            env = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads))}
        argv = [
            *TTS_COMMAND,
            "solve",
            str(problems),
            *solve_args,
            "--shard",
            f"{index}/{total}",
            "--out",
            str(shard_out),
            "--quiet",
        ]
        result.append(Worker(f"{index}/{total}", argv, env, shard_out, shard_out.with_suffix(".log")))
    return result


def gpu_groups(gpus: str, gpus_per_worker: int = 1) -> list[str]:
    """ "0,1,2,3" with 2 GPUs per worker -> ["0,1", "2,3"] (a worker's CUDA_VISIBLE_DEVICES)."""
    ids = [g.strip() for g in gpus.split(",") if g.strip()]
    if not ids:
        raise ValueError(f"gpus must list device ids like 0,1,2, got {gpus!r}")
    if gpus_per_worker < 1 or len(ids) % gpus_per_worker:
        raise ValueError(f"gpus_per_worker must be >= 1 and divide the {len(ids)} GPUs, got {gpus_per_worker}")
    return [",".join(ids[i : i + gpus_per_worker]) for i in range(0, len(ids), gpus_per_worker)]


def run_workers(workers: Sequence[Worker]) -> list[int]:
    """Start every worker, wait for all, return their exit codes (logs in each worker's `log`)."""
    procs = []
    for w in workers:
        w.log.parent.mkdir(parents=True, exist_ok=True)
        log_file = w.log.open("wb")
        procs.append(
            (subprocess.Popen(w.argv, env={**os.environ, **w.env}, stdout=log_file, stderr=subprocess.STDOUT), log_file)
        )
        log.info("started shard %s (pid %d): %s", w.shard, procs[-1][0].pid, w.log)
    codes = []
    try:
        for proc, log_file in procs:
            codes.append(proc.wait())
            log_file.close()
    except KeyboardInterrupt:
        for proc, _ in procs:
            proc.terminate()
        raise
    return codes


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a worker's log."""
    if not path.is_file():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
