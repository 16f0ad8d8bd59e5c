"""How much of a batch a Tango verifier step can learn from, and where each verifier loss puts its weight.

    python scripts/verdict_signal.py --samples EVAL/samples_sft.json --verifier NAME=DIR [--verifier ...] [--group 8]

EVAL/samples_*.json is what `python -P -m tts_engine.eval.process_eval` wrote: a generator's N samples per bundled
problem. Each verifier must serve the recompute check (`verify_form: recompute`). For that form the verdict of a
sampled verification is "Yes" with probability exactly P(transcript), the score the engine serves (each line is
sampled after the solution's own earlier lines, and "Yes" means every sampled line is the solution's), so one
teacher-forced read gives, for every solution and with no sampling:

- judged wrong: the share whose verdict at P = .5 disagrees with the rule-based outcome (what balanced accuracy counts);
- silent@V: the expected share of groups of V sampled verdicts that all agree, P^V + (1-P)^V: such a group carries no
  GRPO advantage, so a Tango verifier step learns nothing from it; and the same among the solutions judged wrong,
  the errors the step exists to fix;
- loss weight on errors: per solution every loss here pushes along +-grad log P(transcript). The expected verdict
  reward weighs a solution by P; GRPO, which divides each group's advantages by their standard deviation
  sqrt(P (1 - P)), by sqrt(P / (1 - P)) in expectation (many samples per group); the outcome cross-entropy (the (c)
  baseline) by 1 (answer right) or P / (1 - P) (wrong), i.e. it is grad log E[reward]: each solution's
  expected-reward gradient divided by its current expected reward. Printed: the share of each weight that falls on
  the solutions judged wrong, within each class.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ACCEPT = 0.5


def class_figures(probs: list[float], groups: list[int]) -> dict:
    """Figures of one class of solutions from their P(Yes) `probs`, as if the class is right (a wrong class passes
    1 - P: its verdict matches the outcome with probability 1 - P)."""
    n = len(probs)
    match = probs  # P(a sampled verdict matches the outcome)
    errors = [k for k, m in enumerate(match) if m < ACCEPT]
    figures = {"n": n, "judged_wrong": len(errors) / n if n else float("nan")}
    for v in groups:
        silent = [m**v + (1 - m) ** v for m in match]
        figures[f"silent@{v}"] = sum(silent) / n if n else float("nan")
        figures[f"silent@{v}|judged_wrong"] = sum(silent[k] for k in errors) / len(errors) if errors else float("nan")
    return figures


def loss_weight_on_errors(probs: list[float], right: bool) -> tuple[float, float, float]:
    """Share of the expected-reward weight (P), of GRPO's (sqrt(P / (1 - P))) and of the cross-entropy's (1, or
    P / (1 - P) for a wrong answer) that falls on the solutions whose verdict at .5 disagrees with the outcome."""
    eps = 1e-12
    odds = [p / max(1 - p, eps) for p in probs]
    weights = (probs, [o**0.5 for o in odds], [1.0 for _ in probs] if right else odds)
    wrong = [(p < ACCEPT) if right else (p >= ACCEPT) for p in probs]

    def share(ws):
        total = sum(ws)
        return sum(w for w, bad in zip(ws, wrong) if bad) / total if total > 0 else float("nan")

    return tuple(share(ws) for ws in weights)


def verdict_signal(probs: list[float], truth: list[bool], groups: list[int]) -> dict:
    """Per class (answer right / wrong): the figures of the module docstring."""
    out = {}
    for name, right in (("right", True), ("wrong", False)):
        ps = [p for p, t in zip(probs, truth) if t == right]
        figures = class_figures(ps if right else [1 - p for p in ps], groups)
        shares = loss_weight_on_errors(ps, right)
        figures.update(zip(("reward_weight_on_errors", "grpo_weight_on_errors", "ce_weight_on_errors"), shares))
        out[name] = figures
    return out


def score_verifier(path: str, problems, prompts, texts) -> tuple[list[float], int]:
    """P(transcript) of every sample whose transcript the verifier could read, and how many it could not."""
    from tts_engine.eval.process_eval import RecomputeAsProcess, load_process_verifier, score_samples

    verifier = load_process_verifier(path)
    if not isinstance(verifier, RecomputeAsProcess):
        raise SystemExit(f"{path}: not a recompute verifier (its prompt config has no verify_form: recompute)")
    flat = [s for row in score_samples(verifier, problems, prompts, texts) for s in row]
    return [s.scores["process_final"] for s in flat], sum(s.status != "ok" for s in flat)


def print_table(name: str, result: dict, groups: list[int], unread: int) -> None:
    print(f"\n{name}" + (f" ({unread} samples unreadable: P = 0, as the engine scores them)" if unread else ""))
    cols = ["n", "judged_wrong"] + [f"silent@{v}" for v in groups] + [f"silent@{v}|judged_wrong" for v in groups]
    cols += ["reward_weight_on_errors", "grpo_weight_on_errors", "ce_weight_on_errors"]
    print("| class | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for cls, fig in result.items():
        cells = [str(fig["n"])] + [f"{fig[c]:.3f}" for c in cols[1:]]
        print(f"| {cls} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", required=True, type=Path, help="samples_NAME.json written by process_eval")
    parser.add_argument("--verifier", action="append", required=True, help="NAME=DIR of a recompute verifier")
    parser.add_argument("--group", action="append", type=int, help="Verifications per solution (default 8)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    from tts_engine.eval.process_eval import correctness, read_samples, task_problems

    torch.set_num_threads(args.threads)
    groups = args.group or [8]
    problems = task_problems()
    prompts, texts = read_samples(args.samples, len(problems))
    truth = [x for row in correctness(problems, texts) for x in row]
    for item in args.verifier:
        name, sep, path = item.partition("=")
        if not sep:
            raise SystemExit(f"--verifier takes NAME=DIR, got {item!r}")
        probs, unread = score_verifier(path, problems, prompts, texts)
        print_table(name, verdict_signal(probs, truth, groups), groups, unread)


if __name__ == "__main__":
    main()
