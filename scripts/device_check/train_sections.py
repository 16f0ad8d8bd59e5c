"""Section of the check for training: steps/s and tokens/s of the sft, recompute and tango recipes on the GPU
(scripts/bench_train.py, the same steps as its CPU run), each beside the figure the same command measured on 2 CPU
cores (docs/training.md, "Training on a GPU")."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .plan import Plan
from .recorder import Recorder

REPO = Path(__file__).resolve().parents[2]

CPU_BASELINE = {
    "sft": {"steps_per_s": 3.4736, "tokens_per_s": 9427.6},
    "recompute": {"steps_per_s": 0.2826, "tokens_per_s": 6339.7},
    "tango": {"steps_per_s": 0.6395, "tokens_per_s": 1003.5},
}
"""`python -P scripts/bench_train.py --device cpu --threads 2` on the idle 2-core CPU machine, the faster of two
runs per recipe (docs/training.md, "Steps/s: 2 CPU cores and the GPU"). The baseline of each recipe's GPU figures."""
DRY_ARGS = ("--tiny", "--steps", "1", "--warmup", "0")
"""The dry run: one step of each recipe at small batches (a smoke run of the path, not a measurement)."""


def train(rec: Recorder, plan: Plan, context: dict) -> None:
    """scripts/bench_train.py on the plan's device (bf16 autocast on CUDA), its figures beside the CPU's."""
    import torch

    from .kernel_sections import NoDeviceError

    if not plan.dry and not torch.cuda.is_available():
        raise NoDeviceError("no CUDA device visible to torch: run this on the GPU machine, or pass --dry")
    with tempfile.TemporaryDirectory(prefix="device_check_train_") as work:
        out = Path(work) / "bench_train.json"
        command = [sys.executable, "-P", str(REPO / "scripts" / "bench_train.py"), "--device", plan.device]
        command += ["--json", str(out), *(DRY_ARGS if plan.dry else ())]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=max(5.0, rec.time_left() - 5))
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", flush=True)
        if done.returncode != 0:
            raise RuntimeError(f"bench_train.py exited with {done.returncode}: {done.stderr.strip()[-500:]}")
        report = json.loads(out.read_text())
    rec.info(bench_train_wall_s=round(time.perf_counter() - started, 1), bench_machine=report["machine"])
    if plan.dry:
        rec.note("dry run: one step per recipe at small batches on the CPU; its figures are not the CPU baseline")
    for result in report["results"]:
        rec.row(op="train", **result)
        name, baseline = result["recipe"], CPU_BASELINE.get(result["recipe"], {})
        where = f"{result['device']}{', bf16 autocast' if result['amp'] else ''}"
        label = None if plan.dry else "same steps, 2 CPU cores"
        rec.figure(
            f"train: {name} steps/s on {where}",
            result["steps_per_s"],
            "steps/s",
            baseline=label,
            baseline_value=None if plan.dry else baseline.get("steps_per_s"),
            note=f"{result['config']}: {result['steps']} timed step(s) after {result['warmup_steps']} untimed",
        )
        rec.figure(
            f"train: {name} trained tokens/s on {where}",
            result["tokens_per_s"],
            "tokens/s",
            baseline=label,
            baseline_value=None if plan.dry else baseline.get("tokens_per_s"),
        )
