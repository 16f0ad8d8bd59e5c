"""Steps/s and tokens/s of the shipped training recipes (sft, recompute, tango) on one device.

Each recipe runs from its recipe file (training/recipes/) and the checkpoint it starts from, for the same few steps
on whatever device is given: `--warmup` untimed steps (first allocations, kernel choices), then `--steps` timed
ones, each the trainer's own step and optimizer update (`training.loop.train_step`; Tango's `TangoTrainer.step`),
without the dev checks and checkpoints of a real run. The device is synchronised before the clock is read.

- sft: `sft_checker.json` (1.79 M parameters, 32 problems per step) from a fresh model;
- recompute: `recompute_levels8.yaml` (the shipped default's run: 96 reference solutions, 6 x 4 fresh samples, 8
  references and 24 planted errors checked per step) from `checkpoints/recompute_l5`;
- tango: `tango_recompute.yaml` from `checkpoints/sft_checker`: two verifier warm-up steps, then the RL schedule's
  first three generator steps and one verifier step (the timed steps; the untimed ones are warm-up steps).

tokens/s counts the tokens of the forward passes that are trained (prompt and completion, no padding) per second
of step time; the time includes the steps' sampling (fresh samples, rollouts, verifications), the count does not.
CPU s/step is the process's CPU time per timed step (every thread): on a CPU shared with other jobs it changes less
than the wall time, and on an idle machine with `--threads T` the wall time is at least CPU s / T.

    python -P scripts/bench_train.py                         # every recipe, --device auto, 2 threads
    python -P scripts/bench_train.py --device cuda --json runs/bench_train_cuda.json
    python -P scripts/bench_train.py --recipes sft --steps 5 --tiny   # seconds: small batches (the dry check)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch

REPO = Path(__file__).resolve().parents[1]
RECIPES = ("sft", "recompute", "tango")


@dataclass(frozen=True)
class Recipe:
    """One recipe as the benchmark runs it."""

    config: str
    """Its recipe file, under training/recipes/."""
    init_dir: str | None
    """The checkpoint it starts from (the file's init_dir names a run folder; this is the committed copy)."""
    warmup: int
    """Untimed steps before the timed ones (default)."""
    steps: int
    """Timed steps (default)."""
    tiny: dict = field(default_factory=dict)
    """Settings that shrink a step to well under a second on a CPU (`--tiny`: the dry check)."""


BENCH = {
    "sft": Recipe("sft_checker.json", None, 2, 20, {"batch_size": 4}),
    "recompute": Recipe(
        "recompute_levels8.yaml",
        "checkpoints/recompute_l5",
        1,
        5,
        {"gen_batch": 4, "own_problems": 1, "group_size": 2, "references": 1, "planted": 2},
    ),
    "tango": Recipe(
        "tango_recompute.yaml",
        "checkpoints/sft_checker",
        1,
        6,
        {
            "prompts_per_step": 1,
            "group_size": 2,
            "verifier_problems": 1,
            "verifier_rollouts": 2,
            "verifier_pool": 1,
            "verifier_group": 2,
        },
    ),
}
"""The recipes, the committed checkpoints they start from, and their default step counts."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", help='"auto" (CUDA when present), "cpu", "cuda" or "cuda:N"')
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (the CPU figures: 2 cores)")
    ap.add_argument("--recipes", default=",".join(RECIPES), help=f"comma-separated, of {', '.join(RECIPES)}")
    ap.add_argument("--steps", type=int, help="timed steps of every recipe (default: each recipe's own)")
    ap.add_argument("--warmup", type=int, help="untimed steps first (default: each recipe's own)")
    ap.add_argument("--no-amp", dest="amp", action="store_false", help="no bf16 autocast on CUDA")
    ap.add_argument("--tiny", action="store_true", help="small batches (a smoke run, not a measurement)")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args(argv)
    names = [r.strip() for r in args.recipes.split(",") if r.strip()]
    unknown = sorted(set(names) - set(RECIPES))
    if unknown or not names:
        ap.error(f"--recipes must name some of {', '.join(RECIPES)}, got {args.recipes!r}")
    if (args.steps is not None and args.steps < 1) or (args.warmup is not None and args.warmup < 0):
        ap.error("--steps must be >= 1 and --warmup >= 0")
    args.recipes = names
    return args


class TokenCounter:
    """Tokens of the trained forward passes of some models: forward pre-hooks that add up the attention mask of
    every call made with gradients on (sampling runs under inference mode and is not counted)."""

    def __init__(self, models):
        self.counts: list[torch.Tensor] = []
        self.handles = [m.register_forward_pre_hook(self._hook, with_kwargs=True) for m in models]

    def _hook(self, module, args, kwargs):
        if torch.is_grad_enabled():
            mask = kwargs.get("attention_mask")
            self.counts.append(mask.sum() if mask is not None else torch.tensor(kwargs["input_ids"].numel()))

    def reset(self) -> None:
        self.counts = []

    def total(self) -> int:
        return int(sum(int(c) for c in self.counts))

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def settings(name: str, args, out_dir: Path) -> dict:
    """The recipe's overrides: a scratch out_dir, the committed start, the device and threads, and (--tiny) small
    batches; the schedule is the recipe file's."""
    recipe = BENCH[name]
    given = {"out_dir": str(out_dir), "device": args.device, "amp": args.amp, "threads": args.threads}
    if recipe.init_dir:
        given["init_dir"] = str(REPO / recipe.init_dir)
    if args.tiny:
        given.update(recipe.tiny)
    return given


def bench_recipe(name: str, args, scratch: Path) -> dict:
    """Run one recipe's warm-up and timed steps; its figures."""
    from tts_engine.settings import build

    recipe = BENCH[name]
    warmup = recipe.warmup if args.warmup is None else args.warmup
    steps = recipe.steps if args.steps is None else args.steps
    config_file = REPO / "training" / "recipes" / recipe.config
    given = settings(name, args, scratch / name)
    if name == "tango":
        from tts_engine.training.tango import TRAINERS
        from tts_engine.training.tango.trainer import TangoConfig

        # warm-up steps: the untimed ones and the first two timed; then generator x3, verifier x1 (ratio 3)
        schedule = {"warmup_steps": warmup + 2, "rl_steps": max(1, steps - 2)}
        config = build(TangoConfig, given | schedule, config_file=config_file)
        trainer = TRAINERS[config.verifier_form](config)
        models, device = (trainer.gen.model, trainer.ver.model), trainer.gen.placement.device
        one_step = trainer.step
        amp = trainer.gen.placement.amp
    else:
        from tts_engine.training.loop import train_step

        if name == "sft":
            from tts_engine.training.sft import SFTConfig as Config
            from tts_engine.training.sft import sft_steps as make
        else:
            from tts_engine.training.recompute import RecomputeConfig as Config
            from tts_engine.training.recompute import recompute_steps as make
        config = build(Config, given | {"steps": warmup + steps}, config_file=config_file)
        run, step, _ = make(config)
        models, device, amp = (run.model,), run.placement.device, run.placement.amp
        one_step = lambda: train_step(run, step)  # noqa: E731
    counter = TokenCounter(models)
    phases: list[str] = []
    step_seconds: list[float] = []
    try:
        for _ in range(warmup):
            one_step()
        synchronize(device)
        counter.reset()
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(steps):
            record = one_step()
            synchronize(device)
            step_seconds.append(round(time.perf_counter() - start - sum(step_seconds), 3))
            if isinstance(record, dict):
                phases.append(record["phase"])
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    finally:
        counter.close()
    tokens = counter.total()
    return {
        "recipe": name,
        "config": f"training/recipes/{recipe.config}",
        "device": str(device),
        "amp": amp,
        "threads": args.threads,
        "tiny": args.tiny,
        "warmup_steps": warmup,
        "steps": steps,
        "phases": phases or None,
        "step_seconds": step_seconds,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu_seconds, 3),
        "steps_per_s": round(steps / seconds, 4),
        "trained_tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
    }


def machine() -> dict:
    info = {"torch": torch.__version__, "cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def format_table(rows: list[dict]) -> str:
    lines = [
        f"{'recipe':<10} {'device':<7} {'amp':<5} {'steps':>5} {'seconds':>9} {'steps/s':>9} {'tokens/s':>10} "
        f"{'CPU s/step':>10}",
    ]
    for r in rows:
        lines.append(
            f"{r['recipe']:<10} {r['device']:<7} {str(r['amp']):<5} {r['steps']:>5} {r['seconds']:>9.2f} "
            f"{r['steps_per_s']:>9.4g} {r['tokens_per_s']:>10,.0f} {r['cpu_seconds'] / r['steps']:>10.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_train_") as scratch:
        for name in args.recipes:
            rows.append(bench_recipe(name, args, Path(scratch)))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(format_table(rows))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
