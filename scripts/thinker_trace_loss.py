"""Where a thinker checkpoint stands on its own training traces: its mean loss (nats a token) on each part of them
(the solution, the check's request, the problem units digit first, the check's steps and answer, the end of
thinking, the answer), over traces built as training builds them (`tasks/arith/thinking.trace` of each record's
first chain) from the chains file. A part whose loss stays high is what sampling at temperature 1 gets wrong.

    python scripts/thinker_trace_loss.py DIR [--chains runs/thinker_chains.jsonl] [--traces 40] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict

import torch

from tts_engine.inputs.prompts import build_prompt
from tts_engine.tasks.arith.thinking import thinker_prompt_config, trace
from tts_engine.training.batching import completion_logprobs
from tts_engine.training.checkpoint import load_model
from tts_engine.training.thinker.trainer import load_chains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--chains", default="runs/thinker_chains.jsonl")
    parser.add_argument("--traces", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    model, tokenizer, prompt_config = load_model(args.model)
    model.eval()
    prompt_config = thinker_prompt_config(prompt_config)
    records = load_chains(args.chains, log=lambda *_: None)
    rng = random.Random(args.seed)
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    loss, tokens = defaultdict(float), defaultdict(int)
    for record in rng.sample(records, args.traces):
        pieces = trace(record["problem"], record["chains"][0])
        ids, spans = enc(build_prompt(prompt_config, record["problem"])), []
        for piece in pieces:
            piece_ids = enc(piece.text)
            if piece.learn:
                spans.append((len(ids), len(ids) + len(piece_ids), piece.part))
            ids += piece_ids
        x = torch.tensor([ids])  # (1, T)
        with torch.no_grad():
            logp = completion_logprobs(model, x, torch.ones_like(x))[0]  # (T,): log P(token t | tokens < t)
        for start, end, part in spans:
            loss[part] -= logp[start:end].sum().item()
            tokens[part] += end - start
    print(f"{args.model}: {args.traces} traces; mean nats a token")
    for part in tokens:
        print(f"  {part:20s} {loss[part] / tokens[part]:.3f}  ({tokens[part]} tokens)")


if __name__ == "__main__":
    main()
