"""Benchmark the kernels against their torch references: time, peak memory, agreement; a table last.

    python -P -m tts_engine.kernels.bench            # GPU: full shapes, a few minutes
    python -P -m tts_engine.kernels.bench --quick    # small shapes; on CPU the kernels run in the interpreter
    python -P -m tts_engine.kernels.bench --only vote --impl torch --threads 1   # CPU: curves-size reference
    python -P -m tts_engine.kernels.bench --only score --score-shape 256,1536,32000 --impl naive --impl torch
    python -P -m tts_engine.kernels.bench --sweep    # GPU: time each autotuner config of the token-score kernel
    python -P -m tts_engine.kernels.bench --aot      # any machine: compile for sm_90, report registers/spills

Token scores (log P(target) at T positions, one target each): naive (all logits in fp32), the chunked torch
reference, and the Triton kernel, for V in {32k, 152k}, T in {256, 4096}, D in {1536, 3584} (bf16 on GPU,
fp32 on CPU); scripts/device_check (the token_scores section) adds Cut Cross-Entropy and Liger-Kernel. Subset voting: the torch
reference and the kernel for P=500, N=256, R=1000 and several k. Timings warm up first, synchronise, and
report the median. Peak memory is torch.cuda.max_memory_allocated above the inputs, GPU only. On a CPU the
Triton rows run in the interpreter: their figures check correctness, their times mean nothing.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from dataclasses import dataclass

import torch

SCORE_SHAPES = [(b, d, v) for v in (32_000, 152_064) for b in (256, 4096) for d in (1536, 3584)]
QUICK_SCORE_SHAPES = [(64, 256, 8_000), (256, 512, 32_000)]
VOTE_SHAPE, VOTE_KS = (500, 256, 1000), (1, 4, 16, 64, 256)
QUICK_VOTE_SHAPE, QUICK_VOTE_KS = (20, 64, 100), (1, 8, 64)


@dataclass
class Row:
    """One line of the results table."""

    op: str
    """Which operation."""
    shape: str
    """Its problem size."""
    impl: str
    """naive, torch or triton."""
    ms: float
    """Median wall time per call in milliseconds."""
    peak_mb: float | None
    """Peak GPU memory above the inputs (None on CPU)."""
    check: str
    """Agreement with the torch reference."""


def measure(fn, device: torch.device, repeats: int) -> tuple[float, float | None, object]:
    """(median ms, peak MB above what was allocated before, last result), after one warm-up call."""
    result = fn()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20 if device.type == "cuda" else None
    return statistics.median(times), peak, result


def bench_score(shapes, impls, device, repeats) -> list[Row]:
    from .token_scores import token_logprobs
    from .token_scores_reference import token_logprobs_naive, token_logprobs_reference

    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    runs = {
        "naive": token_logprobs_naive,
        "torch": token_logprobs_reference,
        "triton": lambda h, w, t: token_logprobs(h, w, t, impl="triton"),
    }
    rows = []
    for positions, dim, vocab in shapes:
        gen = torch.Generator(device=device).manual_seed(0)
        hidden = torch.randn(positions, dim, generator=gen, device=device).to(dtype)
        weight = (torch.randn(vocab, dim, generator=gen, device=device) * (4 / dim**0.5)).to(dtype)
        targets = torch.randint(0, vocab, (positions,), generator=gen, device=device)
        shape = f"T={positions} D={dim} V={vocab} {str(dtype)[6:]}"
        reference = None
        for impl in impls:
            ms, peak, logp = measure(functools.partial(runs[impl], hidden, weight, targets), device, repeats)
            reference = logp if reference is None else reference
            error = (logp - reference).abs().max().item()
            rows.append(Row("token_scores", shape, impl, ms, peak, f"max|dlogp|={error:.1e}"))
            print(_format(rows[-1]), flush=True)
        del hidden, weight
    return rows


def vote_inputs(problems: int, samples: int, repeats: int, device: torch.device, seed: int = 0):
    """Answer classes skewed like real samples (a few big classes, a long tail, 10% without an answer),
    uniform scores, and one random permutation per (problem, subset) whose prefixes are the k-subsets."""
    gen = torch.Generator(device=device).manual_seed(seed)
    classes = torch.empty(problems, samples, device=device).exponential_(0.5, generator=gen).long()
    classes = classes.clamp(max=63)
    no_answer = torch.rand(problems, samples, generator=gen, device=device) < 0.1
    class_ids = classes.masked_fill(no_answer, -1)
    scores = torch.rand(problems, samples, generator=gen, device=device)
    order = torch.rand(problems, repeats, samples, generator=gen, device=device).argsort(dim=2)
    return class_ids, scores, order


def bench_vote(shape, ks, impls, device, repeats) -> list[Row]:
    from .subset_voting import subset_vote

    problems, samples, subsets_per_problem = shape
    class_ids, scores, order = vote_inputs(problems, samples, subsets_per_problem, device)
    correct = torch.zeros(problems, 64, dtype=torch.bool, device=device)
    correct[:, 0] = True
    rows = []
    for k in ks:
        subsets = order[..., :k].contiguous()  # (P, R, k)
        label = f"P={problems} N={samples} R={subsets_per_problem} k={k}"
        reference = None
        for impl in impls:
            run = lambda: subset_vote(class_ids, scores, subsets, correct, impl=impl)  # noqa: E731
            ms, peak, votes = measure(run, device, repeats)
            winners = torch.stack([votes.majority, votes.weighted, votes.best_of_n])
            reference = winners if reference is None else reference
            agree = (winners == reference).float().mean().item()
            acc = votes.accuracy["weighted"].mean().item()
            rows.append(Row("subset_vote", label, impl, ms, peak, f"agree={agree:.4f} acc_w={acc:.3f}"))
            print(_format(rows[-1]), flush=True)
    return rows


def _format(row: Row) -> str:
    peak = "-" if row.peak_mb is None else f"{row.peak_mb:,.0f}"
    return f"{row.op:<15} {row.shape:<34} {row.impl:<7} {row.ms:>11,.2f} {peak:>10} {row.check}"


def print_table(rows: list[Row], device: torch.device) -> None:
    print()
    print(f"device: {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}")
    if device.type != "cuda":
        print("CPU: references timed; Triton rows ran in the interpreter (correctness only); no peak memory")
    print(f"{'op':<15} {'shape':<34} {'impl':<7} {'ms':>11} {'peak MB':>10} check")
    for row in rows:
        print(_format(row))


def sweep_score_tiles(device, repeats) -> list[Row]:
    """Time every autotuner config of the token-score kernel at T=4096 and T=256, D=3584, V=152k, bf16."""
    from .token_scores import GPU_TILES_16BIT, TokenTiles, token_logprobs_triton

    rows = []
    for positions in (4096, 256):
        hidden = torch.randn(positions, 3584, device=device, dtype=torch.bfloat16)
        weight = (torch.randn(152_064, 3584, device=device) / 15).to(torch.bfloat16)
        targets = torch.randint(0, 152_064, (positions, 1), device=device)
        for block_t, block_v, block_d, warps, stages in GPU_TILES_16BIT:
            tiles = TokenTiles(block_t, block_v, block_d, warps, stages)
            run = functools.partial(token_logprobs_triton, hidden, weight, targets, tiles=tiles)
            ms, peak, _ = measure(run, device, repeats)
            shape = f"T={positions} {block_t}x{block_v}x{block_d} w{warps} s{stages}"
            rows.append(Row("score_tiles", shape, "triton", ms, peak, ""))
            print(_format(rows[-1]), flush=True)
    return rows


def print_aot_report() -> None:
    """Registers, spills, shared memory, wgmma and pipelining of every GPU config, compiled for sm_90."""
    from .aot import subset_vote_report, token_scores_report
    from .token_scores import GPU_TILES_16BIT, GPU_TILES_FP32, TokenTiles

    for dtype, table in ((torch.bfloat16, GPU_TILES_16BIT), (torch.float32, GPU_TILES_FP32)):
        for tiles in table:
            report = token_scores_report(dtype, TokenTiles(*tiles))
            print(f"token_scores {str(dtype)[6:]:<9} {'x'.join(map(str, tiles[:3]))} w{tiles[3]} s{tiles[4]} {report}")
    for width, is_mask in ((1, False), (16, False), (64, False), (256, False), (256, True), (1024, True)):
        report = subset_vote_report(1000, width, is_mask)
        print(f"subset_vote    width={width:<5} mask={is_mask!s:<5} {report}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small shapes (what a CPU can do)")
    parser.add_argument("--only", choices=("score", "vote"), help="run one op only")
    parser.add_argument(
        "--impl",
        action="append",
        choices=("naive", "torch", "triton"),
        help="implementations to run (repeatable; default: all that apply)",
    )
    parser.add_argument("--repeats", type=int, help="timed calls per row (default 10 on GPU, 2 on CPU)")
    parser.add_argument("--sweep", action="store_true", help="GPU: time each token-score kernel config")
    parser.add_argument(
        "--score-shape",
        action="append",
        metavar="T,D,V",
        help="token-score shape (T,D,V) instead of the defaults (repeatable)",
    )
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--aot", action="store_true", help="compile for sm_90 and report resources")
    args = parser.parse_args(argv)
    if args.aot:
        return print_aot_report()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":  # must precede the first `import triton` in this process
        os.environ.setdefault("TRITON_INTERPRET", "1")
    repeats = args.repeats or (10 if device.type == "cuda" else 2)
    if args.sweep:
        return print_table(sweep_score_tiles(device, repeats), device)
    rows = []
    if args.only in (None, "score"):
        shapes = QUICK_SCORE_SHAPES if args.quick else SCORE_SHAPES
        if args.score_shape:
            shapes = [tuple(int(x) for x in shape.split(",")) for shape in args.score_shape]
        rows += bench_score(shapes, args.impl or ["naive", "torch", "triton"], device, repeats)
    if args.only in (None, "vote"):
        shape, ks = (QUICK_VOTE_SHAPE, QUICK_VOTE_KS) if args.quick else (VOTE_SHAPE, VOTE_KS)
        rows += bench_vote(shape, ks, args.impl or ["torch", "triton"], device, repeats)
    print_table(rows, device)


if __name__ == "__main__":
    main()
