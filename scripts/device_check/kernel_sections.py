"""Sections of the check for the machine and the kernels: ceilings, verifier score, token scores beside Cut
Cross-Entropy and Liger-Kernel, subset vote, tests.

Timing and peak memory come from tts_engine.kernels.bench.measure (one warm-up call, synchronised, the
median of the timed calls; peak memory above what was allocated before, GPU only).
"""

from __future__ import annotations

import functools
import glob
import json
import os
import platform
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from .plan import DATASHEET_COPY_GBPS, PEAK_BF16_TFLOPS, SCORE_FLOOR_GOAL, SCORE_MEMORY_GOAL, Plan
from .recorder import Recorder, ratio

REPO = Path(__file__).resolve().parents[2]
YES_ID, NO_ID = 9, -1
"""Verdict token ids of the score measurements (-1: the last vocabulary entry, in the last tile)."""
WALK_TOLERANCE = 1e-6
"""Largest |kernel accuracy - prefix-walk accuracy| counted as agreement: the kernel averages its R
correct/wrong outcomes in float32, the walk in float64 (same winners differ by ~2e-8 at R = 40)."""


class NoDeviceError(RuntimeError):
    """The GPU run found no CUDA device."""


def machine(rec: Recorder, plan: Plan, context: dict) -> None:
    """Versions, the device, and the two ceilings measured on it: a bf16 matrix product and a copy."""
    import torch

    rec.info(
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        commit=_git_commit(),
        **{name: _version(name) for name in ("triton", "transformers", "numpy", "math-verify", "orjson")},
    )
    if not plan.dry and not torch.cuda.is_available():
        raise NoDeviceError("no CUDA device visible to torch: run this on the GPU machine, or pass --dry")
    device = torch.device(plan.device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        rec.info(
            gpu=props.name,
            multiprocessors=props.multi_processor_count,
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
        )
    with rec.step("matmul"):
        tflops = _matmul_tflops(plan, device)
        rec.figure(
            "matrix product (torch)",
            tflops,
            "TFLOP/s",
            baseline="issue's bf16 figure",
            baseline_value=PEAK_BF16_TFLOPS,
            note=f"{plan.matmul_size}^3 {'float32 on CPU' if plan.dry else 'bf16'}, random data",
        )
    with rec.step("copy"):
        gbps = _copy_gbps(plan, device)
        rec.figure(
            "device copy, read + written",
            gbps,
            "GB/s",
            baseline="H200 datasheet",
            baseline_value=DATASHEET_COPY_GBPS,
            note=f"{plan.copy_mib} MiB",
        )


def _matmul_tflops(plan: Plan, device) -> float:
    import torch

    from tts_engine.kernels.bench import measure

    size = plan.matmul_size
    dtype = torch.float32 if plan.dry else torch.bfloat16
    a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
    ms, _, _ = measure(functools.partial(torch.matmul, a, b), device, plan.repeats)
    return 2 * size**3 / (ms * 1e-3) / 1e12


def _copy_gbps(plan: Plan, device) -> float:
    import torch

    from tts_engine.kernels.bench import measure

    src = torch.randn(plan.copy_mib * 2**18, device=device)  # float32: 4 bytes each
    dst = torch.empty_like(src)
    ms, _, _ = measure(functools.partial(dst.copy_, src), device, plan.repeats)
    return 2 * src.numel() * 4 / (ms * 1e-3) / 1e9


def score(rec: Recorder, plan: Plan, context: dict) -> None:
    """fused_verifier_score (the token-score kernel at K = 2) vs the chunked torch reference and the naive way."""
    import torch

    device = torch.device(plan.device)
    copy_gbps = _figure_value(context, "machine", "device copy, read + written")
    for batch, dim, vocab in plan.score_shapes:
        if rec.time_left() < 10:
            rec.note(f"skipped B={batch} D={dim} V={vocab}: section time ran out")
            break
        with rec.step(f"score B={batch} D={dim} V={vocab}"):
            _score_shape(rec, plan, device, batch, dim, vocab, copy_gbps)
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _score_shape(rec: Recorder, plan: Plan, device, batch: int, dim: int, vocab: int, copy_gbps) -> None:
    import torch

    from tts_engine.kernels import fused_verifier_score
    from tts_engine.kernels.bench import measure
    from tts_engine.kernels.token_scores_reference import token_logprobs_naive, token_logprobs_reference

    dtype = getattr(torch, plan.score_dtype)
    gen = torch.Generator(device=device).manual_seed(batch + dim)
    hidden = torch.randn(batch, dim, generator=gen, device=device).to(dtype)  # (B, D)
    weight = (torch.randn(vocab, dim, generator=gen, device=device) * (4 / dim**0.5)).to(dtype)  # (V, D)
    no_id = vocab + NO_ID
    want = float64_logp(hidden, weight, (YES_ID, no_id))  # (2, B)
    pair = torch.tensor([YES_ID, no_id], device=device).expand(batch, 2)  # (B, 2): the torch ways' targets
    runs = {
        "triton": functools.partial(fused_verifier_score, hidden, weight, YES_ID, no_id, impl="triton"),
        "reference": lambda: token_logprobs_reference(hidden, weight, pair).T,
        "naive": lambda: token_logprobs_naive(hidden, weight, pair).T,
    }
    got = {}
    for impl, fn in runs.items():
        ms, peak, (logp_yes, logp_no) = measure(fn, device, plan.repeats)
        error = (torch.stack([logp_yes, logp_no]).double() - want).abs().max().item()
        got[impl] = {"ms": ms, "peak_mb": peak, "max_abs_error": error}
        rec.row(
            op="verifier_score",
            batch=batch,
            dim=dim,
            vocab=vocab,
            dtype=plan.score_dtype,
            impl=impl,
            ms=ms,
            peak_mb=peak,
            max_abs_error=error,
        )
    _score_figures(rec, batch, dim, vocab, dtype, got, copy_gbps)


def _score_figures(rec: Recorder, batch, dim, vocab, dtype, got: dict, copy_gbps) -> None:
    flops = 2 * batch * dim * vocab
    floor_ms = flops / (PEAK_BF16_TFLOPS * 1e12) * 1e3
    kernel, reference, naive = got["triton"], got["reference"], got["naive"]
    tflops = flops / (kernel["ms"] * 1e-3) / 1e12
    weight_bytes = (vocab + batch) * dim * dtype.itemsize
    memory_floor = f", memory floor {weight_bytes / (copy_gbps * 1e9) * 1e3:.3f} ms" if copy_gbps else ""
    shape = f"B={batch} D={dim} V={vocab}"
    floor_ratio = ratio(kernel["ms"], floor_ms)
    rec.figure(
        f"score {shape}: triton time",
        kernel["ms"],
        "ms",
        baseline="compute floor at 790 TFLOP/s",
        baseline_value=floor_ms,
        goal=f"<= {SCORE_FLOOR_GOAL}x floor",
        met=floor_ratio is not None and floor_ratio <= SCORE_FLOOR_GOAL,
        note=f"{tflops:.1f} TFLOP/s = {tflops / PEAK_BF16_TFLOPS:.2f} of 790{memory_floor}",
    )
    rec.figure(
        f"score {shape}: triton vs reference",
        kernel["ms"],
        "ms",
        baseline="torch reference",
        baseline_value=reference["ms"],
        note=f"naive (all logits): {naive['ms']:.3f} ms",
    )
    if kernel["peak_mb"] is not None:
        saving = ratio(reference["peak_mb"], kernel["peak_mb"])
        rec.figure(
            f"score {shape}: peak memory",
            kernel["peak_mb"],
            "MB",
            baseline="torch reference",
            baseline_value=reference["peak_mb"],
            goal=f">= {SCORE_MEMORY_GOAL:g}x less",
            met=saving is not None and saving >= SCORE_MEMORY_GOAL,
            note=f"naive: {naive['peak_mb']:.1f} MB",
        )
    rec.figure(
        f"score {shape}: max |error| vs float64",
        kernel["max_abs_error"],
        "logp",
        baseline="torch reference's error",
        baseline_value=reference["max_abs_error"],
    )


COMPARE_WHEELS = REPO / "wheels" / "compare"
"""Where the token_scores section finds the wheels of the two libraries it races (pure Python + Triton, no
build step; the GPU machine has no network). Put them there on a machine with network, once:

    python -m pip download --no-deps --only-binary=:all: -d wheels/compare \\
        cut-cross-entropy==25.1.1 liger-kernel==0.8.5

(about 0.9 MB; wheels/ is git-ignored and travels with `carry: ["wheels"]`, as the check's own wheels do;
`bash scripts/device_check.sh --prepare` leaves this sub-folder alone). The section installs them with pip
(--no-index --no-deps) into COMPARE_SITE and imports them from there; without them it measures the rest
and notes that the two were not run."""
COMPARE_SITE = Path("/tmp/device_check_compare")
ERROR_ROWS = 512
"""The max |error| against float64 is taken over the first and the last ERROR_ROWS positions (float64 logits
of all 65,536 positions would take 80 GB)."""
NAIVE_MEMORY_SHARE = 0.6
"""The naive way (bf16 logits, their float32 copy and its log-softmax: 10 bytes per logit) is skipped when it
would need more than this share of the free GPU memory (T = 65,536 at V = 151,936: 100 GB)."""
TOKEN_ERROR_GOAL = 2e-4
TOKEN_MEMORY_GOAL = 2.0
GPU_TOKEN_SHAPES = tuple((t, d, 151_936) for t in (4096, 65536, 256) for d in (896, 1536, 3584))
"""(T, D, V) of the token_scores section on the GPU (issue 42), bf16; T = 4096 first, whose goals are the
tightest, and T = 256 last. Not yet run on a GPU: the 300 s limit is an estimate (5 ways x 11 calls per shape,
~1 s per call of the slowest way at T = 65,536, D = 3584, plus the autotuner's and Cut Cross-Entropy's
compiles); shapes past the limit are noted as skipped."""
CHUNK_ROWS = 2048
"""Rows per chunk of the chunked torch way: the naive way on 2048 positions at a time (2048 x 151,936 logits
in bf16, float32 and its log-softmax: 3 GB at most)."""
DRY_TOKEN_SHAPES = ((200, 64, 3001), (33, 40, 1000))
"""(T, D, V) of the dry run: CPU, float32, the kernel in Triton's interpreter; the two rivals need CUDA."""


def token_scores(rec: Recorder, plan: Plan, context: dict) -> None:
    """token_logprobs (Triton) beside Cut Cross-Entropy, Liger-Kernel, the naive and the chunked torch ways.

    The naive way is `log_softmax((h @ W.T).float()).gather` (skipped where its logits would not fit), the
    chunked one the same over CHUNK_ROWS positions at a time. Per shape (T positions, D, V; bf16 on the GPU, float32 in the dry run), each way's median time of
    plan.repeats calls after a warm-up (ours autotunes in it), peak memory above the inputs, and max |error|
    of log P(target) against float64; ours beside the compute floor 2TDV at 790 TFLOP/s. Goals (issue 42):
    faster than Cut Cross-Entropy at every shape, within 1.3x of the floor at T >= 4096, peak memory within 2x
    of Cut Cross-Entropy's, error within 2e-4. Shapes run in plan order until the section's time runs out.
    """
    import torch

    device = torch.device(plan.device)
    rivals = _rivals(rec, plan)
    for positions, dim, vocab in DRY_TOKEN_SHAPES if plan.dry else GPU_TOKEN_SHAPES:
        if rec.time_left() < 20:
            rec.note(f"skipped T={positions} D={dim} V={vocab}: section time ran out")
            continue
        with rec.step(f"tokens T={positions} D={dim} V={vocab}"):
            _token_shape(rec, plan, device, positions, dim, vocab, rivals)
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _rivals(rec: Recorder, plan: Plan) -> dict:
    """name -> (fn(hidden, weight, targets), sign of its result as a log-prob, why it cannot run or None)."""
    from tts_engine.kernels import token_logprobs
    from tts_engine.kernels.token_scores_reference import token_logprobs_naive

    cce = liger = None
    why_cce = why_liger = "needs CUDA (dry run)" if plan.dry else None
    if not plan.dry:
        why = _install_compare_wheels(rec)
        why_cce = why_liger = why
        if why is None:
            try:
                from cut_cross_entropy import linear_cross_entropy

                cce = functools.partial(linear_cross_entropy, reduction="none")
            except Exception as err:  # noqa: BLE001 - recorded; the other ways still run
                why_cce = f"import failed: {type(err).__name__}: {err}"
            try:
                from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy

                liger = functools.partial(liger_fused_linear_cross_entropy, reduction="none")
            except Exception as err:  # noqa: BLE001
                why_liger = f"import failed: {type(err).__name__}: {err}"
    return {
        "ours": (functools.partial(token_logprobs, impl="triton"), 1.0, None),
        "cut_cross_entropy": (cce, -1.0, why_cce),
        "liger_kernel": (liger, -1.0, why_liger),
        "naive": (token_logprobs_naive, 1.0, None),
        "chunked": (_chunked_naive, 1.0, None),
    }


def _chunked_naive(hidden, weight, targets):
    """The torch way with bounded memory: log_softmax((h @ W.T).float()).gather on CHUNK_ROWS rows at a time."""
    import torch

    from tts_engine.kernels.token_scores_reference import token_logprobs_naive

    return torch.cat(
        [
            token_logprobs_naive(hidden[t0 : t0 + CHUNK_ROWS], weight, targets[t0 : t0 + CHUNK_ROWS])
            for t0 in range(0, hidden.shape[0], CHUNK_ROWS)
        ]
    )


def _install_compare_wheels(rec: Recorder) -> str | None:
    """Install the carried wheels of Cut Cross-Entropy and Liger-Kernel; None, or why they are missing."""
    wheels = sorted(COMPARE_WHEELS.glob("*.whl"))
    if not wheels:
        rec.note(f"no wheels in {COMPARE_WHEELS}: Cut Cross-Entropy and Liger-Kernel not run (COMPARE_WHEELS says how)")
        return f"no wheels in {COMPARE_WHEELS.relative_to(REPO)}"
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    command += ["--upgrade", "--target", str(COMPARE_SITE), *map(str, wheels)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        rec.note(f"pip could not install {[w.name for w in wheels]}: {done.stderr[-400:]}")
        return "pip install failed"
    sys.path.insert(0, str(COMPARE_SITE))
    rec.info(compare_wheels=[w.name for w in wheels])
    return None


def _token_shape(rec: Recorder, plan: Plan, device, positions: int, dim: int, vocab: int, rivals: dict) -> None:
    import torch

    from tts_engine.kernels.bench import measure

    dtype = getattr(torch, plan.score_dtype)
    gen = torch.Generator(device=device).manual_seed(positions + dim)
    hidden = torch.randn(positions, dim, generator=gen, device=device).to(dtype)  # (T, D)
    weight = (torch.randn(vocab, dim, generator=gen, device=device) * (4 / dim**0.5)).to(dtype)  # (V, D)
    targets = torch.randint(0, vocab, (positions,), generator=gen, device=device)  # (T,)
    targets[0], targets[-1] = 0, vocab - 1  # the vocabulary's edges
    rows = torch.cat(
        [torch.arange(min(positions, ERROR_ROWS)), torch.arange(max(0, positions - ERROR_ROWS), positions)]
    )
    rows = rows.unique().to(device)
    want = float64_logp(hidden[rows], weight, None, targets=targets[rows])  # (len(rows),)
    shape = f"T={positions} D={dim} V={vocab}"
    got = {}
    for name, (fn, sign, why) in rivals.items():
        if why is None and name == "naive" and device.type == "cuda":
            need = positions * vocab * 10
            free = torch.cuda.mem_get_info(device)[0]
            if need > NAIVE_MEMORY_SHARE * free:
                why = f"needs {need / 2**30:.0f} GiB of logits, {free / 2**30:.0f} GiB free"
        if why is not None:
            rec.row(op="token_scores", shape=shape, dtype=plan.score_dtype, impl=name, skipped=why)
            got[name] = None
            continue
        with torch.inference_mode():
            ms, peak, out = measure(functools.partial(fn, hidden, weight, targets), device, plan.repeats)
        error = (sign * out.float()[rows].double() - want).abs().max().item()
        got[name] = {"ms": ms, "peak_mb": peak, "max_abs_error": error}
        extra = {"config": _autotuned_config()} if name == "ours" and device.type == "cuda" else {}
        rec.row(
            op="token_scores",
            shape=shape,
            dtype=plan.score_dtype,
            impl=name,
            ms=ms,
            peak_mb=peak,
            max_abs_error=error,
            **extra,
        )
        del out
    _token_figures(rec, shape, positions, dim, vocab, got)


def _autotuned_config() -> str | None:
    """The config the autotuner chose for the last call of the token-score kernel."""
    from tts_engine.kernels.token_scores import _build_kernels

    best = getattr(_build_kernels(False)[2], "best_config", None)
    return None if best is None else str(best)


def _token_figures(rec: Recorder, shape: str, positions: int, dim: int, vocab: int, got: dict) -> None:
    flops = 2 * positions * dim * vocab
    floor_ms = flops / (PEAK_BF16_TFLOPS * 1e12) * 1e3
    ours, cce = got["ours"], got["cut_cross_entropy"]

    def others(key: str, unit: str) -> str:
        return ", ".join(
            f"{name} {'-' if got[name] is None or got[name][key] is None else f'{got[name][key]:.3g} {unit}'}"
            for name in got
            if name != "ours"
        )

    floor_ratio = ratio(ours["ms"], floor_ms)
    tflops = flops / (ours["ms"] * 1e-3) / 1e12
    big = positions >= 4096
    rec.figure(
        f"tokens {shape}: ours vs floor",
        ours["ms"],
        "ms",
        baseline="compute floor at 790 TFLOP/s",
        baseline_value=floor_ms,
        goal=f"<= {SCORE_FLOOR_GOAL}x floor" if big else None,
        met=(floor_ratio is not None and floor_ratio <= SCORE_FLOOR_GOAL) if big else None,
        note=f"{tflops:.1f} TFLOP/s = {tflops / PEAK_BF16_TFLOPS:.2f} of 790",
    )
    rec.figure(
        f"tokens {shape}: ours vs Cut Cross-Entropy",
        ours["ms"],
        "ms",
        baseline="Cut Cross-Entropy",
        baseline_value=None if cce is None else cce["ms"],
        goal=None if cce is None else "faster",
        met=None if cce is None else ours["ms"] < cce["ms"],
        note=others("ms", "ms"),
    )
    if ours["peak_mb"] is not None:
        rec.figure(
            f"tokens {shape}: peak memory",
            ours["peak_mb"],
            "MB",
            baseline="Cut Cross-Entropy",
            baseline_value=None if cce is None else cce["peak_mb"],
            goal=None if cce is None else f"<= {TOKEN_MEMORY_GOAL:g}x Cut Cross-Entropy",
            met=None if cce is None else ours["peak_mb"] <= TOKEN_MEMORY_GOAL * max(cce["peak_mb"], 1e-3),
            note=others("peak_mb", "MB"),
        )
    rec.figure(
        f"tokens {shape}: max |error| vs float64",
        ours["max_abs_error"],
        "logp",
        baseline="Cut Cross-Entropy" if cce is not None else "chunked torch",
        baseline_value=(cce or got["chunked"])["max_abs_error"],
        goal=f"<= {TOKEN_ERROR_GOAL:g}",
        met=ours["max_abs_error"] <= TOKEN_ERROR_GOAL,
        note=others("max_abs_error", ""),
    )


def float64_logp(hidden, weight, ids, rows_per_block: int = 1024, targets=None):
    """float64 log-probabilities under softmax(hidden @ weight.T), in row blocks: (len(ids), B) of the fixed
    token `ids`, or (B,) of each row's own target when `targets` (B,) is given."""
    import torch

    weight64 = weight.double()
    parts = []
    for b0 in range(0, hidden.shape[0], rows_per_block):
        logits = hidden[b0 : b0 + rows_per_block].double() @ weight64.T  # (rows, V)
        lse = torch.logsumexp(logits, dim=1, keepdim=True)  # (rows, 1)
        if targets is None:
            parts.append((logits[:, list(ids)] - lse).T)  # (len(ids), rows)
        else:
            parts.append((logits.gather(1, targets[b0 : b0 + rows_per_block, None].long()) - lse)[:, 0])
    return torch.cat(parts, dim=-1)


def vote(rec: Recorder, plan: Plan, context: dict) -> None:
    """subset_vote (Triton) vs its torch reference per k, and all k vs the CPU prefix walk of the curves."""
    import numpy as np
    import torch

    from tts_engine.eval.prefix_voting import prefix_vote_accuracy
    from tts_engine.kernels.bench import measure, vote_inputs

    device = torch.device(plan.device)
    problems, samples, repeats = plan.vote_shape
    class_ids, scores, _ = vote_inputs(problems, samples, 1, device)  # (P, N) each
    correct = torch.zeros(problems, 64, dtype=torch.bool, device=device)  # class 0 is right (as kernels.bench)
    correct[:, 0] = True
    rng = np.random.default_rng(0)  # subsets as the curves draw them: relabel[p, shared[r, :k]]
    relabel = np.argsort(rng.random((problems, samples)), axis=1)  # (P, N)
    shared = np.argsort(rng.random((repeats, samples)), axis=1)[:, : max(plan.vote_ks)]  # (R, k_max)
    shape = f"P={problems} N={samples} R={repeats}"
    walked = {}
    with rec.step("prefix walk"):
        cpu = torch.device("cpu")
        walk = functools.partial(
            prefix_vote_accuracy,
            class_ids.cpu().numpy(),
            correct.cpu().numpy(),
            {"score": scores.cpu().numpy()},
            relabel,
            shared,
            list(plan.vote_ks),
        )
        walk_ms, _, walked = measure(walk, cpu, max(1, min(plan.repeats, 2)))
        rec.row(op="subset_vote", shape=shape, impl="prefix_walk_cpu", ks=list(plan.vote_ks), ms=walk_ms)
    totals: dict[str, list[float]] = {"triton": [], "torch": []}
    relabel_t = torch.as_tensor(relabel, device=device)
    for k in plan.vote_ks:
        if rec.time_left() < 10:
            rec.note(f"skipped k={k}: section time ran out")
            break
        with rec.step(f"vote k={k}"):
            subsets = relabel_t[:, torch.as_tensor(shared[:, :k], device=device)]  # (P, R, k)
            times = _vote_k(rec, plan, device, shape, k, class_ids, scores, subsets, correct, walked.get(k))
            for impl, values in totals.items():
                values.append(times[impl])
    if walked and len(totals["triton"]) == len(plan.vote_ks):
        ks = ",".join(map(str, plan.vote_ks))
        rec.figure(
            f"vote {shape} k={ks}: triton, all k",
            sum(totals["triton"]),
            "ms",
            baseline="CPU prefix walk, all k in one pass",
            baseline_value=walk_ms,
            note=f"torch reference, all k: {sum(totals['torch']):.1f} ms",
        )


def _vote_k(rec, plan, device, shape, k, class_ids, scores, subsets, correct, walked) -> dict[str, float]:
    import torch

    from tts_engine.kernels import subset_vote
    from tts_engine.kernels.bench import measure

    times, votes = {}, {}
    for impl in ("triton", "torch"):
        run = functools.partial(subset_vote, class_ids, scores, subsets, correct, impl=impl)
        times[impl], peak, votes[impl] = measure(run, device, plan.repeats)
        rec.row(op="subset_vote", shape=shape, k=k, impl=impl, ms=times[impl], peak_mb=peak)
    winners = {impl: torch.stack([v.majority, v.weighted, v.best_of_n]) for impl, v in votes.items()}
    agree = (winners["triton"] == winners["torch"]).float().mean().item()
    walk_diff = None
    if walked is not None:
        names = {"majority": "majority", "weighted": "weighted:score", "best_of_n": "best_of_n:score"}
        walk_diff = max(
            float(abs(votes["triton"].accuracy[ours].cpu().numpy() - walked[theirs]).max())
            for ours, theirs in names.items()
        )
    rec.figure(
        f"vote {shape} k={k}: triton time",
        times["triton"],
        "ms",
        baseline="torch reference",
        baseline_value=times["torch"],
        goal="same winners as the reference and the walk",
        met=agree == 1.0 and walk_diff is not None and walk_diff <= WALK_TOLERANCE,
        note=f"winners agreeing {agree:.4f}; max |accuracy - prefix walk| "
        f"{'not measured' if walk_diff is None else f'{walk_diff:.2g}'}",
    )
    return times


def kernel_tests(rec: Recorder, plan: Plan, context: dict) -> None:
    """The suite's kernel tests (tests/test_kernels_*.py) with their Triton calls on the plan's device."""
    files = sorted(os.path.relpath(f, REPO) for f in glob.glob(str(REPO / "tests" / "test_kernels_*.py")))
    if not files:
        raise FileNotFoundError(f"no tests/test_kernels_*.py under {REPO}")
    work = rec.path.parent
    junit, calls = work / "kernel_tests.xml", work / "kernel_calls.json"
    command = [
        sys.executable,
        "-P",
        "-m",
        "pytest",
        "-q",
        "-p",
        "device_check.pytest_cuda",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *files,
    ]
    if plan.test_select:
        command += ["-k", plan.test_select]
    env = dict(os.environ, DEVICE_CHECK_KERNEL_DEVICE=plan.device, DEVICE_CHECK_KERNEL_CALLS=str(calls))
    rec.info(command=" ".join(command[1:]))
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=max(5.0, rec.time_left() - 5)
        )
        output, returncode = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as err:  # its captured output is bytes, whatever `text` says
        output = b"".join(part or b"" for part in (err.stdout, err.stderr)).decode(errors="replace")
        output, returncode = output + "\npytest timed out", None
    elapsed = time.perf_counter() - started
    print(output[-4000:], flush=True)
    counts = junit_counts(junit) if junit.is_file() else None
    used = json.loads(calls.read_text()) if calls.is_file() else {}
    calls.unlink(missing_ok=True)
    rec.info(pytest_returncode=returncode, deselected=used.get("deselected", []), interpreter=used.get("interpreter"))
    if counts is None:
        raise RuntimeError(f"pytest wrote no report (exit status {returncode}): {output[-600:]}")
    rec.row(op="kernel_tests", seconds=elapsed, **{k: v for k, v in counts.items() if k != "failed_names"})
    rec.figure(
        "kernel tests passed",
        counts["passed"],
        "tests",
        baseline="tests run",
        baseline_value=counts["tests"],
        goal="all pass",
        met=counts["failed"] == 0 and returncode == 0,
        note=f"{counts['skipped']} skipped; Triton calls on {plan.device}: {used.get('calls')}; "
        f"interpreter: {used.get('interpreter')}",
    )
    if counts["tests"] == 0:
        rec.error("pytest", f"no kernel test ran (selection: {plan.test_select or 'all'}; exit status {returncode})")
    elif counts["failed_names"] or returncode != 0:
        rec.error("pytest", f"exit status {returncode}; failed: {', '.join(counts['failed_names']) or '-'}")


def junit_counts(path: Path) -> dict:
    """tests, passed, skipped, failed (failures + errors) and the failed tests' names from a JUnit XML file."""
    root = ET.parse(path).getroot()
    cases = list(root.iter("testcase"))
    failed = [
        f"{c.get('classname')}::{c.get('name')}"
        for c in cases
        if c.find("failure") is not None or c.find("error") is not None
    ]
    skipped = sum(c.find("skipped") is not None for c in cases)
    return {
        "tests": len(cases),
        "passed": len(cases) - len(failed) - skipped,
        "skipped": skipped,
        "failed": len(failed),
        "failed_names": failed,
    }


def _figure_value(context: dict, section: str, name: str) -> float | None:
    """A figure measured by an earlier section of this run, or None."""
    for figure in context.get(section, {}).get("figures", []):
        if figure["name"] == name:
            return figure["value"]
    return None


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None
