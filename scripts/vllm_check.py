"""Check of the vllm backend on a GPU: verifier scores against the hf backend, throughput beside raw vLLM.

    python scripts/vllm_check.py [--model DIR] [--problems 64] [--n 8] [--max-new-tokens 128]

1. Generates one greedy solution per problem with the vllm backend, builds the verification prompts, and scores
   them with both the vllm and the hf backend (same checkpoint, float32): prints the largest differences of
   log P(Yes), log P(No) and of both score normalisations, and fails if one exceeds --tolerance.
2. Samples N solutions per problem with the engine's vllm backend and with raw `LLM.generate` on the same
   requests (same token ids, seeds and options), each warmed up once and timed over --repeats runs: prints
   generated tokens/s of both and the backend's overhead (goal: under 10%).
Run it through scripts/vllm_check.sh, which installs vLLM if it is missing (it needs network; the
GPU machine without network runs scripts/device_check.sh instead).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="checkpoint directory (default: the embedded default model)")
    parser.add_argument("--problems", type=int, default=64, help="problems of the bundled set to use")
    parser.add_argument("--n", type=int, default=8, help="samples per problem in the throughput test")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side (the median is shown)")
    parser.add_argument("--tolerance", type=float, default=2e-3, help="largest allowed |difference| of log-probs")
    parser.add_argument("--dtype", default="float32", help="dtype of both backends for the score comparison")
    parser.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=0.5,
        help="vLLM's share of the GPU (the hf backend shares the GPU)",
    )
    parser.add_argument("--max-model-len", type=int, default=None)
    return parser.parse_args(argv)


def load_prompts(model_path: str, count: int, backend):
    """(generation prompts, problem texts, prompt config) of the first `count` bundled problems."""
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems
    from tts_engine.inputs.prompts import PromptConfig, build_prompt

    config = PromptConfig.load(model_path)
    problems = load_problems(default_problems_path(), limit=count)
    return [build_prompt(config, p.text, backend) for p in problems], [p.text for p in problems], config


def check_scores(vllm_backend, hf_backend, model_path: str, args) -> dict:
    """Largest |vllm - hf| over the verification prompts of greedy solutions."""
    from tts_engine.inputs.prompts import build_verify_prompt
    from tts_engine.params import SamplingParams
    from tts_engine.verifiers.unified import single_token_id, yes_no_scores

    prompts, texts, config = load_prompts(model_path, args.problems, vllm_backend)
    greedy = SamplingParams(n=1, temperature=0.0, max_new_tokens=args.max_new_tokens, stop=list(config.stop))
    solutions = [s[0].text for s in vllm_backend.generate(prompts, greedy)]
    same_text = sum(a[0].text == b for a, b in zip(hf_backend.generate(prompts[:16], greedy), solutions[:16]))
    verify = [build_verify_prompt(config, t, p, s, vllm_backend) for t, p, s in zip(texts, prompts, solutions)]
    yes = single_token_id(vllm_backend, config.yes_token, "yes_token")
    no = single_token_id(vllm_backend, config.no_token, "no_token")
    got = vllm_backend.yes_no_logprobs(verify, yes, no)
    want = hf_backend.yes_no_logprobs(verify, yes, no)
    diffs = {"logp_yes": 0.0, "logp_no": 0.0, "verifier_vocab": 0.0, "verifier_yes_no": 0.0}
    for (gy, gn), (wy, wn) in zip(got, want):
        diffs["logp_yes"] = max(diffs["logp_yes"], abs(gy - wy))
        diffs["logp_no"] = max(diffs["logp_no"], abs(gn - wn))
        g, w = yes_no_scores(gy, gn), yes_no_scores(wy, wn)
        for kind in ("verifier_vocab", "verifier_yes_no"):
            diffs[kind] = max(diffs[kind], abs(g[kind] - w[kind]))
    return {"prompts": len(verify), "greedy_same_text_of_16": same_text, "max_abs_diff": diffs}


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median seconds of `repeats` calls after one warm-up call, and the last result."""
    result = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def check_throughput(vllm_backend, model_path: str, args) -> dict:
    """Generated tokens/s of the engine's backend and of raw LLM.generate on the same requests."""
    from vllm import SamplingParams as RawParams

    from tts_engine.backends.vllm import build_sampling_kwargs, prompt_seed
    from tts_engine.params import SamplingParams

    prompts, _, _ = load_prompts(model_path, args.problems, vllm_backend)
    params = SamplingParams(n=args.n, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    encoded = [vllm_backend.encode(p) for p in prompts]
    requests = [{"prompt_token_ids": ids} for ids in encoded]
    raw_params = [
        RawParams(
            **build_sampling_kwargs(
                params,
                seed=prompt_seed(0, p),
                max_tokens=min(args.max_new_tokens, vllm_backend.max_model_len - len(ids)),
            )
        )
        for p, ids in zip(prompts, encoded)
    ]
    llm = vllm_backend.llm
    raw_s, raw_out = timed(lambda: llm.generate(requests, raw_params, use_tqdm=False), args.repeats)
    eng_s, eng_out = timed(lambda: vllm_backend.generate(prompts, params), args.repeats)
    raw_tokens = sum(len(c.token_ids) for o in raw_out for c in o.outputs)
    eng_tokens = sum(s.num_tokens for samples in eng_out for s in samples)
    return {
        "requests": len(prompts),
        "n": args.n,
        "raw_tokens": raw_tokens,
        "engine_tokens": eng_tokens,
        "raw_tokens_per_s": raw_tokens / raw_s,
        "engine_tokens_per_s": eng_tokens / eng_s,
        "overhead_pct": 100.0 * (eng_s / raw_s - 1.0),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    from tts_engine.backends.hf import HFBackend
    from tts_engine.backends.vllm import VLLMBackend
    from tts_engine.inputs.models import resolve_model

    model_path, label = resolve_model(args.model)
    print(f"model: {label}", flush=True)
    vllm_backend = VLLMBackend(
        model_path,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        seed=0,
    )
    hf_backend = HFBackend(model_path, dtype=args.dtype)
    scores = check_scores(vllm_backend, hf_backend, model_path, args)
    print("scores (vllm vs hf):", json.dumps(scores), flush=True)
    del hf_backend
    speed = check_throughput(vllm_backend, model_path, args)
    print(f"{'':24}{'tokens':>10}{'tokens/s':>12}")
    print(f"{'raw LLM.generate':24}{speed['raw_tokens']:>10}{speed['raw_tokens_per_s']:>12.0f}")
    print(f"{'engine vllm backend':24}{speed['engine_tokens']:>10}{speed['engine_tokens_per_s']:>12.0f}")
    print(f"backend overhead: {speed['overhead_pct']:+.1f}% (goal: under 10%)")
    print("throughput:", json.dumps(speed), flush=True)
    worst = max(scores["max_abs_diff"]["logp_yes"], scores["max_abs_diff"]["logp_no"])
    if worst > args.tolerance:
        print(f"FAIL: verifier log-probs differ by {worst:.2e} > tolerance {args.tolerance:.0e}")
        return 1
    print(f"OK: verifier log-probs agree within {worst:.2e} (tolerance {args.tolerance:.0e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
