"""Teacher-forced token scores: log P(target) at many positions under the full-vocabulary softmax, fused.

    log P(targets[t, k]) = h_t . W[targets[t, k]] + b[...] - logsumexp_v(h_t . W[v] + b[v])

for hidden states `# (T, D)`, an LM head `# (V, D)` (fp32, fp16 or bf16; a tied embedding is the same tensor)
and targets `# (T,)` or `# (T, K)`: float32 log-probs `# (T,)` / `# (T, K)`, without ever holding the (T, V)
logits. Every verifier that scores tokens reads through this op: the teacher-forced continuation (the recompute
check, the resolve check) at T = its tokens, and the yes/no read (kernels/verifier_score.py) at one position
per prompt with K = 2 targets.

One kernel, one launch (after a small memset). Each program owns BLOCK_T positions and one split of the
vocabulary; it streams W in (BLOCK_V, BLOCK_D) tiles, multiplies on the tensor cores (fp32 accumulation),
and keeps an online max and sum per position (Cut Cross-Entropy's tiled logsumexp, with Flash-Attention's
running rescale so a program covers a whole split, not one tile). The splits of a block of positions are
folded inside the kernel: each split merges its partial logsumexp into one of SLOTS per-position slots under a
lock (CCE merges every tile under a lock; we merge once per split), and the last split to finish folds the
slots and does the indexed dot of each target row, so memory is O(T), as CCE's. How the grid is cut:
`launch_plan`. Tiles: GPU_TILES_16BIT and GPU_TILES_FP32 (autotuned), SMALL_TILES, `interpreter_tiles`.

Dispatch and the interpreter: see kernels/dispatch.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .dispatch import interpreter_enabled, load_triton, next_power_of_2, require_triton_mode, resolve_impl
from .token_scores_reference import as_target_matrix, check_target_range, token_logprobs_reference

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

SPLIT_ALIGN = 256
"""A split of the vocabulary is a multiple of this many entries: whole tiles for every BLOCK_V we launch."""
MIN_SPLITS = 4
"""At least this many splits, also at large T: the programs running at once then share each block of hidden
states between 4 splits and each W tile between SMs / 4 blocks of positions (grouped order, `launch_plan`),
which keeps the hidden-state working set in L2 at D = 3584 (33 x 128 x 3584 x 2 B = 30 MB < 50 MB) where one
split would need 132 blocks (121 MB). A reasoned choice, not yet timed on a GPU (the GPU check times it)."""
WAVE_FILL = 0.9
"""Take the fewest splits whose programs fill the last wave of the GPU to at least this fraction: at T = 4096
(32 blocks of 128) 5 splits would run 1.2 waves (60% of the second one idle), 8 splits run 1.94."""
PROGRAMS_PER_SLOT = 32
"""Splits merging into one slot (under one lock). A merge is ~3 dependent memory round trips (~2-3 us), so
this bounds the serialised merging at T = 256 (66 splits, 3 slots) to ~50-70 us of a ~150 us call; more slots
cost 4 bytes per position each. A reasoned choice, not yet timed on a GPU."""
SYNC_ROWS = 16
"""The lock/counter words are allocated for blocks of this many positions: the smallest BLOCK_T launched."""
FINISH_D = 64
"""Hidden features per step of the target rows' indexed dot on a GPU (a (BLOCK_T, 64) fp32 tile)."""


@dataclass(frozen=True)
class TokenTiles:
    """Tile sizes and launch settings for one call (the interpreter's, or a GPU override of the autotuner)."""

    block_t: int
    """Positions per program."""
    block_v: int
    """Vocabulary entries per tile (the logits tile is block_t x block_v, fp32)."""
    block_d: int
    """Hidden features per step of the tile's dot product."""
    num_warps: int = 4
    """Warps per program (GPU only)."""
    num_stages: int = 3
    """Software-pipelining depth of the D loop (GPU only)."""
    finish_d: int = FINISH_D
    """Hidden features per step of the targets' indexed dot."""


def _config(block_t, block_v, block_d, warps, stages):
    triton, _ = load_triton()
    return triton.Config(
        {"BLOCK_T": block_t, "BLOCK_V": block_v, "BLOCK_D": block_d}, num_warps=warps, num_stages=stages
    )


