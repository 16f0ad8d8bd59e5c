"""scripts/gpu_train.sh's transport: a run directory packed into parts of a bounded size and restored at its path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_train.sh"


def gpu_train(*args, part_bytes: int = 1000) -> str:
    env = {**os.environ, "GPU_TRAIN_PART_BYTES": str(part_bytes)}
    done = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_run_packed_into_small_parts_comes_back_whole_and_replaces_what_was_there(tmp_path):
    run = tmp_path / "runs" / "pair"
    (run / "generator").mkdir(parents=True)
    files = {"generator/model.safetensors": os.urandom(2500), "log.jsonl": b'{"step": 1}\n' * 40}
    for name, data in files.items():
        (run / name).write_bytes(data)
    parts = tmp_path / "parts"
    gpu_train("--pack", run, parts)
    chunks = sorted(parts.glob("run.tar.part*"))
    assert len(chunks) > 3 and all(c.stat().st_size <= 1000 for c in chunks)
    (run / "log.jsonl").write_text("changed after packing\n")
    (run / "stray").write_text("not in the parts")
    assert "restored" in gpu_train("--unpack", parts)
    assert {p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file()} == set(files)
    assert all((run / name).read_bytes() == data for name, data in files.items())
