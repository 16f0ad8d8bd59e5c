"""pytest plugin: the suite's kernel tests with their Triton calls on a GPU, compiled (no interpreter).

    DEVICE_CHECK_KERNEL_DEVICE=cuda PYTHONPATH=scripts python -P -m pytest -p device_check.pytest_cuda \
        tests/test_kernels_score.py tests/test_kernels_vote.py

The kernel test modules set TRITON_INTERPRET=1 when imported and build their inputs on the CPU, so as they
are they test the interpreter. With DEVICE_CHECK_KERNEL_DEVICE=cuda this plugin
1. unsets TRITON_INTERPRET once collection has imported the test modules: Triton is first imported at the
   first kernel call, after that, so it compiles for the GPU (a Triton already imported in interpreter mode
   stops the run with the reason);
2. wraps the kernel entry points each test module imported (ENTRY_POINTS): a Triton call gets its tensor
   arguments on the GPU and gives its results back on the CPU, where the test's float64 and oracle checks
   run unchanged;
3. deselects CPU_ONLY tests, whose subject does not exist on a GPU;
4. writes what it did to DEVICE_CHECK_KERNEL_CALLS (JSON): the device, whether the interpreter was on,
   how many kernel calls it moved, and the deselected tests.
With DEVICE_CHECK_KERNEL_DEVICE=cpu (the dry run) the interpreter stays on and the wrappers only count.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys

import pytest

ENTRY_POINTS = {
    "fused_verifier_score": "impl",
    "subset_vote": "impl",
    "token_logprobs": "impl",
    "token_logprobs_triton": None,
}
"""Kernel entry point -> the keyword that must be "triton" for the call to be moved (None: every call)."""
CPU_ONLY = {
    "test_triton_on_cpu_without_interpreter_says_how": "checks the error for CPU tensors without the interpreter",
}
"""Test function name -> why it cannot run with the kernel on a GPU."""

_state = {"device": None, "calls": 0, "deselected": []}


def pytest_configure(config):
    _state["device"] = os.environ.get("DEVICE_CHECK_KERNEL_DEVICE", "cuda")


def pytest_collection_modifyitems(config, items):
    if _state["device"] == "cpu":
        return
    keep, dropped = [], []
    for item in items:
        (dropped if getattr(item, "originalname", item.name) in CPU_ONLY else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        _state["deselected"] = [item.nodeid for item in dropped]


def pytest_collection_finish(session):
    device = _state["device"]
    if device != "cpu":
        os.environ.pop("TRITON_INTERPRET", None)
        if "triton" in sys.modules:
            from tts_engine.kernels.dispatch import require_triton_mode

            try:
                require_triton_mode(False)
            except RuntimeError as err:
                raise pytest.UsageError(f"kernel tests on {device}: {err}") from err
    for module in {item.module for item in session.items if getattr(item, "module", None) is not None}:
        for name, keyword in ENTRY_POINTS.items():
            fn = getattr(module, name, None)
            if callable(fn) and not hasattr(fn, "__device_check__"):
                setattr(module, name, on_device(fn, device, keyword))


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("DEVICE_CHECK_KERNEL_CALLS")
    if path:
        from tts_engine.kernels.dispatch import interpreter_enabled

        report = dict(_state, interpreter=interpreter_enabled())
        with open(path, "w") as out:
            json.dump(report, out)


def on_device(fn, device: str, keyword: str | None):
    """`fn` with its tensor arguments moved to `device` and its tensor results moved back to the CPU."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if keyword is not None and kwargs.get(keyword) != "triton":
            return fn(*args, **kwargs)
        _state["calls"] += 1
        return moved(fn(*moved(args, device), **moved(kwargs, device)), "cpu")

    call.__device_check__ = True
    return call


def moved(value, device: str):
    """`value` with every tensor in it (tuples, lists, dicts, dataclasses) on `device`."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(moved(v, device) for v in value)
    if isinstance(value, dict):
        return {k: moved(v, device) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value, **{f.name: moved(getattr(value, f.name), device) for f in dataclasses.fields(value) if f.init}
        )
    return value