GPU_TILES_16BIT = (
    (128, 256, 64, 8, 3),
    (128, 256, 64, 8, 4),
    (128, 128, 64, 8, 3),
    (128, 128, 64, 4, 4),
    (128, 128, 128, 8, 3),
    (64, 256, 64, 4, 4),
    (64, 128, 128, 4, 3),
)
"""(BLOCK_T, BLOCK_V, BLOCK_D, num_warps, num_stages) the autotuner times for bf16/fp16 heads: wgmma-sized
(M = 64/128 per warpgroup, N = 128/256, K = 64/128), shared memory (BLOCK_T + BLOCK_V) x BLOCK_D x 2 B x stages
at most 192 KB of Hopper's 227 KB. Compiled ahead of time for sm_90 here (tests; `python -P -m
tts_engine.kernels.bench --aot`); not yet timed on a GPU: the GPU check reports which one the autotuner picks."""
GPU_TILES_FP32 = (
    (128, 128, 32, 8, 3),
    (64, 128, 32, 4, 3),
    (128, 64, 32, 4, 3),
)
"""Tiles for float32 heads (3xTF32 dot: fp32-accurate products on the tensor cores): 4-byte operands, so half
the K per stage of the 16-bit tiles."""


AUTOTUNE_MIN_VOCAB = 32_768
"""Below this vocabulary the GPU launch takes SMALL_TILES without autotuning: such a call is a few microseconds
of work, not worth timing 7 configs for (each a compile); the kernel tests' shapes are all below it."""
SMALL_TILES = {16: (64, 128, 64, 4, 3), 32: (64, 128, 32, 4, 3)}
"""Bits per weight element -> the fixed tiles below AUTOTUNE_MIN_VOCAB (the smallest autotuner configs)."""


def _prune(configs, named_args, **kwargs):
    """Keep the configs of the head's dtype (fp32 tiles have BLOCK_D 32, 16-bit tiles 64 or 128)."""
    is_fp32 = named_args["w_ptr"].dtype == torch.float32
    return [c for c in configs if (c.kwargs["BLOCK_D"] == 32) == is_fp32]


