"""Compile the kernels ahead of time for a CUDA architecture, without a GPU, and report their resources.

Triton's wheel ships the CUDA backend and ptxas, so the whole GPU pipeline (TTIR -> PTX -> cubin) runs on
a CPU-only machine. This proves the GPU path compiles with the tiles the launchers choose and measures
what can be measured without a device: shared memory, registers and stack spills per thread, and whether
the dot products became Hopper tensor-core instructions (wgmma). Used by the tests and kernels/bench.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

import torch

from .dispatch import load_triton
from .subset_voting import _build_kernel as _build_vote_kernel
from .subset_voting import vote_tiles
from .token_scores import FINISH_D, TokenTiles
from .token_scores import _build_kernels as _build_token_kernels

TRITON_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


@dataclass(frozen=True)
class CompileReport:
    """What one ahead-of-time compile measured."""

    shared_bytes: int
    """Shared memory per program."""
    registers: int | None
    """Registers per thread (None when cuobjdump is not bundled)."""
    spill_bytes: int | None
    """Stack bytes per thread: register spills (None when cuobjdump is not bundled)."""
    uses_wgmma: bool
    """True when the PTX holds Hopper warp-group MMA instructions."""
    pipelined: bool = False
    """True when the loads feeding the dot are asynchronous copies (software-pipelined over num_stages)."""


def _compile(kernel, signature: dict, constexprs: dict, num_warps: int, num_stages: int, arch: int, aligned=()):
    """Compile for `arch`; `aligned` names the arguments a real launch sees as multiples of 16 (Triton
    specialises those: 16-byte aligned pointers, strides and sizes divisible by 16). Without that the loads
    cannot be vectorised, so they are neither asynchronous nor pipelined, and the report would be of a kernel
    that never runs."""
    triton, _ = load_triton()
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = signature | {name: "constexpr" for name in constexprs}
    attrs = {(kernel.arg_names.index(name),): [["tt.divisibility", 16]] for name in aligned}
    source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(
        source, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps, "num_stages": num_stages}
    )
    registers, spills = _resource_usage(compiled.asm["cubin"])
    pipelined = "async_copy_global_to_local" in compiled.asm["ttgir"] or "async_tma" in compiled.asm["ttgir"]
    return CompileReport(compiled.metadata.shared, registers, spills, "wgmma" in compiled.asm["ptx"], pipelined)


def _resource_usage(cubin: bytes) -> tuple[int | None, int | None]:
    """(registers, stack bytes) per thread from the bundled `cuobjdump -res-usage`."""
    triton, _ = load_triton()
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not os.path.exists(tool):
        return None, None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
    found = re.search(r"REG:(\d+) STACK:(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (None, None)


def token_scores_report(dtype: torch.dtype, tiles: TokenTiles, arch: int = 90, bias: bool = False):
    """Compile the token-score kernel with these tiles for this head dtype, as the autotuner would launch it."""
    _, _, _, kernel = _build_token_kernels(False)
    ptr = f"*{TRITON_DTYPES[dtype]}"
    signature = {"h_ptr": ptr, "w_ptr": ptr, "b_ptr": ptr, "tgt_ptr": "*i64", "out_ptr": "*fp32"}
    signature |= {"slot_ptr": "*fp32", "sync_ptr": "*i32"}
    ints = ("positions", "vocab", "dim", "num_targets", "stride_ht", "stride_wv", "stride_tt", "stride_tk")
    ints += ("t_bucket", "v_per_split", "splits", "slots", "group_t")
    signature |= {name: "i32" for name in ints}
    constexprs = {
        "HAS_BIAS": bias,
        "BLOCK_T": tiles.block_t,
        "BLOCK_V": tiles.block_v,
        "BLOCK_D": tiles.block_d,
        "FINISH_D": FINISH_D,
        "EVEN_D": True,
        "UPCAST": False,
        "DOT_PRECISION": "tf32x3" if dtype == torch.float32 else "ieee",
    }
    aligned = ("h_ptr", "w_ptr", "b_ptr", "tgt_ptr", "out_ptr", "slot_ptr", "sync_ptr", "dim", "stride_ht")
    aligned += ("stride_wv", "t_bucket", "v_per_split")  # D = 896, 1536, 3584; splits of 256 entries
    return _compile(kernel, signature, constexprs, tiles.num_warps, tiles.num_stages, arch, aligned)


def subset_vote_report(repeats: int, width: int, is_mask: bool, arch: int = 90):
    """Compile the subset-vote kernel as the launcher would for this many subsets of this width."""
    block_r, block_m, num_warps = vote_tiles(repeats, width, interpret=False)
    _, kernel = _build_vote_kernel(False)
    signature = {
        "cls_ptr": "*i32",
        "score_ptr": "*fp32",
        "qscore_ptr": "*i64",
        "members_ptr": "*u8" if is_mask else "*i64",
        "num_cls_ptr": "*i32",
        "maj_ptr": "*i64",
        "wtd_ptr": "*i64",
        "bon_ptr": "*i64",
    }
    signature |= {name: "i32" for name in ("repeats", "n_samples", "width", "stride_mp", "stride_mr")}
    constexprs = {"IS_MASK": is_mask, "BLOCK_R": block_r, "BLOCK_M": block_m}
    return _compile(kernel, signature, constexprs, num_warps, 3, arch)
