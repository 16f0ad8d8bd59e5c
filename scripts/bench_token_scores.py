"""CPU cost of teacher-forced scoring in the hf backend: the old per-row log_softmax against token_logprobs.

    .venv/bin/python -P scripts/bench_token_scores.py [--threads N] [--rows 256] [--repeats 20]

1. The scoring step alone, at the embedded default's head (D = 192, V = 102, float32) on `--rows` ragged rows
   of 8-160 continuation tokens left-padded into one batch: the old way (per row, `log_softmax(head(h))`,
   gather, tolist) and the new one (one flat gather of the positions, `token_logprobs`, split), same inputs.
2. The whole `HFBackend.continuation_token_logprobs` on the embedded default model (forward pass included):
   the backend's method against the old per-row loop (a subclass keeps it as the baseline), on the bundled
   problems' prompts with their reference solutions as continuations.
Both print the median of `--repeats` calls and the largest |difference| between the two ways' log-probs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def old_scores(head, hidden: torch.Tensor, lengths: list[int], targets: list[list[int]]) -> list[list[float]]:
    """The per-row way the backend used before: (C, V) float32 log-softmax per row, then gather."""
    out = []
    for b, (n, c) in enumerate(zip(lengths, targets)):
        first = hidden.shape[1] - n - 1
        logp = torch.log_softmax(head(hidden[b, first : first + n]).float(), dim=-1)  # (C, V)
        out.append(logp.gather(1, torch.tensor(c)[:, None])[:, 0].tolist())
    return out


def new_scores(head, hidden: torch.Tensor, lengths: list[int], targets: list[list[int]]) -> list[list[float]]:
    """What the backend does now: every row's positions in one (T, D) gather and one token_logprobs call."""
    from tts_engine.backends.hf import HFBackend
    from tts_engine.kernels import token_logprobs

    flat = HFBackend.continuation_positions(hidden, lengths)  # (T, D)
    logp = token_logprobs(flat, head.weight, [t for c in targets for t in c], head.bias).tolist()
    out, at = [], 0
    for n in lengths:
        out.append(logp[at : at + n])
        at += n
    return out


def median_ms(old, new, repeats: int):
    """((old median ms, its result), (new median ms, its result)), the calls alternating after one warm-up
    each, so that load from other processes falls on both alike."""
    results = [old(), new()]
    times = ([], [])
    for _ in range(repeats):
        for i, fn in enumerate((old, new)):
            start = time.perf_counter()
            results[i] = fn()
            times[i].append((time.perf_counter() - start) * 1e3)
    return (statistics.median(times[0]), results[0]), (statistics.median(times[1]), results[1])


def max_diff(a: list[list[float]], b: list[list[float]]) -> float:
    return max((abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)), default=0.0)


def scoring_step(rows: int, repeats: int) -> None:
    gen = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(192, 102, bias=False)
    lengths = torch.randint(8, 161, (rows,), generator=gen).tolist()
    hidden = torch.randn(rows, max(lengths) + 40, 192, generator=gen)  # (U, R, D)
    targets = [torch.randint(0, 102, (n,), generator=gen).tolist() for n in lengths]
    with torch.inference_mode():
        (old_ms, old), (new_ms, new) = median_ms(
            lambda: old_scores(head, hidden, lengths, targets),
            lambda: new_scores(head, hidden, lengths, targets),
            repeats,
        )
    print(
        f"scoring step, {rows} rows, {sum(lengths)} tokens, D=192 V=102: old per-row {old_ms:.2f} ms, "
        f"token_logprobs {new_ms:.2f} ms ({old_ms / new_ms:.2f}x); max |dlogp| {max_diff(old, new):.1e}"
    )


def whole_call(rows: int, repeats: int) -> None:
    from tts_engine.backends.base import PromptTooLongError
    from tts_engine.backends.hf import HFBackend
    from tts_engine.inputs.problems import load_problems

    class OldHF(HFBackend):
        @torch.inference_mode()
        def continuation_token_logprobs(self, prompts, continuations):
            rows = [(self.encode(p), self.encode(c)) for p, c in zip(prompts, continuations)]
            for i, (p, c) in enumerate(rows):
                if len(p) + len(c) > self.max_model_len:
                    raise PromptTooLongError(i, len(p) + len(c), self.max_model_len)
            body, head = self.model.get_decoder(), self.model.get_output_embeddings()
            out = []
            for start in range(0, len(rows), self.max_batch_rows):
                part = rows[start : start + self.max_batch_rows]
                reusable = [len(p) - 1 for p, _ in part]
                result, _, _ = self._forward_prompts(body, [p + c for p, c in part], reusable=reusable)
                hidden = result.last_hidden_state
                out += old_scores(head, hidden, [len(c) for _, c in part], [c for _, c in part])
            return out

    from importlib.resources import files

    assets = files("tts_engine") / "assets"
    problems = load_problems(str(assets / "problems" / "arith.jsonl"))[:rows]
    prompts = [p.text + "\n" for p in problems]
    continuations = [f" {p.text} = {p.reference}." * 2 for p in problems]  # ~60-90 tokens each
    old_backend, new_backend = (
        cls(str(assets / "default_model"), device="cpu", prefix_cache_tokens=0) for cls in (OldHF, HFBackend)
    )
    (old_ms, old), (new_ms, new) = median_ms(
        lambda: old_backend.continuation_token_logprobs(prompts, continuations),
        lambda: new_backend.continuation_token_logprobs(prompts, continuations),
        repeats,
    )
    print(
        f"continuation_token_logprobs, {len(prompts)} pairs, default model: old per-row {old_ms:.1f} ms, "
        f"token_logprobs {new_ms:.1f} ms ({old_ms / new_ms:.2f}x); max |dlogp| {max_diff(old, new):.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--rows", type=int, default=256, help="rows (pairs) per call (default 256)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per way (default 20)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    scoring_step(args.rows, args.repeats)
    whole_call(args.rows, max(3, args.repeats // 4))


if __name__ == "__main__":
    main()
