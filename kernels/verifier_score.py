"""Fused verifier score: log P(Yes) and log P(No) at the final position, without the logits.

The torch way materialises logits = h @ W.T, (B, V) in fp32: at V=152k, B=4096 that is 2.5 GB, to read
two columns and one logsumexp. The kernel streams W in (BLOCK_V, BLOCK_D) tiles, keeps an online max and
sum per row, and picks out the Yes and No logits as their tiles pass. The vocabulary is split across
programs (SPLITS) so that small batches still fill the GPU; each program writes a partial (max, sum) per
row, and torch folds the (B, SPLITS) partials into the logsumexp. Accumulation is fp32 throughout.

Dispatch and the interpreter: see kernels/dispatch.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .dispatch import (
    interpreter_enabled,
    load_triton,
    next_power_of_2,
    require_triton_mode,
    resolve_impl,
)
from .verifier_score_reference import verifier_score_reference

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class ScoreTiles:
    """Tile sizes and launch settings for one call of the kernel."""

    block_b: int
    """Hidden rows per program."""
    block_v: int
    """Vocabulary entries per tile (the logits tile is block_b x block_v, fp32)."""
    block_d: int
    """Hidden features per step of the dot product."""
    num_warps: int
    """Warps per program (GPU only)."""
    num_stages: int
    """Software-pipelining depth of the D loop (GPU only)."""
    target_programs: int
    """The vocabulary is split until the grid has about this many programs."""


def gpu_tiles(batch: int, dtype: torch.dtype) -> ScoreTiles:
    """Tiles for a GPU.

    Not yet timed on a GPU (none was available when written; `python -P -m tts_engine.kernels.bench --sweep`
    times the candidates). Chosen by compiling ahead of time for sm_90 and reading register use
    (`cuobjdump -res-usage`, 215-255 registers each); stack spills, bf16: 128x128x64/8 warps 144 B,
    128x128x32/8 warps 0 B, 64x128x32/8 warps 0 B, 64x128x64/4 warps 480 B; fp32 (ieee dot, no tensor
    cores): 128x128x32/8 warps 320 B, 128x64x32/8 warps 16 B. bf16 and fp16 compile to wgmma.
    num_stages=3 is Triton's default (the sweep also times 2 and 4).
    target_programs = 4 x 132 SMs (H100/H200), so that B=256 (two row blocks) still fills the device.
    """
    block_b = 128 if batch > 64 else 64
    block_v = 64 if dtype == torch.float32 else 128
    return ScoreTiles(block_b, block_v, 32, num_warps=8, num_stages=3, target_programs=4 * 132)


def interpreter_tiles(batch: int, dim: int, vocab: int) -> ScoreTiles:
    """Tiles for the Triton interpreter, whose cost is per program and per op, not per element.

    Measured here (2 CPU cores, B=64, D=512, V=32000, fp32, one row block): 1.0-1.3 s with 64 x 1024..4096
    x 256..512 tiles, 2.0-2.6 s with 64 x 512 x 512, 2.8 s with the GPU's 64 x 128 x 64. The interpreter
    caps a block at 2**20 elements: block_v x block_d stays at or under 2**20.
    """
    block_b = min(64, max(16, next_power_of_2(batch)))
    block_d = min(1024, max(16, next_power_of_2(dim)))
    block_v = min(max(16, next_power_of_2(vocab)), (1 << 20) // block_d, 2048)
    return ScoreTiles(block_b, block_v, block_d, num_warps=1, num_stages=1, target_programs=1)


@functools.cache
def _build_kernel(interpret: bool):
    """Define the @triton.jit kernel on first use (once per interpreter setting; see dispatch.py)."""
    require_triton_mode(interpret)
    triton, tl = load_triton()

    @triton.jit
    def verifier_score_kernel(
        h_ptr,
        w_ptr,
        part_max_ptr,
        part_sum_ptr,
        part_yes_ptr,
        part_no_ptr,
        batch,
        vocab,
        dim,
        stride_hb,
        stride_wv,
        yes_id,
        no_id,
        v_per_split,
        splits,
        BLOCK_B: tl.constexpr,
        BLOCK_V: tl.constexpr,
        BLOCK_D: tl.constexpr,
        UPCAST: tl.constexpr,
    ):
        pid_b = tl.program_id(0)
        pid_s = tl.program_id(1)
        rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)  # (BLOCK_B,)
        row_ok = rows < batch
        h_rows = h_ptr + rows.to(tl.int64)[:, None] * stride_hb  # (BLOCK_B, 1)
        v_start = pid_s * v_per_split
        v_end = tl.minimum(v_start + v_per_split, vocab)
        run_max = tl.full((BLOCK_B,), float("-inf"), tl.float32)
        run_sum = tl.zeros((BLOCK_B,), tl.float32)
        yes = tl.zeros((BLOCK_B,), tl.float32)
        no = tl.zeros((BLOCK_B,), tl.float32)
        for v0 in range(v_start, v_end, BLOCK_V):
            cols = v0 + tl.arange(0, BLOCK_V)  # (BLOCK_V,)
            col_ok = cols < v_end
            w_cols = w_ptr + cols.to(tl.int64)[None, :] * stride_wv  # (1, BLOCK_V)
            # 1. logits tile = h @ W[cols].T, accumulated in fp32 over D
            acc = tl.zeros((BLOCK_B, BLOCK_V), tl.float32)
            for d0 in range(0, dim, BLOCK_D):
                ds = d0 + tl.arange(0, BLOCK_D)
                d_ok = ds < dim
                h = tl.load(h_rows + ds[None, :], mask=row_ok[:, None] & d_ok[None, :], other=0.0)
                w = tl.load(w_cols + ds[:, None], mask=d_ok[:, None] & col_ok[None, :], other=0.0)
                if UPCAST:  # the interpreter's bf16 dot returns garbage (Triton 3.9); fp32 is exact here
                    h = h.to(tl.float32)
                    w = w.to(tl.float32)
                acc = tl.dot(h, w, acc, input_precision="ieee")  # (BLOCK_B, BLOCK_V); ieee: no tf32
            # 2. the two logits we return, if they are in this tile (other tiles add exact zeros)
            yes += tl.sum(tl.where(cols[None, :] == yes_id, acc, 0.0), axis=1)
            no += tl.sum(tl.where(cols[None, :] == no_id, acc, 0.0), axis=1)
            # 3. online logsumexp: rescale the running sum to the new running max
            logits = tl.where(col_ok[None, :], acc, float("-inf"))
            new_max = tl.maximum(run_max, tl.max(logits, axis=1))
            run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(logits - new_max[:, None]), axis=1)
            run_max = new_max
        # 4. one partial per (row, split); torch folds the splits
        out = rows * splits + pid_s
        tl.store(part_max_ptr + out, run_max, mask=row_ok)
        tl.store(part_sum_ptr + out, run_sum, mask=row_ok)
        tl.store(part_yes_ptr + out, yes, mask=row_ok)
        tl.store(part_no_ptr + out, no, mask=row_ok)

    return triton, verifier_score_kernel


def _split_vocab(vocab: int, row_blocks: int, tiles: ScoreTiles) -> tuple[int, int]:
    """(v_per_split, splits): whole tiles per split, about target_programs programs, no empty split."""
    vocab_tiles = -(-vocab // tiles.block_v)
    wanted = max(1, min(vocab_tiles, -(-tiles.target_programs // row_blocks)))
    v_per_split = -(-vocab_tiles // wanted) * tiles.block_v
    return v_per_split, -(-vocab // v_per_split)


def verifier_score_triton(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    yes_id: int,
    no_id: int,
    tiles: ScoreTiles | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the kernel and fold its per-split partials: (logp_yes, logp_no), each (B,) fp32."""
    interpret = interpreter_enabled()
    triton, kernel = _build_kernel(interpret)
    hidden = hidden if hidden.stride(1) == 1 else hidden.contiguous()
    weight = weight if weight.stride(1) == 1 else weight.contiguous()
    (batch, dim), vocab = hidden.shape, weight.shape[0]
    if tiles is None:
        tiles = interpreter_tiles(batch, dim, vocab) if interpret else gpu_tiles(batch, hidden.dtype)
    row_blocks = triton.cdiv(batch, tiles.block_b)
    v_per_split, splits = _split_vocab(vocab, row_blocks, tiles)
    parts = torch.empty((4, batch, splits), dtype=torch.float32, device=hidden.device)  # max, sum, yes, no
    kernel[(row_blocks, splits)](
        hidden,
        weight,
        parts[0],
        parts[1],
        parts[2],
        parts[3],
        batch,
        vocab,
        dim,
        hidden.stride(0),
        weight.stride(0),
        yes_id,
        no_id,
        v_per_split,
        splits,
        BLOCK_B=tiles.block_b,
        BLOCK_V=tiles.block_v,
        BLOCK_D=tiles.block_d,
        UPCAST=interpret and hidden.dtype != torch.float32,
        num_warps=tiles.num_warps,
        num_stages=tiles.num_stages,
    )
    part_max, part_sum = parts[0], parts[1]  # (B, splits)
    top = part_max.amax(dim=1)  # (B,)
    lse = top + torch.log((part_sum * torch.exp(part_max - top[:, None])).sum(dim=1))
    return parts[2].sum(dim=1) - lse, parts[3].sum(dim=1) - lse


