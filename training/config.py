"""The fields training configs share, each declared once with its docstring; a trainer's config extends these.

- `TrainConfig`: every trainer (output, optimiser rate, seed, threads, device, the problem mix);
- `LoopConfig`: the trainers run by `training.loop` (steps, schedule, clipping, dev checks and checkpoints);
- `SampleConfig`: the trainers that start from a checkpoint and train on its own samples;
- `SelfCheckConfig`: generation SFT plus a check of the model's own solutions (`joint`, `recompute`).

A trainer sets its own defaults by naming a field again with a new default, never a new docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .device import check_device


@dataclass
class TrainConfig:
    """Common training settings; each trainer's config adds its own fields and its own defaults."""

    out_dir: str = "runs/train"
    """Where checkpoints (HF format + training state) and log.jsonl are written; an existing run is resumed."""
    lr: float = 3e-4
    """Peak learning rate (AdamW)."""
    seed: int = 0
    """Seed of the problem stream and of the sampler."""
    threads: int = 1
    """torch CPU threads."""
    device: str = "auto"
    """Where the model trains and samples: "auto" (CUDA when torch sees a CUDA device, else the CPU), "cpu", "cuda"
    or "cuda:N"."""
    amp: bool = True
    """bf16 autocast of the supervised losses' forward passes on CUDA (weights, optimizer state and the loss stay
    float32); no effect on the CPU."""
    levels: str = "1-5"
    """Levels of the task the problem stream and the dev checks draw from, e.g. "1-8"."""
    level_weights: list[float] = field(default_factory=list)
    """Sampling weight of each of `levels`, in order (empty: all alike)."""
    stop_after_s: float = 0.0
    """Stop, with a checkpoint, after the first step that ends this many seconds after the start (0: no limit);
    rerun the same command to go on (how a run fits calls of bounded length on a lent GPU machine)."""
    stop_at_step: int = 0
    """Stop, with a checkpoint, at this step of the `steps` the schedule runs over (0: run them all): a shipped
    checkpoint taken before a schedule's end is reproduced by one command; raise it (or set 0) and rerun to go on."""

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if self.stop_after_s < 0:
            raise ValueError(f"stop_after_s must be >= 0 (0: no limit), got {self.stop_after_s}")
        if self.stop_at_step < 0:
            raise ValueError(f"stop_at_step must be >= 0 (0: run every step), got {self.stop_at_step}")
        check_device(self.device)
        count = len(self.level_tuple)
        if self.level_weights and len(self.level_weights) != count:
            raise ValueError(
                f"level_weights needs one weight per level ({count} for {self.levels}), got {self.level_weights}"
            )

    @property
    def level_tuple(self) -> tuple[int, ...]:
        """`levels` parsed: (1, 2, 3, 4, 5) for "1-5"."""
        from tts_engine.tasks.arith.generator import parse_levels

        return parse_levels(str(self.levels))


@dataclass
class LoopConfig(TrainConfig):
    """Settings of the shared training loop (`training.loop.train`)."""

    steps: int = 1000
    """Optimizer steps."""
    warmup_steps: int = 20
    """Linear warm-up before the cosine decay."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip."""
    eval_every: int = 100
    """Steps between dev checks (and checkpoints)."""
    dev_per_level: int = 8
    """Dev problems per level in the periodic checks."""


@dataclass
class SampleConfig(TrainConfig):
    """Settings of a trainer that starts from a checkpoint and trains on the model's own samples."""

    init_dir: str = "runs/sft"
    """The checkpoint to start from (used only when out_dir holds no run yet)."""
    group_size: int = 4
    """Samples per problem (temperature 1)."""
    max_new_tokens: int = 128
    """Token budget of a sample."""


@dataclass
class SelfCheckConfig(LoopConfig, SampleConfig):
    """Generation SFT on reference solutions plus a check of solutions, trained together on one model."""

    gen_batch: int = 32
    """Reference solutions per step (generation loss); 0 trains the check alone."""
    own_problems: int = 6
    """Problems per step whose fresh samples are checked (`group_size` samples each)."""
    planted: int = 16
    """Solutions with one planted error per step that are checked."""
    verify_weight: float = 1.0
    """lambda: weight of the check loss beside the generation loss."""
