"""RL^V for a fixed wall-clock budget through TRL (training/trl.py) and through the CPU trainer (training/rlv.py).

Both start from the same checkpoint, draw training problems from the same stream (seed, bundled set excluded),
use GRPO advantages, lambda = 1, G = 8, the same problems per step, learning rate, clip range and rollout length,
and log reward and the verifier's balanced accuracy on each step's rollouts (before the update) with the elapsed
time. Run the two side by side, one thread each, then plot:

    OMP_NUM_THREADS=1 python scripts/trl_vs_cpu.py run --trainer cpu --budget 600 --out runs/cmp &
    OMP_NUM_THREADS=1 python scripts/trl_vs_cpu.py run --trainer trl --budget 600 --out runs/cmp &
    wait; python scripts/trl_vs_cpu.py plot --out runs/cmp --figure docs/figures/trl_vs_cpu.png
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

PROMPTS_PER_STEP = 8
GROUP_SIZE = 8
LR = 3e-4
MAX_NEW_TOKENS = 96
MAX_STEPS = 400
SEED = 2


def default_init() -> str:
    from tts_engine.training.checkpoint import default_model_path

    return str(default_model_path())


def run_cpu(init: str, out: Path, budget: float) -> None:
    from tts_engine.training.rlv import RLVConfig, RLVTrainer

    config = RLVConfig(
        init_dir=init,
        out_dir=str(out / "cpu_run"),
        algorithm="grpo",
        verify_weight=1.0,
        steps=MAX_STEPS,
        prompts_per_step=PROMPTS_PER_STEP,
        group_size=GROUP_SIZE,
        lr=LR,
        warmup_steps=0,
        max_new_tokens=MAX_NEW_TOKENS,
        seed=SEED,
        threads=1,
    )
    trainer = RLVTrainer(config)
    start = time.time()
    with (out / "log_cpu.jsonl").open("w") as f:
        while time.time() - start < budget:
            record = trainer.step()
            f.write(
                json.dumps(
                    {
                        "step": record["step"],
                        "elapsed_s": round(time.time() - start, 1),
                        "reward": record["reward"],
                        "verify_bal_acc": record["verify_bal_acc"],
                        "verify_loss": record["verify_loss"],
                    }
                )
                + "\n"
            )
            f.flush()


def run_trl(init: str, out: Path, budget: float) -> None:
    from datasets import Dataset
    from transformers import TrainerCallback

    from tts_engine.training.checkpoint import load_model
    from tts_engine.training.reward_functions import answer_reward
    from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts
    from tts_engine.training.trl import RLVGRPOConfig, RLVGRPOTrainer, rlv_dataset_rows

    torch.set_num_threads(1)
    model, tokenizer, prompt_config = load_model(init)
    stream = ProblemStream(SEED, level_weights=[1.0] * 5, exclude=held_out_texts())
    problems = [{"problem": p.problem, "answer": p.answer} for p in stream.batch(PROMPTS_PER_STEP * MAX_STEPS)]
    data = Dataset.from_list(rlv_dataset_rows(problems, tokenizer, prompt_config))
    args = RLVGRPOConfig(
        output_dir=str(out / "trl_run"),
        verify_weight=1.0,
        loss_type="grpo",
        beta=0.0,
        scale_rewards="group",
        num_generations=GROUP_SIZE,
        per_device_train_batch_size=PROMPTS_PER_STEP * GROUP_SIZE,
        gradient_accumulation_steps=1,
        max_completion_length=MAX_NEW_TOKENS,
        temperature=1.0,
        top_p=1.0,
        learning_rate=LR,
        lr_scheduler_type="cosine",
        warmup_steps=0,
        max_grad_norm=1.0,
        weight_decay=0.0,
        adam_beta2=0.999,
        max_steps=MAX_STEPS,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        bf16=False,
        use_cpu=True,
        seed=SEED,
        shuffle_dataset=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    log_path = out / "log_trl.jsonl"
    start = time.time()

    class Budget(TrainerCallback):
        def on_log(self, _args, state, control, logs=None, **kwargs):
            if logs and "reward" in logs:
                acc = logs.get("verify/balanced_accuracy")
                with log_path.open("a") as f:
                    f.write(
                        json.dumps(
                            {
                                "step": state.global_step,
                                "elapsed_s": round(time.time() - start, 1),
                                "reward": logs["reward"],
                                "verify_bal_acc": None if acc is None or math.isnan(acc) else acc,
                                "verify_loss": logs.get("verify/loss"),
                            }
                        )
                        + "\n"
                    )

        def on_step_end(self, _args, state, control, **kwargs):
            if time.time() - start >= budget:
                control.should_training_stop = True

    log_path.write_text("")
    trainer = RLVGRPOTrainer(
        model=model,
        reward_funcs=answer_reward("rule"),
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
        prompt_config=prompt_config,
        callbacks=[Budget()],
    )
    trainer.train()


def rolling(values: list[float | None], window: int) -> list[float]:
    """Mean of the last `window` present values at each point (None values skipped)."""
    out, seen = [], []
    for v in values:
        if v is not None:
            seen.append(v)
        recent = seen[-window:]
        out.append(sum(recent) / len(recent) if recent else float("nan"))
    return out


def plot(out: Path, figure: Path, window: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("reward", "verify_loss", "verify_bal_acc")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for name, label in (
        ("cpu", "tts train rlv (training/rlv.py)"),
        ("trl", "TRL GRPOTrainer + RL^V (training/trl.py)"),
    ):
        rows = [json.loads(line) for line in (out / f"log_{name}.jsonl").read_text().splitlines() if line.strip()]
        minutes = [r["elapsed_s"] / 60 for r in rows]
        for ax, key in zip(axes, keys):
            ax.plot(minutes, rolling([r[key] for r in rows], window), label=f"{label}, {len(rows)} steps")
        first, last = rows[:window], rows[-window:]
        for key in keys:
            a = [r[key] for r in first if r[key] is not None]
            b = [r[key] for r in last if r[key] is not None]
            print(
                f"{name}: {key} first {window} steps {sum(a) / max(1, len(a)):.3f} -> "
                f"last {window} steps {sum(b) / max(1, len(b)):.3f} ({len(rows)} steps)"
            )
    axes[0].set_title(f"rollout reward (pass@1), rolling mean of {window} steps")
    axes[1].set_title(f"verification loss (class-balanced nats), rolling {window}")
    axes[2].set_title(f"verifier balanced accuracy on the step's rollouts, rolling {window}")
    for ax in axes:
        ax.set_xlabel("wall-clock minutes (1 CPU thread each, side by side)")
        ax.grid(alpha=0.3)
    axes[2].axhline(0.5, color="grey", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=110)
    print(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train one way for a wall-clock budget")
    run.add_argument("--trainer", choices=["cpu", "trl"], required=True)
    run.add_argument("--init", default=None, help="starting checkpoint [the shipped default model]")
    run.add_argument("--budget", type=float, default=600.0, help="seconds")
    run.add_argument("--out", default="runs/trl_vs_cpu")
    pl = sub.add_parser("plot", help="plot both logs on one figure")
    pl.add_argument("--out", default="runs/trl_vs_cpu")
    pl.add_argument("--figure", default="docs/figures/trl_vs_cpu.png")
    pl.add_argument("--window", type=int, default=10)
    a = parser.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.command == "run":
        (run_cpu if a.trainer == "cpu" else run_trl)(a.init or default_init(), out, a.budget)
    else:
        plot(out, Path(a.figure), a.window)


if __name__ == "__main__":
    main()