def _validate(hidden: torch.Tensor, weight: torch.Tensor, yes_id: int, no_id: int) -> None:
    """ValueError naming the argument and value for anything the kernel cannot take."""
    if hidden.dim() != 2:
        raise ValueError(f"hidden must be 2-D (B, D), got shape {tuple(hidden.shape)}")
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D (V, D), got shape {tuple(weight.shape)}")
    if hidden.shape[1] != weight.shape[1]:
        raise ValueError(
            f"hidden and weight must share D, got hidden {tuple(hidden.shape)} and weight {tuple(weight.shape)}"
        )
    for name, t in (("hidden", hidden), ("weight", weight)):
        if t.dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"{name} dtype must be one of {SUPPORTED_DTYPES}, got {t.dtype}")
    if hidden.dtype != weight.dtype:
        raise ValueError(f"hidden and weight must share a dtype, got {hidden.dtype} and {weight.dtype}")
    if hidden.device != weight.device:
        raise ValueError(f"hidden and weight must share a device, got {hidden.device} and {weight.device}")
    vocab = weight.shape[0]
    for name, token in (("yes_id", yes_id), ("no_id", no_id)):
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
            raise ValueError(f"{name} must be an int in [0, {vocab}), got {token!r}")


def fused_verifier_score(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    yes_id: int,
    no_id: int,
    *,
    impl: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """log P(Yes) and log P(No) under the full-vocabulary softmax of hidden @ weight.T; each (B,) fp32.

    hidden: (B, D) final-position hidden states; weight: (V, D) LM head; fp32, fp16 or bf16 (same for both).
    impl: "auto", "triton" or "torch" (see kernels/dispatch.py).
    """
    yes_id, no_id = _as_int(yes_id, "yes_id"), _as_int(no_id, "no_id")
    _validate(hidden, weight, yes_id, no_id)
    if resolve_impl(impl, hidden, weight) == "torch" or hidden.shape[0] == 0:
        return verifier_score_reference(hidden, weight, yes_id, no_id)
    return verifier_score_triton(hidden, weight, yes_id, no_id)


def _as_int(token, name: str):
    """Accept Python ints and integer scalars (numpy, 0-d tensors); leave anything else for _validate."""
    if isinstance(token, torch.Tensor) and token.numel() == 1 and not token.is_floating_point():
        return int(token.item())
    if hasattr(token, "__index__") and not isinstance(token, bool):
        return int(token.__index__())
    return token


def yes_no_score(logp_yes: torch.Tensor, logp_no: torch.Tensor) -> torch.Tensor:
    """P(Yes) / (P(Yes) + P(No)) from the two log-probabilities, in [0, 1]; (B,).

    Computed as sigmoid(logp_yes - logp_no), which neither overflows nor underflows to 0/0 when both
    probabilities are tiny (log-probs of -1000 give 0.5, not nan).
    """
    if logp_yes.shape != logp_no.shape:
        raise ValueError(
            f"logp_yes and logp_no must have one shape, got {tuple(logp_yes.shape)} and {tuple(logp_no.shape)}"
        )
    return torch.sigmoid(logp_yes.float() - logp_no.float())
