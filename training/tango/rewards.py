"""Tango's schedule and reward arithmetic, as pure functions (tested on hand-made cases).

- schedule: verifier warm-up steps, then `ratio` generator steps for each verifier step;
- alpha: the process-reward weight, decaying exponentially from alpha_start to alpha_end over the generator steps;
- generator: step rewards +-1/K at the last token of each of the K steps (from the verifier's step verdicts),
  normalised over the group, summed to go per token; mixed with the outcome advantage as
  (1 - alpha) x outcome + alpha x process;
- verifier: reward 1 when its final verdict matches the rule-based outcome, + format_weight x well-formed,
  class-balanced weights over correct and incorrect generator solutions.
"""

from __future__ import annotations

import random

import torch

from tts_engine.verifiers.process import ParsedVerification, render_verification

PHASES = ("warmup", "generator", "verifier")


def phase(step: int, warmup_steps: int, ratio: int) -> str:
    """What global step `step` (0-based) trains: warm-up first, then `ratio` generator steps per verifier step."""
    if step < warmup_steps:
        return "warmup"
    return "verifier" if (step - warmup_steps) % (ratio + 1) == ratio else "generator"


def count_phases(total_steps: int, warmup_steps: int, ratio: int, upto: int | None = None) -> dict[str, int]:
    """How many steps of each phase lie in [0, upto) (default: the whole run)."""
    counts = dict.fromkeys(PHASES, 0)
    for s in range(total_steps if upto is None else upto):
        counts[phase(s, warmup_steps, ratio)] += 1
    return counts


def alpha_at(generator_step: int, generator_steps: int, alpha_start: float, alpha_end: float) -> float:
    """alpha_start x (alpha_end / alpha_start) ** (g / (G - 1)): alpha_start at the first generator step, alpha_end at the last."""
    if alpha_start == 0.0:
        return 0.0
    if generator_steps <= 1:
        return alpha_start
    progress = min(1.0, max(0.0, generator_step / (generator_steps - 1)))
    return alpha_start * (alpha_end / alpha_start) ** progress


def step_rewards(parsed: ParsedVerification) -> list[float] | None:
    """+1/K for each step judged correct, -1/K for each judged wrong; None without one verdict per step."""
    if parsed.steps is None:
        return None
    k = len(parsed.steps)
    return [(1.0 if ok else -1.0) / k for ok in parsed.steps]


def token_rewards(rewards: list[float] | None, end_tokens: list[int], num_tokens: int) -> torch.Tensor:
    """Step rewards placed on their steps' last tokens `# (T,)` (zeros when there are none)."""
    out = torch.zeros(num_tokens)
    if rewards is None:
        return out
    for r, t in zip(rewards, end_tokens):
        if 0 <= t < num_tokens:
            out[t] += r
    return out


def process_advantages(
    group_rewards: list[list[float] | None],
    group_ends: list[list[int]],
    group_lengths: list[int],
    algorithm: str,
    eps: float = 1e-6,
) -> list[torch.Tensor]:
    """Per-token process advantages of the G rollouts of one group, each `# (T_g,)`.

    Step rewards are normalised over every step of the group (grpo: (r - mean) / (std + eps); rloo: r - mean),
    placed on step-end tokens, and summed to go: token t gets the sum over steps ending at or after t.
    """
    flat = [r for rs in group_rewards if rs is not None for r in rs]
    mean = sum(flat) / len(flat) if flat else 0.0
    std = torch.tensor(flat).std().item() if len(flat) > 1 else 0.0
    scale = 1.0 / (std + eps) if algorithm == "grpo" and std > 0 else 1.0
    result = []
    for rs, ends, length in zip(group_rewards, group_ends, group_lengths):
        normed = None if rs is None else [(r - mean) * scale for r in rs]
        placed = token_rewards(normed, ends, length)  # (T,)
        result.append(placed.flip(0).cumsum(0).flip(0))  # reward to go
    return result


def mix_advantages(outcome: float, process: torch.Tensor, alpha: float) -> torch.Tensor:
    """(1 - alpha) x outcome advantage (one per rollout) + alpha x process advantage (per token) `# (T,)`."""
    return (1.0 - alpha) * outcome + alpha * process


def verifier_rewards(parsed: list[ParsedVerification], outcomes: list[bool], format_weight: float) -> list[float]:
    """1 if the final verdict matches the rule-based outcome, + format_weight if the output is well formed.

    Well formed: one verdict per step, a final verdict, and the final verdict says correct only if every step does.
    """
    out = []
    for p, correct in zip(parsed, outcomes):
        match = float(p.final is not None and p.final == correct)
        well_formed = p.status == "ok" and p.final == all(p.steps)
        out.append(match + format_weight * float(well_formed))
    return out


def class_weights(outcomes: list[bool]) -> list[float]:
    """Each present class (correct / incorrect solutions) sums to 1 / (number of present classes)."""
    counts = {c: sum(1 for o in outcomes if o == c) for c in (True, False)}
    present = sum(1 for c in counts.values() if c)
    return [1.0 / (present * counts[o]) for o in outcomes]


def balanced_pick(outcomes: list[bool], size: int, rng: random.Random) -> list[int]:
    """Indices of `size` items, half correct and half incorrect where both suffice (else all of the rarer class)."""
    pos = [i for i, o in enumerate(outcomes) if o]
    neg = [i for i, o in enumerate(outcomes) if not o]
    rng.shuffle(pos)
    rng.shuffle(neg)
    take_pos = min(len(pos), max(size // 2, size - len(neg)))
    return sorted(pos[:take_pos] + neg[: size - take_pos])


def warm_start_target(num_steps: int, correct: bool, rng: random.Random) -> str:
    """The warm start's verifier output for a solution of `num_steps` steps, from its outcome only.

    Correct: every step "+" and verdict Yes. Incorrect: verdict No, and as where the error starts is not known
    (no step labels), the steps from a uniformly drawn one on are "-": the warm start teaches the format and the
    rule "any wrong step means a wrong solution", not where errors are.
    """
    if num_steps < 1:
        return render_verification([], correct)
    if correct:
        return render_verification([True] * num_steps, True)
    cut = rng.randrange(num_steps)
    return render_verification([k < cut for k in range(num_steps)], False)
