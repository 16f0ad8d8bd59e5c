"""Choosing between a Triton kernel and its plain-torch reference.

Triton is imported only here and only on first use, so `import tts_engine.kernels` works without it.

Backends:
- "auto": Triton when torch sees a CUDA device, every tensor is on CUDA and triton imports; the torch
  reference otherwise.
- "triton": the kernel, always. Off a GPU this works only under the Triton interpreter: set the
  environment variable TRITON_INTERPRET=1 before triton is first imported in the process (in the shell,
  or at the top of a test module before any import that may import triton). Triton decides
  interpreter-or-compiler when a @triton.jit function is defined, its own library included, so each op
  defines its kernels on first use, and a kernel call in a process whose triton was imported in the
  other mode raises a RuntimeError that says so.
- "torch": the reference, always.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType

import torch

IMPLS = ("auto", "triton", "torch")


@functools.cache
def load_triton() -> tuple[ModuleType, ModuleType]:
    """Import triton and triton.language, or say how to install them."""
    try:
        import triton
        import triton.language as tl
    except ImportError as err:
        raise ImportError(
            "impl='triton' needs the triton package: `pip install triton` "
            "(or `pip install tts-engine[triton]`); use impl='torch' or impl='auto' without it"
        ) from err
    return triton, tl


def triton_available() -> bool:
    """True when triton imports (without raising)."""
    try:
        load_triton()
    except ImportError:
        return False
    return True


def require_triton_mode(interpret: bool) -> None:
    """RuntimeError unless triton's own @jit library was defined in the mode this call needs."""
    _, tl = load_triton()
    from triton.runtime.interpreter import InterpretedFunction

    imported_interpreted = isinstance(tl.zeros, InterpretedFunction)
    if imported_interpreted == interpret:
        return
    if interpret:
        raise RuntimeError(
            "TRITON_INTERPRET=1 was set after triton was imported in this process; Triton fixes "
            "interpreter-or-compiler at import: set it before the first `import triton` "
            "(or use impl='torch')"
        )
    raise RuntimeError(
        "triton was imported with TRITON_INTERPRET=1 and the variable is now unset; "
        "kernels in this process can run only in the interpreter: set TRITON_INTERPRET=1 again"
    )


def interpreter_enabled() -> bool:
    """True when TRITON_INTERPRET asks Triton to run kernels on the CPU with its interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on")


def resolve_impl(impl: str, *tensors: torch.Tensor) -> str:
    """Turn an implementation request (impl) into "triton" or "torch" for these tensors."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    if impl == "torch":
        return "torch"
    if impl == "triton":
        load_triton()  # raises the install hint
        on_cuda = all(t.is_cuda for t in tensors)
        if not on_cuda and not interpreter_enabled():
            raise ValueError(
                "impl='triton' got CPU tensors without the interpreter: move them to CUDA, or set "
                "TRITON_INTERPRET=1 before the first kernel call, or use impl='torch'"
            )
        return "triton"
    on_cuda = torch.cuda.is_available() and all(t.is_cuda for t in tensors)
    return "triton" if on_cuda and triton_available() else "torch"


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (and >= 1)."""
    return 1 << max(0, (int(n) - 1).bit_length())
