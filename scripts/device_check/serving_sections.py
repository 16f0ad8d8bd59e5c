"""Sections of the check for serving: generation at steady state (raw model.generate with the dynamic and the
static cache, the hf backend's two decode loops, the engine) beside the bandwidth floor; `tts solve` end to end on
randomly initialised checkpoints of real shapes; `tts solve` on the shipped model."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from .plan import BACKEND_GOAL, ENGINE_GOAL, Plan
from .recorder import Recorder

REPO = Path(__file__).resolve().parents[2]


def generate(rec: Recorder, plan: Plan, context: dict) -> None:
    """Steady-state generated tokens/s of a randomly initialised Qwen2 on the same prompts through raw
    model.generate (dynamic cache, then static cache: transformers compiles its decode step), HFBackend.generate
    (its static loop, compiled on the GPU; then its dynamic loop) and Engine.solve (no verifier, over the same
    backend), each beside the bandwidth floor; and the backend's sampling step beside a raw decode step. Each path
    is warmed up at full length first (compilation included), then timed plan.gen_repeats times (the median)."""
    import torch

    from tts_engine.inputs.models import DEFAULT_MODEL, default_problems_path
    from tts_engine.inputs.problems import load_problems
    from tts_engine.inputs.prompts import PromptConfig, build_prompt

    dtype = "float32" if plan.dry else "bfloat16"
    model, tokenizer = build_model(plan.model, dtype, plan.device)
    params = sum(p.numel() for p in model.parameters())
    problems = load_problems(default_problems_path(), limit=plan.gen_prompts)
    config = PromptConfig.load(DEFAULT_MODEL)  # the shipped model's prompt and stop strings
    prompts = [build_prompt(config, p.text) for p in problems]
    rows, steps = len(prompts) * plan.gen_n, plan.gen_max_new_tokens
    prompt_tokens = statistics.mean(len(tokenizer.encode(p, add_special_tokens=False)) for p in prompts)
    copy_gbps = _copy_rate(plan, context)
    floor = bandwidth_floor(model, rows, prompt_tokens + steps / 2, copy_gbps)
    rec.info(
        model=dict(plan.model),
        parameters=params,
        dtype=dtype,
        prompts=len(prompts),
        n=plan.gen_n,
        max_new_tokens=steps,
        copy_gbps=copy_gbps,
        bandwidth_floor_tokens_per_s=floor,
    )
    shape = f"{params:,} parameters, {dtype}, {len(prompts)} prompts x {plan.gen_n} x {steps} tokens"
    rec.figure(
        "generate: bandwidth floor",
        floor,
        "tokens/s",
        note=f"{rows} rows a step, each step reading the weights once and every row's KV cache once "
        f"(mean context {prompt_tokens + steps / 2:.0f} tokens) at the measured copy rate {copy_gbps:,.0f} GB/s",
    )
    speed: dict[str, dict] = {}
    for label, cache in (("raw model.generate, dynamic cache", None), ("raw model.generate, static cache", "static")):
        with rec.step(label):
            speed[label] = _timed(
                rec, plan, label, lambda m, c=cache: raw_generate(model, tokenizer, prompts, plan.gen_n, m, c)
            )
            _floor_figure(rec, f"generate: {label}", speed[label], floor, shape)
        _free(torch)
    raw = speed.get("raw model.generate, static cache") or speed.get("raw model.generate, dynamic cache")
    with rec.step("sampling step"):
        _sampling_step(rec, plan, rows, model.config.vocab_size, speed.get("raw model.generate, dynamic cache"))

    from tts_engine.backends.hf import HFBackend
    from tts_engine.params import SamplingParams

    sampling = SamplingParams(n=plan.gen_n, max_new_tokens=steps, seed=0, stop=list(config.stop))
    outputs: dict[str, list] = {}

    def through(backend, label):
        def run(max_new_tokens):
            out = backend.generate(prompts, replace(sampling, max_new_tokens=max_new_tokens))
            outputs[label] = out
            return sum(s.num_tokens for row in out for s in row)

        return run

    static = HFBackend(model, tokenizer, device=plan.device, decode_loop="static", compile_decode=not plan.dry)
    with rec.step("hf backend"):
        speed["backend"] = _timed(rec, plan, "hf backend", through(static, "static"))
        baseline = "raw model.generate, static cache" if raw is speed.get("raw model.generate, static cache") else None
        ratio = speed["backend"]["tokens_per_s"] / raw["tokens_per_s"] if raw else None
        rec.figure(
            "generate: hf backend (HFBackend.generate)",
            speed["backend"]["tokens_per_s"],
            "tokens/s",
            baseline=baseline or "raw model.generate, dynamic cache",
            baseline_value=raw["tokens_per_s"] if raw else None,
            goal=f">= {BACKEND_GOAL:g}x static-cache model.generate",
            met=baseline is not None and ratio is not None and ratio >= BACKEND_GOAL,
            note=f"static loop, {'eager (dry run)' if plan.dry else 'compiled (reduce-overhead)'}; "
            f"{_of_floor(speed['backend'], floor)}; {shape}",
        )
    _free(torch)
    with rec.step("hf backend, dynamic loop"):
        dynamic = HFBackend(model, tokenizer, device=plan.device, decode_loop="dynamic")
        speed["dynamic"] = _timed(rec, plan, "hf backend, dynamic loop", through(dynamic, "dynamic"))
        _floor_figure(rec, "generate: hf backend, decode_loop=dynamic", speed["dynamic"], floor, shape)
        dynamic.decoder.release()
        _agreement_figure(rec, outputs)
    _free(torch)
    with rec.step("engine"):
        if "backend" not in speed:
            raise RuntimeError("the backend was not measured: no baseline for the engine")
        speed["engine"] = _engine_speed(rec, plan, static, problems)
        ratio = speed["engine"]["tokens_per_s"] / speed["backend"]["tokens_per_s"]
        rec.figure(
            "generate: engine (Engine.solve)",
            speed["engine"]["tokens_per_s"],
            "tokens/s",
            baseline="hf backend (HFBackend.generate)",
            baseline_value=speed["backend"]["tokens_per_s"],
            goal=f">= {ENGINE_GOAL:g}x the backend",
            met=ratio >= ENGINE_GOAL,
            note=f"no verifier, over the same backend object; {_of_floor(speed['engine'], floor)}",
        )


def bandwidth_floor(model, rows: int, context_tokens: float, copy_gbps: float) -> float:
    """Tokens/s of decode steps of `rows` rows that only read the weights once (tied embeddings once) and each
    row's keys and values of `context_tokens` positions once, at `copy_gbps` (the measured device copy)."""
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    element = next(model.parameters()).element_size()
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    kv_bytes = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * element  # per position
    step_seconds = (weight_bytes + rows * context_tokens * kv_bytes) / (copy_gbps * 1e9)
    return rows / step_seconds


