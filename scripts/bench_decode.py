"""Generated tokens/s of `HFBackend.generate` on the embedded default model, decode loop by decode loop.

    python scripts/bench_decode.py                         # dynamic and static loops, 32 bundled prompts x 16
    python scripts/bench_decode.py --loop static --compile # the static loop compiled (inductor on a CPU)
    python scripts/bench_decode.py --threads 1 --rounds 3

Each loop gets one warm-up call (compilation included, timed apart), then `--rounds` timed calls, alternating
between the loops so that machine noise falls on all alike; prints every call's time, each loop's median
tokens/s, and whether every loop drew the same samples as the first (same seeds: they must).
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loop", action="append", choices=("dynamic", "static"), help="repeatable; default both")
    parser.add_argument("--compile", action="store_true", help="compile the static loop's step (torch.compile)")
    parser.add_argument("--prompts", type=int, default=32, help="bundled problems, spread over the levels")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()

    import torch

    from tts_engine.backends.hf import HFBackend
    from tts_engine.inputs.models import DEFAULT_MODEL, default_problems_path
    from tts_engine.inputs.problems import load_problems
    from tts_engine.inputs.prompts import PromptConfig, build_prompt
    from tts_engine.params import SamplingParams

    if args.threads:
        torch.set_num_threads(args.threads)
    problems = load_problems(default_problems_path())
    problems = problems[:: max(1, len(problems) // args.prompts)][: args.prompts]
    config = PromptConfig.load(DEFAULT_MODEL)
    prompts = [build_prompt(config, p.text) for p in problems]
    params = SamplingParams(n=args.n, max_new_tokens=args.max_new_tokens, seed=0, stop=list(config.stop))
    loops = args.loop or ["dynamic", "static"]
    backends = {
        loop: HFBackend(str(DEFAULT_MODEL), decode_loop=loop, compile_decode=args.compile and loop == "static")
        for loop in loops
    }
    seconds: dict[str, list[float]] = {loop: [] for loop in loops}
    samples, tokens = {}, 0
    for loop, backend in backends.items():
        start = time.perf_counter()
        samples[loop] = backend.generate(prompts, params)
        print(f"{loop}: warm-up {time.perf_counter() - start:.1f} s", flush=True)
    for round_index in range(args.rounds):
        for loop in loops if round_index % 2 == 0 else list(reversed(loops)):
            start = time.perf_counter()
            out = backends[loop].generate(prompts, params)
            seconds[loop].append(time.perf_counter() - start)
            tokens = sum(s.num_tokens for row in out for s in row)
            print(f"round {round_index + 1} {loop}: {tokens} tokens in {seconds[loop][-1]:.2f} s", flush=True)
    first = [[s.token_ids for s in row] for row in samples[loops[0]]]
    for loop in loops:
        median = statistics.median(seconds[loop])
        same = [[s.token_ids for s in row] for row in samples[loop]] == first
        print(f"{loop}: median {median:.2f} s, {tokens / median:,.0f} tokens/s; samples equal to {loops[0]}'s: {same}")


if __name__ == "__main__":
    main()
