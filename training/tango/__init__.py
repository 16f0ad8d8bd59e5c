"""Tango (arXiv 2505.15034): a generator and a process-level generative verifier, co-trained by RL.

- `rewards`: the schedule and reward arithmetic, as pure functions;
- `trainer`: `TangoConfig`, `Role` and `TangoTrainer` (the `marks` verifier form), shared by both forms;
- `recompute`: `RecomputeTangoTrainer` (the `recompute` verifier form);
- `run`: `train_tango` (`tts train tango`), which picks the trainer of the verifier form.
"""

from .recompute import RecomputeTangoTrainer
from .run import TRAINERS, train_tango
from .trainer import TangoConfig, TangoTrainer

__all__ = ["TRAINERS", "RecomputeTangoTrainer", "TangoConfig", "TangoTrainer", "train_tango"]