def _copy_rate(plan: Plan, context: dict) -> float:
    """The machine section's device copy rate (GB/s), or measured here when that section did not run."""
    from .kernel_sections import _copy_gbps, _figure_value

    value = _figure_value(context, "machine", "device copy, read + written")
    if value:
        return value
    import torch

    return _copy_gbps(plan, torch.device(plan.device))


def _of_floor(speed: dict, floor: float) -> str:
    return f"{speed['tokens_per_s'] / floor:.1%} of the bandwidth floor"


def _floor_figure(rec: Recorder, label: str, speed: dict, floor: float, shape: str) -> None:
    rec.figure(
        label,
        speed["tokens_per_s"],
        "tokens/s",
        baseline="bandwidth floor",
        baseline_value=floor,
        note=f"{_of_floor(speed, floor)}; warm-up {speed['warmup_s']:.1f} s; {shape}",
    )


def _agreement_figure(rec: Recorder, outputs: dict) -> None:
    """Share of samples the static loop (compiled on the GPU) and the dynamic loop drew alike (same seeds): 1.0 in
    float32; in bf16 two kernels' roundings may part a sample's tokens at a near-tie, and then the rest differs."""
    if "static" not in outputs or "dynamic" not in outputs:
        return
    pairs = [(a, b) for ra, rb in zip(outputs["static"], outputs["dynamic"]) for a, b in zip(ra, rb)]
    same = sum(a.token_ids == b.token_ids for a, b in pairs) / len(pairs)
    prefix = statistics.mean(_common_prefix(a.token_ids, b.token_ids) / max(1, len(b.token_ids)) for a, b in pairs)
    rec.figure(
        "generate: static loop's samples equal to the dynamic loop's",
        same,
        "share",
        note=f"mean shared prefix {prefix:.1%} of a sample; same seeds, same prompts",
    )


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _free(torch) -> None:
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def build_model(shape: dict, dtype: str, device: str):
    """A randomly initialised Qwen2 of `shape` and the character tokenizer (ids past it decode to '')."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tts_engine.inputs.tiny import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    if shape["vocab_size"] < len(tokenizer):
        raise ValueError(f"model vocab_size must be >= {len(tokenizer)} (the tokenizer), got {shape['vocab_size']}")
    config = Qwen2Config(
        **shape,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config)
    return model.to(getattr(torch, dtype)).eval(), tokenizer


def raw_generate(model, tokenizer, prompts: list[str], n: int, max_new_tokens: int, cache: str | None = None) -> int:
    """Tokens generated by one model.generate call: full-vocabulary sampling at T = 1, n per prompt; `cache`
    "static" for transformers' static cache (on a GPU it compiles the decode step), None for the dynamic one."""
    import torch
    from transformers import GenerationConfig

    from tts_engine.backends.sampling import left_pad

    ids, mask = left_pad([tokenizer.encode(p, add_special_tokens=False) for p in prompts], tokenizer.pad_token_id)
    config = GenerationConfig(
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        max_new_tokens=max_new_tokens,
        num_return_sequences=n,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        cache_implementation=cache,
    )
    torch.manual_seed(0)
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids.to(model.device), attention_mask=mask.to(model.device), generation_config=config
        )
    return generated_tokens(out[:, ids.shape[1] :], tokenizer.eos_token_id)


