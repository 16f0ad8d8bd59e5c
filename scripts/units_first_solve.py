"""How often a checkpoint solves a fresh set when it writes the recompute check itself, sampled freely: after the
recompute verifier's request with the problem given units digit first (the layout the check was trained in), after
the request alone (it writes the problem in that form itself), and, beside them, its own solutions. The figures
behind the thinker's trace (tasks/arith/thinking.py): the default solves the problem units digit first far more
often than in its solutions, but cannot write the problem in that form.

    python scripts/units_first_solve.py [--model DIR] [--seed 8603] [--levels 1-8] [--per-level 10] [--n 4]
"""

from __future__ import annotations

import argparse
import re

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.models import default_model_path
from tts_engine.inputs.prompts import build_prompt
from tts_engine.params import SamplingParams
from tts_engine.tasks.arith.chain import ANSWER_WORD, read_units_first, restate
from tts_engine.tasks.arith.generator import make_problem_set, parse_levels
from tts_engine.tasks.arith.recompute import RECOMPUTE_REQUEST
from tts_engine.training.checkpoint import load_model

ANSWER = re.compile(rf"^{ANSWER_WORD} (\d+)$", re.MULTILINE)


def check_answer(text: str) -> int | None:
    """The first answer line a check writes, read back (None when it writes none)."""
    found = ANSWER.search(text)
    return read_units_first(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(default_model_path()))
    parser.add_argument("--seed", type=int, default=8603)
    parser.add_argument("--levels", default="1-8")
    parser.add_argument("--per-level", type=int, default=10)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    args = parser.parse_args()
    model, tokenizer, prompt_config = load_model(args.model)
    backend = HFBackend(model, tokenizer, device="cpu", prefix_cache_tokens=0)
    problems = make_problem_set(args.seed, parse_levels(args.levels), args.per_level)
    prompts = [build_prompt(prompt_config, p.problem) for p in problems]
    params = SamplingParams(n=args.n, temperature=args.temperature, max_new_tokens=256, seed=0)
    request = RECOMPUTE_REQUEST.replace("{problem}\n", "")
    layouts = {
        "its own solutions": (prompts, lambda p, s: solution_reward(p.answer, s.text) == 1.0),
        "the check, problem given units first": (
            [q + RECOMPUTE_REQUEST.replace("{problem}", restate(p.problem)) for q, p in zip(prompts, problems)],
            lambda p, s: check_answer(s.text) == int(p.answer),
        ),
        "the check, problem written by the model": (
            [q + request for q in prompts],
            lambda p, s: check_answer(s.text) == int(p.answer),
        ),
    }
    print(f"{args.model}: {len(problems)} problems (seed {args.seed}), {args.n} samples each, T={args.temperature}")
    for name, (queries, right) in layouts.items():
        rows = backend.generate(queries, params)
        rate = sum(right(p, s) for p, row in zip(problems, rows) for s in row) / (len(problems) * args.n)
        print(f"  {name:40s} right {rate:.3f}")


if __name__ == "__main__":
    main()
