"""How much a checkpoint's solutions depend on where they stand: its mean loss (nats a token) on the exact solutions
of a fresh set, written right after the problem (as it was trained), after a `<think>` line, and as a second
solution after a first one and "wait", with and without the problem written again. The figures behind the
thinker's trace (tasks/arith/thinking.py): it opens with the solution itself (no start marker), and writes the
problem again before each next solution.

    python scripts/thinker_layout.py [--model DIR] [--seed 8603] [--levels 1-8] [--per-level 8]
"""

from __future__ import annotations

import argparse

import torch

from tts_engine.inputs.models import default_model_path
from tts_engine.inputs.prompts import build_prompt
from tts_engine.tasks.arith.chain import exact_chain
from tts_engine.tasks.arith.generator import make_problem_set, parse_levels
from tts_engine.training.batching import completion_logprobs
from tts_engine.training.checkpoint import load_model

LAYOUTS = {  # name -> the text between the prompt and the solution scored, given the prompt and the solution
    "right after the problem": lambda prompt, solution: "",
    "after a <think> line": lambda prompt, solution: "<think>\n",
    "second, after the first and wait": lambda prompt, solution: solution + "wait\n",
    "second, the problem written again": lambda prompt, solution: solution + "wait\n" + prompt,
}


def solution_loss(model, tokenizer, context: str, solution: str) -> tuple[float, int]:
    """Summed negative log-likelihood of `solution` after `context`, and its tokens."""
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    head, tail = enc(context), enc(solution)
    ids = torch.tensor([head + tail])  # (1, T)
    with torch.no_grad():
        logp = completion_logprobs(model, ids, torch.ones_like(ids))[0]  # (T,): log P(token t | tokens < t)
    return -logp[len(head) :].sum().item(), len(tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(default_model_path()))
    parser.add_argument("--seed", type=int, default=8603)
    parser.add_argument("--levels", default="1-8")
    parser.add_argument("--per-level", type=int, default=8)
    args = parser.parse_args()
    model, tokenizer, prompt_config = load_model(args.model)
    model.eval()
    problems = make_problem_set(args.seed, parse_levels(args.levels), args.per_level)
    print(f"{args.model}: {len(problems)} problems, exact solutions; mean nats a token of the solution")
    for name, between in LAYOUTS.items():
        total = tokens = 0
        for p in problems:
            prompt, solution = (
                build_prompt(prompt_config, p.problem),
                "".join(line + "\n" for line in exact_chain(p.problem)),
            )
            loss, count = solution_loss(model, tokenizer, prompt + between(prompt, solution), solution)
            total, tokens = total + loss, tokens + count
        print(f"  {name:36s} {total / tokens:.3f}")


if __name__ == "__main__":
    main()