def generated_tokens(new, eos_id: int) -> int:
    """Tokens of (rows, T) continuations up to and including each row's first end-of-sequence token."""
    import torch

    is_eos = new == eos_id
    first = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1) + 1, new.shape[1])  # (rows,)
    return int(first.sum())


def _engine_speed(rec: Recorder, plan: Plan, backend, problems) -> dict:
    """Engine.solve (no verifier) on the same problems over `backend` itself (its compiled step warm): the engine's
    own work around the backend is what this measures. The engine's checkpoint folder holds only the shipped
    model's prompt settings; the backend it would load is swapped for `backend`."""
    from tts_engine import Engine, backends
    from tts_engine.inputs.models import DEFAULT_MODEL
    from tts_engine.inputs.prompts import PromptConfig

    with tempfile.TemporaryDirectory(prefix="device_check_engine_") as path:
        PromptConfig.load(DEFAULT_MODEL).save(path)
        make_backend = backends.make_backend
        backends.make_backend = lambda name, model, **options: backend
        try:
            engine = Engine(path, backend="hf", verifier="none")
        finally:
            backends.make_backend = make_backend

        def through_engine(max_new_tokens):
            records = engine.solve(problems, n=plan.gen_n, max_new_tokens=max_new_tokens, seed=0, progress=False)
            return sum(r["compute"]["generated_tokens"] for r in records)

        return _timed(rec, plan, "engine", through_engine)


def _timed(rec: Recorder, plan: Plan, label: str, run) -> dict:
    """tokens/s of run(max_new_tokens) -> tokens: one warm-up call at full length (compilation and allocation
    included, timed apart), then up to plan.gen_repeats timed calls while the section's time allows; the median."""
    import torch

    _sync(torch)
    start = time.perf_counter()
    run(plan.gen_max_new_tokens)
    _sync(torch)
    warmup = time.perf_counter() - start
    seconds, tokens = [], 0
    for _ in range(plan.gen_repeats):
        if seconds and rec.time_left() < 1.5 * max(seconds) + 30:
            rec.note(f"{label}: {len(seconds)} timed run(s) of {plan.gen_repeats}, section time ran short")
            break
        _sync(torch)
        start = time.perf_counter()
        tokens = run(plan.gen_max_new_tokens)
        _sync(torch)
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    rec.row(
        op="generate",
        path=label,
        tokens=tokens,
        seconds=median,
        runs=len(seconds),
        every_run_s=seconds,
        warmup_s=warmup,
        tokens_per_s=tokens / median,
    )
    print(f"{label}: {tokens} tokens in {median:.3f} s (warm-up {warmup:.1f} s)", flush=True)
    return {"tokens": tokens, "seconds": median, "tokens_per_s": tokens / median, "warmup_s": warmup}


