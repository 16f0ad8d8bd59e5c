"""How often a checkpoint's own units-first recompute of a problem ends right, beside its solutions: the figure
behind the thinker's check (tasks/arith/thinking.py).

    python scripts/units_first_check.py [--model DIR] [--seed 8601] [--levels 1-8] [--per-level 25] [--temperature 1]

For each problem of a fresh set (`tts train make-problems`'s generator), one solution sampled from the generation
prompt and one units-first chain sampled after the recompute verifier's request (the problem restated units digit
first by the task's code, as the verifier reads it): the share of each that ends on the right answer, by level.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import torch

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.models import default_model_path
from tts_engine.inputs.prompts import build_prompt
from tts_engine.params import SamplingParams
from tts_engine.tasks.arith.chain import units_first
from tts_engine.tasks.arith.generator import make_problem_set, parse_levels
from tts_engine.tasks.arith.recompute import ANSWER_WORD, check_query
from tts_engine.training.checkpoint import load_model


def recompute_answer(text: str) -> str | None:
    """The units-first answer a recompute chain ends on (`answer 471`), or None."""
    for line in text.split("\n"):
        if line.startswith(ANSWER_WORD + " "):
            return line[len(ANSWER_WORD) + 1 :].strip()
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(default_model_path()))
    parser.add_argument("--seed", type=int, default=8601)
    parser.add_argument("--levels", default="1-8")
    parser.add_argument("--per-level", type=int, default=25)
    parser.add_argument("--temperature", type=float, default=1.0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    model, tokenizer, config = load_model(args.model)
    model.eval()
    backend = HFBackend(model, tokenizer, max_batch_rows=256, prefix_cache_tokens=0)
    problems = make_problem_set(args.seed, parse_levels(args.levels), args.per_level)
    prompts = [build_prompt(config, p.problem) for p in problems]
    params = SamplingParams(n=1, temperature=args.temperature, max_new_tokens=300, seed=args.seed)
    solutions = backend.generate(prompts, params)
    checks = backend.generate([check_query(config, p.problem, q) for p, q in zip(problems, prompts)], params)
    right = defaultdict(lambda: [0, 0, 0])  # level -> solutions right, checks right, problems
    for p, solution, check in zip(problems, solutions, checks):
        tally = right[p.level]
        tally[0] += solution_reward(p.answer, solution[0].text) > 0
        tally[1] += recompute_answer(check[0].text) == units_first(int(p.answer))
        tally[2] += 1
    print(f"{args.model}: seed {args.seed}, temperature {args.temperature}; share right, by level")
    print("level  solution  units-first check")
    for level in sorted(right):
        s, c, n = right[level]
        print(f"{level:>5}  {s / n:>8.3f}  {c / n:>17.3f}")
    s, c, n = (sum(t[k] for t in right.values()) for k in range(3))
    print(f"  all  {s / n:>8.3f}  {c / n:>17.3f}")


if __name__ == "__main__":
    main()
