"""Step-labelled samples of the arithmetic task for process_eval, written without a generator: per problem its
right solution and K solutions with one planted error each (a wrong result, carried value, operand or answer;
`tts_engine.training.rederive.plant_error`: later lines carry the wrong value on correctly), so a verifier's
first-error detection is measured on chains longer than any generator here solves.

    python scripts/planted_samples.py --problems long68.jsonl --model runs/sft_checker --wrong 3 --out planted.json
    python -P -m tts_engine.eval.process_eval --problems long68.jsonl --samples planted=planted.json --verifier N=DIR ...

The file is what process_eval writes for a generator (`{"prompts": [P], "texts": [P][1 + K]}`); the prompts are
`--model`'s generation prompts (a recompute verifier reads its check after the prompt). Labels are not stored:
process_eval recomputes every step (`arith_first_error`).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from tts_engine.tasks.arith.chain import exact_chain


def right_solution(problem: str) -> str:
    """The task's solution of `problem`: one line per operation, left to right, then the boxed answer."""
    lines = exact_chain(problem)
    return "\n".join(lines + [f"\\boxed{{{lines[-1].rsplit('=', 1)[1]}}}"])


def planted_texts(problem: str, wrong: int, rng: random.Random) -> list[str]:
    """The right solution, then `wrong` solutions each with one planted error (distinct where the draws allow)."""
    from tts_engine.training.rederive import plant_error

    right = right_solution(problem)
    texts = [right]
    for _ in range(wrong):
        planted = plant_error(problem, rng)
        for _retry in range(8):
            if planted not in texts:
                break
            planted = plant_error(problem, rng)
        texts.append(planted)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", required=True, help="The task's problems (JSONL, `tts train make-problems`).")
    parser.add_argument("--model", required=True, help="Checkpoint whose generation prompt the samples get.")
    parser.add_argument("--wrong", type=int, default=3, help="Solutions with a planted error per problem.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()

    from tts_engine.backends.hf import HFBackend
    from tts_engine.inputs.prompts import PromptConfig, build_prompt
    from tts_engine.tasks.arith.generator import load_problems

    problems = load_problems(args.problems)
    backend, config = HFBackend(args.model, device="cpu"), PromptConfig.load(args.model)
    rng = random.Random(args.seed)
    prompts = [build_prompt(config, p["problem"], backend) for p in problems]
    texts = [planted_texts(p["problem"], args.wrong, rng) for p in problems]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"prompts": prompts, "texts": texts}))
    print(f"{args.out}: {len(problems)} problems x (1 right + {args.wrong} planted)")


if __name__ == "__main__":
    main()