def interpreter_tiles(positions: int, dim: int, vocab: int) -> TokenTiles:
    """Tiles for the Triton interpreter, whose cost is per program and per op, not per element.

    Big 2-D tiles: measured for the yes/no read (2 CPU cores, B=64, D=512, V=32000, fp32, one row block):
    1.0-1.3 s with 64 x 1024..4096 x 256..512 tiles, 2.0-2.6 s with 64 x 512 x 512, 2.8 s with a GPU's
    64 x 128 x 64. The interpreter caps a block at 2**20 elements: block_v x block_d and block_t x block_v stay
    at or under it.
    """
    block_t = min(128, max(16, next_power_of_2(positions)))
    block_d = min(1024, max(16, next_power_of_2(dim)))
    block_v = min(max(16, next_power_of_2(vocab)), (1 << 20) // block_d, (1 << 20) // block_t, 2048)
    return TokenTiles(block_t, block_v, block_d, num_warps=1, num_stages=1, finish_d=block_d)


@dataclass(frozen=True)
class LaunchPlan:
    """How the (positions x vocabulary) work is cut into programs."""

    splits: int
    """Vocabulary splits per block of positions."""
    v_per_split: int
    """Vocabulary entries per split (a multiple of SPLIT_ALIGN; the last split may be shorter)."""
    slots: int
    """Per-position partial-logsumexp slots the splits merge into (each under its own lock)."""
    group_t: int
    """Blocks of positions per group in the launch order: a group's programs run together and share tiles."""


def launch_plan(
    positions: int, vocab: int, programs_at_once: int, splits: int | None = None, slots: int | None = None
) -> LaunchPlan:
    """Splits, slots and grouping for `programs_at_once` concurrent programs (the GPU's SMs; 1 interpreted).

    1. Splits: at least MIN_SPLITS (L2 reuse), then the fewest that give at least one full wave and fill the
       last wave to WAVE_FILL (counted for BLOCK_T = 128); T = 256 gets 66, 4096 gets 8, 65536 gets 4.
    2. Each split a multiple of SPLIT_ALIGN entries; no split is empty.
    3. Slots: one per PROGRAMS_PER_SLOT splits (never more than splits: every slot must get a merge).
    4. Groups: programs_at_once // splits blocks of positions, so that the programs running together cover a
       few blocks of positions (their hidden states stay in L2) times every split.
    """
    max_splits = max(1, -(-vocab // SPLIT_ALIGN))
    if splits is None:
        row_blocks = -(-positions // 128)
        splits = min(MIN_SPLITS, max_splits) if programs_at_once > 1 else 1
        for candidate in range(splits, max_splits + 1):
            programs = row_blocks * candidate
            waves = programs / programs_at_once
            splits = candidate
            if programs >= programs_at_once and waves / -(-programs // programs_at_once) >= WAVE_FILL:
                break
    splits = max(1, min(int(splits), max_splits))
    v_per_split = -(-(-(-vocab // splits)) // SPLIT_ALIGN) * SPLIT_ALIGN
    splits = -(-vocab // v_per_split)
    slots = max(1, min(splits, slots or -(-splits // PROGRAMS_PER_SLOT)))
    return LaunchPlan(splits, v_per_split, slots, max(1, programs_at_once // splits))


@functools.cache
def _build_kernels(interpret: bool):
    """Define the @triton.jit kernel on first use (once per interpreter setting; see dispatch.py).

    Returns (triton, the kernel with EVEN_D derived, the autotuned kernel, the bare @jit kernel).
    """
    require_triton_mode(interpret)
    triton, tl = load_triton()

    @triton.jit(do_not_specialize=["positions", "splits", "slots", "group_t"])  # no recompiles as T varies
    def token_logprobs_kernel(
        h_ptr,  # (T, D)
        w_ptr,  # (V, D)
        b_ptr,  # (V,) or a dummy when HAS_BIAS is False
        tgt_ptr,  # (T, K) int32/int64
        out_ptr,  # (T, K) fp32
        slot_ptr,  # (SLOTS, T) fp32: partial logsumexp per slot
        sync_ptr,  # (cdiv(T, SYNC_ROWS), 2 * SLOTS + 1) int32 zeros: locks, merge counts, splits done
        positions,
        vocab,
        dim,
        num_targets,
        stride_ht,
        stride_wv,
        stride_tt,
        stride_tk,
        t_bucket,  # the autotuner's key only: next power of two of T
        v_per_split,
        splits,
        slots,
        group_t,
        HAS_BIAS: tl.constexpr,
        BLOCK_T: tl.constexpr,
        BLOCK_V: tl.constexpr,
        BLOCK_D: tl.constexpr,
        FINISH_D: tl.constexpr,
        EVEN_D: tl.constexpr,
        UPCAST: tl.constexpr,
        DOT_PRECISION: tl.constexpr,
    ):
        # 1. which block of positions and which split: grouped order, so that the programs running together
        #    cover group_t blocks of positions x every split (each W tile and hidden block read once into L2)
        pid = tl.program_id(0)
        row_blocks = tl.cdiv(positions, BLOCK_T)
        per_group = group_t * splits
        first_t = (pid // per_group) * group_t
        group_size = tl.minimum(row_blocks - first_t, group_t)
        pid_t = first_t + (pid % per_group) % group_size
        pid_s = (pid % per_group) // group_size
        rows = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)  # (BLOCK_T,)
        row_ok = rows < positions
        # rows past T read row T-1 instead of masking every load of the hot loop; their results are dropped
        h_rows = h_ptr + tl.minimum(rows, positions - 1).to(tl.int64)[:, None] * stride_ht  # (BLOCK_T, 1)
        v_start = pid_s * v_per_split
        v_end = tl.minimum(v_start + v_per_split, vocab)
        run_max = tl.full((BLOCK_T,), float("-inf"), tl.float32)
        run_sum = tl.zeros((BLOCK_T,), tl.float32)
        for v0 in range(v_start, v_end, BLOCK_V):
            cols = v0 + tl.arange(0, BLOCK_V)  # (BLOCK_V,)
            col_ok = cols < v_end
            w_cols = w_ptr + tl.minimum(cols, vocab - 1).to(tl.int64)[None, :] * stride_wv  # (1, BLOCK_V)
            # 2. logits tile = h @ W[cols].T, accumulated in fp32 over D on the tensor cores
            acc = tl.zeros((BLOCK_T, BLOCK_V), tl.float32)
            for d0 in range(0, dim, BLOCK_D):
                ds = d0 + tl.arange(0, BLOCK_D)
                if EVEN_D:
                    h = tl.load(h_rows + ds[None, :])  # (BLOCK_T, BLOCK_D)
                    w = tl.load(w_cols + ds[:, None])  # (BLOCK_D, BLOCK_V)
                else:
                    h = tl.load(h_rows + ds[None, :], mask=ds[None, :] < dim, other=0.0)
                    w = tl.load(w_cols + ds[:, None], mask=ds[:, None] < dim, other=0.0)
                if UPCAST:  # the interpreter's bf16 dot returns garbage (Triton 3.9); fp32 is exact here
                    h = h.to(tl.float32)
                    w = w.to(tl.float32)
                acc = tl.dot(h, w, acc, input_precision=DOT_PRECISION)
            if HAS_BIAS:
                acc += tl.load(b_ptr + tl.minimum(cols, vocab - 1)).to(tl.float32)[None, :]
            # 3. online logsumexp over the split: rescale the running sum to the new running max
            logits = tl.where(col_ok[None, :], acc, float("-inf"))
            new_max = tl.maximum(run_max, tl.max(logits, axis=1))
            run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(logits - new_max[:, None]), axis=1)
            run_max = new_max
        part = run_max + tl.log(run_sum)  # (BLOCK_T,) this split's logsumexp
        # 4. merge it into slot pid_s % slots under that slot's lock (the first merger just writes)
        slot = pid_s % slots
        sync = sync_ptr + pid_t * (2 * slots + 1)
        slot_rows = slot_ptr + slot.to(tl.int64) * positions + rows
        while tl.atomic_cas(sync + slot, 0, 1, sem="acquire") == 1:
            pass
        merged_before = tl.load(sync + slots + slot, volatile=True)
        prev = tl.load(slot_rows, mask=row_ok, other=0.0, cache_modifier=".cg")
        top = tl.maximum(prev, part)
        both = top + tl.log(tl.exp(prev - top) + tl.exp(part - top))  # logaddexp; both are finite here
        tl.store(slot_rows, tl.where(merged_before == 0, part, both), mask=row_ok)
        tl.store(sync + slots + slot, merged_before + 1)
        tl.debug_barrier()
        tl.atomic_xchg(sync + slot, 0, sem="release")
        # 5. the last split of this block of positions folds the slots, resets the sync words for the next
        #    call, and writes log P(target) = h . W[target] (+ b[target]) - logsumexp for each target
        finished_before = tl.atomic_add(sync + 2 * slots, 1, sem="acq_rel")
        if finished_before == splits - 1:
            lse = tl.full((BLOCK_T,), float("-inf"), tl.float32)
            for j in range(0, slots):
                part_j = tl.load(slot_ptr + j * positions + rows, mask=row_ok, other=0.0, cache_modifier=".cg")
                top = tl.maximum(lse, part_j)  # finite: part_j is
                lse = top + tl.log(tl.exp(lse - top) + tl.exp(part_j - top))
            for j in range(0, 2 * slots + 1):
                tl.store(sync + j, 0)
            h_fin = h_ptr + rows.to(tl.int64)[:, None] * stride_ht
            for k in range(0, num_targets):
                tgt = tl.load(tgt_ptr + rows.to(tl.int64) * stride_tt + k * stride_tk, mask=row_ok, other=0)
                valid = row_ok & (tgt >= 0) & (tgt < vocab)  # out-of-range targets give nan, never a bad read
                w_fin = w_ptr + tgt.to(tl.int64)[:, None] * stride_wv
                dot = tl.zeros((BLOCK_T,), tl.float32)
                for d0 in range(0, dim, FINISH_D):
                    ds = d0 + tl.arange(0, FINISH_D)
                    mask = valid[:, None] & (ds[None, :] < dim)
                    h = tl.load(h_fin + ds[None, :], mask=mask, other=0.0).to(tl.float32)
                    w = tl.load(w_fin + ds[None, :], mask=mask, other=0.0).to(tl.float32)
                    dot += tl.sum(h * w, axis=1)
                if HAS_BIAS:
                    dot += tl.load(b_ptr + tgt, mask=valid, other=0.0).to(tl.float32)
                result = tl.where(valid, dot - lse, float("nan"))
                tl.store(out_ptr + rows.to(tl.int64) * num_targets + k, result, mask=row_ok)

    with_even_d = triton.heuristics({"EVEN_D": lambda args: args["dim"] % args["BLOCK_D"] == 0})(token_logprobs_kernel)
    configs = [_config(*tiles) for tiles in GPU_TILES_16BIT + GPU_TILES_FP32]
    autotuned = triton.autotune(
        configs, key=["t_bucket", "vocab", "dim"], prune_configs_by={"early_config_prune": _prune}
    )(with_even_d)
    return triton, with_even_d, autotuned, token_logprobs_kernel


@functools.cache
def _multiprocessors(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def token_logprobs_triton(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    tiles: TokenTiles | None = None,
    splits: int | None = None,
    slots: int | None = None,
    programs_at_once: int | None = None,
) -> torch.Tensor:
    """Launch the kernel: (T, K) float32 log-probs for targets (T, K) (no validation; see `token_logprobs`).

    tiles: fixed tiles instead of the autotuner's (GPU) or `interpreter_tiles` (interpreter); splits, slots:
    instead of `launch_plan`'s; programs_at_once: what `launch_plan` fills (default: the GPU's
    multiprocessors, 1 in the interpreter).
    """
    interpret = interpreter_enabled()
    triton, kernel, autotuned, _ = _build_kernels(interpret)
    hidden = hidden if hidden.stride(1) == 1 else hidden.contiguous()
    weight = weight if weight.stride(1) == 1 else weight.contiguous()
    (positions, dim), vocab, num_targets = hidden.shape, weight.shape[0], targets.shape[1]
    device = hidden.device
    if programs_at_once is None:
        programs_at_once = 1 if interpret or device.type != "cuda" else _multiprocessors(device.index or 0)
    plan = launch_plan(positions, vocab, programs_at_once, splits, slots)
    out = torch.empty((positions, num_targets), dtype=torch.float32, device=device)  # (T, K)
    slot_lse = torch.empty((plan.slots, positions), dtype=torch.float32, device=device)  # (SLOTS, T)
    sync = torch.zeros((-(-positions // SYNC_ROWS), 2 * plan.slots + 1), dtype=torch.int32, device=device)
    is_fp32 = hidden.dtype == torch.float32
    args = (
        hidden,
        weight,
        bias if bias is not None else out,
        targets,
        out,
        slot_lse,
        sync,
        positions,
        vocab,
        dim,
        num_targets,
        hidden.stride(0),
        weight.stride(0),
        targets.stride(0),
        targets.stride(1),
        min(max(next_power_of_2(positions), 64), 1 << 16),
        plan.v_per_split,
        plan.splits,
        plan.slots,
        plan.group_t,
    )
    flags = dict(
        HAS_BIAS=bias is not None,
        UPCAST=interpret and not is_fp32,
        DOT_PRECISION="ieee" if interpret or not is_fp32 else "tf32x3",
    )

    def grid(meta):
        return (triton.cdiv(positions, meta["BLOCK_T"]) * plan.splits,)

    if tiles is None and interpret:
        tiles = interpreter_tiles(positions, dim, vocab)
    elif tiles is None and vocab < AUTOTUNE_MIN_VOCAB:
        tiles = TokenTiles(*SMALL_TILES[32 if is_fp32 else 16])
    if tiles is None:
        autotuned[grid](*args, FINISH_D=FINISH_D, **flags)
    else:
        kernel[grid](
            *args,
            BLOCK_T=tiles.block_t,
            BLOCK_V=tiles.block_v,
            BLOCK_D=tiles.block_d,
            FINISH_D=tiles.finish_d,
            num_warps=tiles.num_warps,
            num_stages=tiles.num_stages,
            **flags,
        )
    return out


def _validate(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    """ValueError naming the argument and value for anything the kernel cannot take."""
    if hidden.dim() != 2:
        raise ValueError(f"hidden must be 2-D (T, D), got shape {tuple(hidden.shape)}")
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
    if bias is not None and (bias.shape != (weight.shape[0],) or bias.device != weight.device):
        raise ValueError(
            f"bias must be ({weight.shape[0]},) on {weight.device}, got {tuple(bias.shape)} on {bias.device}"
        )


def token_logprobs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets,
    bias: torch.Tensor | None = None,
    *,
    impl: str = "auto",
) -> torch.Tensor:
    """log_softmax(hidden @ weight.T + bias, dim=-1).gather(-1, targets) in float32, without the logits.

    hidden: (T, D) hidden states after the final norm; weight: (V, D) LM head (a tied embedding is the same
    tensor), fp32, fp16 or bf16 as hidden; targets: (T,) or (T, K) token ids (a tensor or nested lists);
    bias: (V,) or None. Returns (T,) or (T, K) float32, the shape of targets.
    impl: "auto" (the kernel for CUDA tensors, the torch reference otherwise), "triton" or "torch".
    Targets outside [0, V) raise a ValueError, except on a GPU, where checking would cost a sync: there
    they give nan.
    """
    _validate(hidden, weight, bias)
    if resolve_impl(impl, hidden, weight) == "torch":
        return token_logprobs_reference(hidden, weight, targets, bias)
    tgt, single = as_target_matrix(targets, hidden.shape[0], hidden.device)  # (T, K)
    if not tgt.is_cuda:
        check_target_range(tgt, weight.shape[0])
    if tgt.numel() == 0:
        out = torch.empty(tgt.shape, dtype=torch.float32, device=hidden.device)
    else:
        out = token_logprobs_triton(hidden, weight, tgt, bias)
    return out[:, 0] if single else out
