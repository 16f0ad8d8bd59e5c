"""Tango (arXiv 2505.15034), `tts train tango`: run (or resume) the co-training of a generator and a process verifier.

The verifier's form picks the trainer: `marks` (`trainer.TangoTrainer`, the shipped pair's) or `recompute`
(`recompute.RecomputeTangoTrainer`). Both share the config, the schedule and the roles of `trainer`,
so neither trainer module imports this one.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..loop import run_steps
from .recompute import RecomputeTangoTrainer
from .trainer import TangoConfig, TangoTrainer

TRAINERS = {"marks": TangoTrainer, "recompute": RecomputeTangoTrainer}
"""The trainer of each verifier form."""


def train_tango(config: TangoConfig, progress: bool = True, log=print, trainer_cls=None) -> Path:
    """Run (or resume) Tango and return the output directory (generator/ and verifier/ inside)."""
    trainer = (trainer_cls or TRAINERS[config.verifier_form])(config)
    trainer.out.mkdir(parents=True, exist_ok=True)
    (trainer.out / "tango_config.json").write_text(json.dumps(asdict(config), indent=2) + "\n")

    def one_step() -> tuple[dict, dict]:
        record = trainer.step()
        return record, {
            "phase": record["phase"][0],
            "reward": record.get("reward"),
            "v": record.get("verifier_bal_acc"),
        }

    total = config.total_steps
    return run_steps(
        trainer.out,
        total,
        trainer.step_count,
        one_step,
        lambda _: trainer.save(),
        config.save_every,
        "tango",
        progress,
        log,
        stop_after_s=config.stop_after_s,
        stop_at_step=config.stop_at_step,
    )
