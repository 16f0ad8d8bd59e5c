"""Where a trainer computes: the `device` setting resolved, and bf16 autocast of its supervised forward passes.

Every trainer keeps its weights, optimizer state and losses in float32 on the resolved device and samples through
the engine's hf backend on that same device. On CUDA (`amp`, on by default) the forward passes of the supervised
losses (next-token SFT, the written checks, the verifier's warm-up) run under bf16 autocast; the policy-gradient
losses stay in float32, because their ratio compares new log-probabilities with the float32 ones the sampler
computed. On the CPU nothing changes: no autocast, and every tensor stays where it was.

Checkpoints hold CPU tensors wherever the run computed (`checkpoint.save_state`), so a run saved on a GPU resumes
on a CPU and the other way round. Nothing in training draws from the CUDA generator (the backend's sampling noise
comes from each row's seed), so the saved CPU RNG state is all the randomness a resumed run needs.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import torch

DEVICE_FORMS = '"auto", "cpu", "cuda" or "cuda:N"'
"""The values the `device` setting takes, as messages name them."""


def check_device(name: str) -> str:
    """`name` if it is one of DEVICE_FORMS, else a ValueError that names the setting (no device is probed)."""
    if isinstance(name, str) and (name in ("auto", "cpu", "cuda") or re.fullmatch(r"cuda:\d+", name)):
        return name
    raise ValueError(f"device must be {DEVICE_FORMS}, got {name!r}")


def resolve_device(name: str) -> torch.device:
    """The torch device of a `device` setting: "auto" is CUDA when torch sees a CUDA device, else the CPU; a CUDA
    device that is not there is a ValueError that says what to use instead."""
    check_device(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {name!r}: torch {torch.__version__} sees no CUDA device here; use --device=auto or --device=cpu"
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise ValueError(f"device {name!r}: torch sees {count} CUDA device(s) (cuda:0 to cuda:{count - 1})")
    return device


@dataclass(frozen=True)
class Placement:
    """Where a run computes, and whether its supervised forward passes autocast to bf16."""

    device: torch.device
    """The resolved device of the model, its batches and its sampler."""
    amp: bool
    """bf16 autocast is on: `amp` asked for, on a CUDA device that supports bf16."""

    @classmethod
    def of(cls, config) -> Placement:
        """The placement of a training config's `device` and `amp` settings."""
        device = resolve_device(config.device)
        return cls(device, bool(config.amp) and device.type == "cuda" and torch.cuda.is_bf16_supported())

    @property
    def name(self) -> str:
        """The device as the hf backend takes it ("cpu", "cuda:0")."""
        return str(self.device)

    def autocast(self):
        """bf16 autocast of the forward passes inside (weights and the loss stay float32), or nothing."""
        if not self.amp:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    def place(self, model):
        """`model` moved to the device (in place, as `nn.Module.to`), before an optimizer is made over it."""
        return model.to(self.device)


CPU = Placement(torch.device("cpu"), False)
"""The placement of every run before the `device` setting, and of `device="cpu"`."""


def model_device(model) -> torch.device:
    """The device of a model's weights (where its inputs must go)."""
    return next(model.parameters()).device


def to_cpu(state):
    """A copy of a (nested) state dict whose tensors are on the CPU (CPU tensors are kept as they are)."""
    if isinstance(state, torch.Tensor):
        return state.cpu()
    if isinstance(state, dict):
        return {k: to_cpu(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(to_cpu(v) for v in state)
    return state
