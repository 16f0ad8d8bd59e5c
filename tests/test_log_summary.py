"""scripts/log_summary.py: wall time per phase and quarter means from a training log, a resumed step counted once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "log_summary.py"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_a_repeated_step_counts_once_and_quarters_are_means(tmp_path):
    records = [{"step": k, "phase": "warmup", "step_s": 60.0, "loss": float(k)} for k in range(1, 9)]
    records.insert(2, {"step": 3, "phase": "warmup", "step_s": 600.0, "loss": 99.0})  # cut, then run again on resume
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = run(log, "--key", "loss").stdout
    assert "warmup          8 steps      8.0 min" in out  # step 3's rerun, not its first record
    assert "quarter means 1.500 3.500 5.500 7.500" in out
    out = run(log, "--steps", "5:8").stdout
    assert "warmup          4 steps      4.0 min" in out


def test_a_malformed_line_names_its_file_and_line(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 1, "step_s": 1.0}\n{not json\n')
    result = run(log)
    assert result.returncode != 0 and f"{log}:2: not a JSON record" in result.stderr