def _sampling_step(rec: Recorder, plan: Plan, rows: int, vocab: int, raw: dict | None) -> None:
    """One call of the backend's sampling step (`sample_step`: noise drawn on the device from each row's seed,
    the race, the raw log-prob and the top-20 confidence) on (rows, V) logits, beside the time per token of raw
    model.generate's whole decode step."""
    import torch

    from tts_engine.backends.sampling import sample_step
    from tts_engine.kernels.bench import measure

    device = torch.device(plan.device)
    logits = torch.randn(rows, vocab, device=device)
    seeds = torch.arange(rows, device=device)
    ms, _, _ = measure(lambda: sample_step(logits, 1.0, 1.0, seeds, 3, 20), device, max(2, plan.repeats // 2))
    step_ms = raw["seconds"] / plan.gen_max_new_tokens * 1e3 if raw else None
    rec.figure(
        f"generate: backend sampling step, {rows} rows x V={vocab}",
        ms,
        "ms",
        baseline="raw model.generate, whole decode step",
        baseline_value=step_ms,
        note="sample_step: each row's noise drawn on the device, eager (the static loop compiles it with the step)",
    )


def solve(rec: Recorder, plan: Plan, context: dict) -> None:
    """`tts solve` on the bundled set with the shipped model: on the plan's device, then on the CPU."""
    from tts_engine.running.summary import summarize

    runs = {}
    labels = ((plan.device, False),) if plan.dry else ((plan.device, False), ("cpu baseline", True))
    if plan.dry:
        rec.note("dry run: the CPU baseline run is left out (the device run is on the CPU already)")
    with tempfile.TemporaryDirectory(prefix="device_check_solve_") as work:
        for label, hide_gpu in labels:
            if runs and rec.time_left() < 1.3 * runs[next(iter(runs))]["wall_s"] + 10:
                rec.note(f"skipped the {label} run: section time ran short")
                break
            with rec.step(f"tts solve ({label})"):
                out = Path(work) / f"run{len(runs)}.jsonl"
                wall = _run_solve(plan, out, hide_gpu, timeout=rec.time_left() - 5)
                summary = summarize(_read(out))
                tokens = summary["generated_tokens_per_problem"] * summary["problems"]
                runs[label] = {"wall_s": wall, "tokens_per_s": tokens / wall, **summary}
                rec.row(
                    op="solve",
                    run=label,
                    wall_s=wall,
                    problems=summary["problems"],
                    samples=summary["samples"],
                    generated_tokens=tokens,
                    engine_s=summary["time_s"],
                    pass_at_1=summary["pass@1"],
                    accuracy=summary["accuracy"],
                )
    first = runs.get(plan.device)
    if first is None:
        return
    cpu = runs.get("cpu baseline", {})
    headline = f"weighted:{first['headline_kind']}" if first.get("headline_kind") else "majority"
    accuracy = first["accuracy"].get(headline)
    rec.figure(
        f"solve: tts solve wall time on {plan.device}",
        first["wall_s"],
        "s",
        baseline="same command on the CPU",
        baseline_value=cpu.get("wall_s"),
        note=f"{first['problems']} problems x {first['samples'] // max(1, first['problems'])} samples; "
        f"start-up{'' if plan.dry else ' and compilation'} included; {headline} accuracy {accuracy}; "
        f"pass@1 {first['pass@1']}",
    )
    rec.figure(
        f"solve: generated tokens/s on {plan.device}",
        first["tokens_per_s"],
        "tokens/s",
        baseline="same command on the CPU",
        baseline_value=cpu.get("tokens_per_s"),
        note="generated tokens over the whole command's wall time",
    )
    rec.figure(
        f"solve: {headline} accuracy on {plan.device}",
        accuracy,
        "accuracy",
        baseline="same command on the CPU",
        baseline_value=cpu.get("accuracy", {}).get(headline),
        note=f"the verifier's headline kind ({first.get('headline_kind')}); sampling is seeded per row, so the "
        "devices differ only where float rounding parts a sample",
    )


def _run_solve(
    plan: Plan, out: Path, hide_gpu: bool, timeout: float, args=None, peak_file: Path | None = None
) -> float:
    """Wall seconds of one `tts solve --out OUT` in its own process (as a user runs it); `args` replace the plan's
    solve arguments; `peak_file` receives the process's peak GPU memory (bytes, JSON) when it exits."""
    prelude = "from tts_engine.cli import main; main()"
    if peak_file is not None:
        prelude = (
            "import atexit, json, torch; atexit.register(lambda: open(%r, 'w').write(json.dumps("
            "torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None))); " % str(peak_file)
        ) + prelude
    command = [sys.executable, "-P", "-c", prelude, "solve", "--quiet", "--out", str(out)]
    command += list(plan.solve_args if args is None else args)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="") if hide_gpu else dict(os.environ)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=max(5.0, timeout))
    wall = time.perf_counter() - started
    print(done.stdout[-2000:], done.stderr[-2000:], sep="\n", flush=True)
    if done.returncode != 0:
        raise RuntimeError(f"tts solve exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall


def e2e(rec: Recorder, plan: Plan, context: dict) -> None:
    """`tts solve` end to end on randomly initialised checkpoints of real shapes (Qwen2.5-0.5B's and -1.5B's), N
    samples of a fixed token budget on bundled prompts, scored by the yes/no verifier (the checkpoint asked "Is
    this solution correct?"): generated tokens/s, verifier tokens/s, the share of time verifying, peak GPU memory.
    Random weights write no answers worth grading; these are throughput figures. Start-up, loading and
    compilation are in the wall time, not in the tokens/s (those come from the engine's own times)."""
    dtype = "float32" if plan.dry else "bfloat16"
    for label, shape in plan.e2e_models:
        if rec.time_left() < 30:
            rec.note(f"e2e {label}: not run, section time ran short")
            continue
        with rec.step(f"e2e {label}"):
            _e2e_one(rec, plan, label, shape, dtype)


def _e2e_one(rec: Recorder, plan: Plan, label: str, shape: dict, dtype: str) -> None:
    import torch

    from tts_engine.inputs.models import DEFAULT_MODEL
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.running.summary import summarize

    with tempfile.TemporaryDirectory(prefix="device_check_e2e_") as work:
        folder = Path(work) / "model"
        model, tokenizer = build_model(shape, dtype, plan.device)
        params = sum(p.numel() for p in model.parameters())
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        replace(PromptConfig.load(DEFAULT_MODEL), verify_form="yes_no").save(folder)  # the unified yes/no verifier
        del model
        _free(torch)
        out, peak_file = Path(work) / "results.jsonl", Path(work) / "peak.json"
        args = [
            "--model",
            str(folder),
            "--limit",
            str(plan.e2e_prompts),
            "--n",
            str(plan.e2e_n),
            "--max-new-tokens",
            str(plan.e2e_max_new_tokens),
            "--backend-option",
            f"dtype={dtype}",
        ]
        wall = _run_solve(plan, out, False, rec.time_left() - 5, args=args, peak_file=peak_file)
        summary = summarize(_read(out))
        peak = json.loads(peak_file.read_text()) if peak_file.is_file() else None
    problems = summary["problems"]
    generated = summary["generated_tokens_per_problem"] * problems
    verifier = summary["verifier_tokens_per_problem"] * problems
    total, verifying = summary["time_s"], summary["verify_time_s"]
    generating = max(total - verifying, 1e-9)
    what = (
        f"{params:,} parameters, {dtype}; {problems} prompts x {plan.e2e_n} samples x {plan.e2e_max_new_tokens} "
        f"tokens; wall {wall:.0f} s with start-up and compilation; headline {summary['headline_kind']}"
    )
    rec.row(
        op="e2e",
        model=label,
        parameters=params,
        wall_s=wall,
        engine_s=total,
        verify_s=verifying,
        generated_tokens=generated,
        verifier_tokens=verifier,
        peak_gpu_bytes=peak,
        headline_kind=summary["headline_kind"],
    )
    rec.figure(f"e2e {label}: generated tokens/s", generated / generating, "tokens/s", note=what)
    rec.figure(
        f"e2e {label}: verifier tokens/s",
        verifier / verifying if verifying else None,
        "tokens/s",
        note="tokens the yes/no verifier computed (past the prefix cache's hits) over its time",
    )
    rec.figure(f"e2e {label}: share of time verifying", verifying / total if total else None, "share")
    rec.figure(
        f"e2e {label}: peak GPU memory",
        peak / 2**30 if peak else None,
        "GiB",
        note="torch.cuda.max_memory_allocated of the tts solve process",
    )


def _read(path: Path) -> list[dict]:
    from tts_engine.running.results import read_results

    return list(read_results(path))


def _sync(torch) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
