"""A diagnostic, not Tango: the same process verifier trained by SFT WITH step labels.

Tango's verifier never sees step labels. To tell "a tiny model cannot localise errors in this format" apart
from "outcome-only training does not make it", this trains the same format from the same start on the same
kind of rollouts, but its targets mark steps by their true correctness: a step is right while the solution's
steps equal the reference solution's (on this task the correct path is unique), so the first differing step
is the first error. Run: tts train tango-step-labels --out-dir DIR --warmup-steps 140 --rl-steps 0.
"""

from __future__ import annotations

import random

import torch

from tts_engine.steps import split_steps
from tts_engine.verifiers.process import render_verification

from . import tango_rewards as tr
from .tango import TangoTrainer, weighted_sft_loss


def reference_first_error(solution: str, reference: str) -> int:
    """0-based first step that differs from the reference solution's; -1 when they agree step for step."""
    steps, ref = split_steps(solution), split_steps(reference)
    for k, step in enumerate(steps):
        if k >= len(ref) or step.replace(" ", "") != ref[k].replace(" ", ""):
            return k
    return -1 if len(steps) == len(ref) else max(0, len(steps) - 1)


class StepLabelTrainer(TangoTrainer):
    """Every step is a warm-up step whose targets come from step labels (rl_steps should be 0)."""

    def warmup_step(self, lr: float | None = None) -> dict:
        c = self.config
        problems = self.ver_stream.batch(c.verifier_problems)
        prompts, samples, outcomes = self.rollouts(problems, c.verifier_rollouts * c.verifier_pool)
        vprompts = self.verify_prompts(problems, prompts, samples)
        flat = [
            (p, s, bool(o >= 0.5))
            for p, row, orow in zip(problems, samples, outcomes.tolist())
            for s, o in zip(row, orow)
        ]
        rng = random.Random(c.seed * 131 + self.step_count)
        pick = tr.balanced_pick([ok for *_, ok in flat], c.verifier_problems * c.verifier_rollouts, rng)
        targets = []
        for k in pick:
            problem, sample, ok = flat[k]
            first = reference_first_error(sample.text, problem.solution)
            num = len(split_steps(sample.text))
            verdict = first < 0 and ok
            targets.append(
                self.plain_target(render_verification([first < 0 or j < first for j in range(num)], verdict), verdict)
            )
        weights = torch.tensor(tr.class_weights([flat[k][2] for k in pick]))
        loss = weighted_sft_loss(self.ver, [vprompts[k] for k in pick], targets, weights)
        self.ver.update(loss, lr if lr is not None else c.warmup_lr)
        return {"verifier_sft_loss": round(loss.item(), 4), "reward": round(outcomes.mean().item(), 4)}


if __name__ == "__main__":  # the same as `tts train tango-step-labels`
    import sys

    from .cli import train

    train(["tango-step-labels", *sys.argv[1:]])
