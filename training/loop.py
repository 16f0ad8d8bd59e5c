"""The one training loop: resume from out_dir, AdamW, warm-up + cosine schedule, one log line per step, checkpoints.

A trainer gives `train` a function that computes one step's loss (and the figures it logs) and a function of dev
checks; the loop does the rest the same way for every trainer. The log format is what `scripts/log_summary.py`
and the run logs in docs/runs read: one JSON object per step in out_dir/log.jsonl, `{"step", <the trainer's
figures>, "lr", "elapsed_s"}` plus the dev checks at checkpoint steps, which are also echoed to `log`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import torch

from tts_engine.inputs.prompts import PromptConfig

from . import checkpoint as ckpt
from .config import LoopConfig
from .device import CPU, Placement

StepFn = Callable[[], tuple[torch.Tensor, dict, dict]]
"""One step's loss, the figures it logs, and what the progress bar shows."""
Steps = tuple["Run", StepFn, Callable[[], dict]]
"""What a trainer hands `train`: its run (started or resumed), its step, and its dev checks."""


@dataclass
class Run:
    """The model under training, its optimizer and schedule, and how far the run got."""

    config: LoopConfig
    model: Any
    tokenizer: Any
    prompt_config: PromptConfig
    optimizer: torch.optim.Optimizer
    scheduler: Any
    step: int = 0
    extra: dict = field(default_factory=dict)
    """What the last checkpoint stored beside the step (its elapsed seconds)."""
    placement: Placement = CPU
    """The device the model, its batches and its sampler are on, and whether its supervised losses autocast."""

    @property
    def out(self) -> Path:
        return Path(self.config.out_dir)


def start_run(config: LoopConfig, fresh: Callable[[], tuple]) -> Run:
    """The run in config.out_dir where one was saved (model, optimizer, schedule, step, RNG), else a new one from
    `fresh()` -> (model, tokenizer, prompt config); the model on config.device (resolved first: a device that is
    not there fails before anything is loaded)."""
    torch.set_num_threads(config.threads)
    placement = Placement.of(config)
    out = Path(config.out_dir)
    resume = ckpt.has_state(out)
    model, tokenizer, prompt_config = ckpt.load_model(out) if resume else fresh()
    model = placement.place(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = ckpt.cosine_schedule(optimizer, config.steps, config.warmup_steps)
    step, extra = ckpt.load_state(out, optimizer, scheduler) if resume else (0, {})
    return Run(config, model, tokenizer, prompt_config, optimizer, scheduler, step, extra, placement)


def optimizer_step(model, optimizer, scheduler, loss: torch.Tensor | Iterable[torch.Tensor], grad_clip: float) -> float:
    """Backward, clip the gradient norm, step the optimizer and the schedule: every trainer's update. `loss` is one
    tensor, or parts that sum to it (each backpropagated before the next is taken, the gradients accumulating).
    Returns the loss's value."""
    optimizer.zero_grad()
    total = 0.0
    for part in [loss] if isinstance(loss, torch.Tensor) else loss:
        part.backward()
        total += part.item()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    scheduler.step()
    return total


def train_step(run: Run, step: StepFn) -> tuple[dict, dict]:
    """One step of a run and its optimizer update (what `train` repeats, and what scripts/bench_train.py times):
    the step's figures and its progress bar postfix."""
    loss, figures, postfix = step()
    optimizer_step(run.model, run.optimizer, run.scheduler, loss, run.config.grad_clip)
    run.step += 1
    return figures, postfix


def train(run: Run, step: StepFn, dev_checks: Callable[[], dict], *, desc: str, progress: bool, log) -> Path:
    """Run `step` and an optimizer update until config.steps; every eval_every steps (and at the end) add the dev
    checks to the log record, save model and state, and echo the record. Returns out_dir."""
    c, start = run.config, ckpt.resumed_clock(run.extra)

    def one_step() -> tuple[dict, dict]:
        figures, postfix = train_step(run, step)
        lr = run.scheduler.get_last_lr()[0]
        return {"step": run.step, **figures, "lr": lr, "elapsed_s": round(time.time() - start, 1)}, postfix

    def checkpoint(record: dict) -> None:
        record.update(dev_checks())
        ckpt.save_model(run.out, run.model, run.tokenizer, run.prompt_config, c)
        ckpt.save_state(run.out, run.optimizer, run.scheduler, run.step, {"elapsed_s": record["elapsed_s"]})

    return run_steps(
        *(run.out, c.steps, run.step, one_step, checkpoint, c.eval_every, desc, progress, log),
        stop_after_s=c.stop_after_s,
        stop_at_step=c.stop_at_step,
    )


def drop_records_after(log_path: Path, step: int) -> None:
    """Drop the log records of steps after `step`, the resumed checkpoint's: a run killed between checkpoints
    logged steps that resuming does again, and each step is logged once (a line cut short by the kill goes too)."""
    if not log_path.is_file():
        return

    def keep(line: str) -> bool:
        try:
            return json.loads(line).get("step", 0) <= step
        except json.JSONDecodeError:
            return False

    lines = log_path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if keep(line)]
    if len(kept) < len(lines):
        log_path.write_text("".join(kept))


def run_steps(
    out: Path,
    total: int,
    done: int,
    one_step,
    checkpoint,
    every: int,
    desc: str,
    progress: bool,
    log,
    *,
    stop_after_s: float = 0.0,
    stop_at_step: int = 0,
):
    """The outer loop of every trainer (Tango's two-model schedule too): `one_step()` -> (log record, progress bar
    postfix) until `total` steps; at every `every`-th step and the last, `checkpoint(record)` then echo the record;
    every record is appended to out/log.jsonl. With `stop_after_s` > 0, the first step that ends that many seconds
    after the start is checkpointed and the loop stops there (rerunning resumes). With `stop_at_step` > 0 the loop
    ends, checkpointed, at that step of the `total` its schedule runs over. Returns out."""
    from tqdm import tqdm

    out.mkdir(parents=True, exist_ok=True)
    drop_records_after(out / "log.jsonl", done)
    started = time.monotonic()
    bar = tqdm(total=total, initial=done, disable=not progress, desc=desc, dynamic_ncols=True)
    until = min(total, stop_at_step) if stop_at_step > 0 else total
    while done < until:
        record, postfix = one_step()
        done += 1
        bar.update(1)
        bar.set_postfix(postfix)
        out_of_time = stop_after_s > 0 and time.monotonic() - started >= stop_after_s
        if done % every == 0 or done == until or out_of_time:
            checkpoint(record)
            log(json.dumps(record))
        with (out / "log.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")
        if out_of_time and done < until:
            log(
                f"stopped at step {done} of {total} after {time.monotonic() - started:.0f} s (stop_after_s); rerun to resume"
            )
            break
    bar.close()
    if done == until < total:
        log(f"stopped at step {done} of {total} (stop_at_step); raise stop_at_step, or set it to 0, and rerun to go on")
    return out
