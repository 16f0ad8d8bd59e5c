"""The fields every training config shares (output, optimiser, seed, threads), and the checks on them."""

from __future__ import annotations

from dataclasses import dataclass


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

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
