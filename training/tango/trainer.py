"""Tango (arXiv 2505.15034): a generator and a process-level generative verifier, co-trained by RL.

Both start from the SFT checkpoint. The verifier is first warmed up by SFT of its output format on the
generator's rollouts, never with step labels: verdicts from the rule-based outcome only
(rewards.warm_start_target). Then generator and verifier RL steps interleave, `ratio` generator steps per
verifier step:

- generator step: G rollouts per problem; outcome reward from the rule-based checker; the verifier (greedy)
  judges every step and its verdicts give step rewards +-1/K on the step-end tokens; the advantage per token
  is (1 - alpha) x outcome advantage + alpha x process advantage (reward to go), alpha decaying;
- verifier step: fresh rollouts of the current generator; `verifier_group` verifications of each, sampled;
  reward = final verdict matches the outcome + format_weight x well-formed; class-balanced; never step labels.

Baselines from the same code and budget: `process_rewards=False` trains the generator by plain GRPO/RLOO
(outcome only), and `verifier_mode="sft"` trains the verifier by SFT on outcome-labelled targets instead of RL
(`"frozen"` keeps it as warmed up). Checkpoints: out_dir/generator, out_dir/verifier (both served by the engine,
with their training state for resuming) and out_dir/verifier_warm (the verifier right after its warm-up).

This module holds the config and the trainer of the `marks` form; `recompute` extends the trainer for the
recompute form, and `run.train_tango` runs either.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import torch

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import build_prompt
from tts_engine.params import SamplingParams
from tts_engine.pipeline.metrics import balanced_accuracy
from tts_engine.settings import setting
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts
from tts_engine.verifiers.process import build_process_prompt, parse_verification
from tts_engine.verifiers.steps import split_steps, step_end_tokens

from .. import checkpoint as ckpt
from ..batching import completion_logprobs, pad_pairs
from ..config import SampleConfig
from ..device import CPU, Placement
from ..loop import optimizer_step
from ..rl import ALGORITHMS, advantages, sequence_advantages, token_policy_loss_chunks
from . import rewards as tr

VERIFIER_MODES = ("rl", "sft", "frozen")
VERIFIER_FORMS = ("marks", "recompute")
"""`marks`: one bare mark per step (`1:+`); `recompute`: each line recomputed units digit first
(training/tango/recompute.py)."""


@dataclass
class TangoConfig(SampleConfig):
    """Tango co-training of a generator and a process verifier from an SFT checkpoint (`lr`: the generator's, constant
    after warm-up; `init_dir`: both models' start; out_dir holds generator/, verifier/, verifier_warm/ and log.jsonl)."""

    out_dir: str = "runs/tango"
    seed: int = 3
    group_size: int = 8
    max_new_tokens: int = 96
    verifier_init_dir: str | None = None
    """A different start for the verifier (e.g. another run's verifier_warm); default init_dir."""
    algorithm: str = setting("grpo", choices=ALGORITHMS)
    """"grpo" or "rloo", for both models."""
    warmup_steps: int = 20
    """Verifier warm-up (format SFT) steps before RL."""
    rl_steps: int = 80
    """Interleaved RL steps after the warm-up (generator and verifier steps together)."""
    ratio: int = 3
    """Generator steps per verifier step."""
    process_rewards: bool = True
    """Mix the verifier's step rewards into the generator's advantage; False = plain outcome GRPO/RLOO."""
    verifier_mode: str = setting("rl", choices=VERIFIER_MODES)
    """"rl" (Tango), "sft" (SFT on outcome-labelled targets, the baseline) or "frozen" (as warmed up)."""
    verifier_form: str = setting("marks", choices=VERIFIER_FORMS)
    """What the verifier writes per step: "marks" (`1:+`) or "recompute" (each line recomputed units digit first,
    `tango.recompute`)."""
    alpha_start: float = 0.1
    """Process-reward weight at the first generator step."""
    alpha_end: float = 0.001
    """Process-reward weight at the last generator step (exponential decay in between)."""
    prompts_per_step: int = 8
    """Problems per generator step."""
    verifier_problems: int = 8
    """Problems per verifier step (and warm-up step); `verifier_rollouts` rollouts each are verified."""
    verifier_rollouts: int = 4
    """Generator rollouts per problem in a verifier step."""
    verifier_pool: int = 1
    """Rollouts drawn per problem = verifier_pool x verifier_rollouts; the verifier's batch then takes correct and
    incorrect ones half and half where it can (class rebalancing for a generator that is rarely right)."""
    verifier_group: int = 4
    """Verifications sampled per rollout in a verifier RL step (the group its advantage compares)."""
    format_weight: float = 0.2
    """Weight of the verifier's well-formed reward."""
    clip_eps: float = 0.2
    """PPO clip range of the probability ratio."""
    verifier_lr: float = 3e-4
    """Verifier learning rate in its RL (or SFT-baseline) steps."""
    warmup_lr: float = 1e-3
    """Verifier learning rate in its warm-up steps."""
    temperature: float = 1.0
    """Sampling temperature of rollouts and of verifier RL samples."""
    verifier_max_new_tokens: int = 48
    """Longest verification in tokens."""
    save_every: int = 10
    """Steps between checkpoints (and at the end)."""
    loss_chunk_tokens: int = 16_384
    """Padded tokens per forward and backward pass of a policy-gradient loss: a larger batch is split and its
    gradients accumulated, so memory does not grow with the batch (the recompute form's verifier step samples
    thousands of lines)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.verifier_form not in VERIFIER_FORMS:
            raise ValueError(f"verifier_form must be one of {VERIFIER_FORMS}, got {self.verifier_form!r}")
        if self.verifier_mode not in VERIFIER_MODES:
            raise ValueError(f"verifier_mode must be one of {VERIFIER_MODES}, got {self.verifier_mode!r}")
        if self.loss_chunk_tokens < 1:
            raise ValueError(f"loss_chunk_tokens must be >= 1, got {self.loss_chunk_tokens}")
        if self.ratio < 1:
            raise ValueError(f"ratio must be >= 1, got {self.ratio}")
        if self.verifier_pool < 1:
            raise ValueError(f"verifier_pool must be >= 1, got {self.verifier_pool}")
        if self.group_size < 2 or self.verifier_group < 2:
            raise ValueError(
                f"group_size and verifier_group must be >= 2, got {self.group_size}, {self.verifier_group}"
            )
        if not 0.0 <= self.alpha_end <= self.alpha_start <= 1.0:
            raise ValueError(f"need 0 <= alpha_end <= alpha_start <= 1, got {self.alpha_start}, {self.alpha_end}")

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.rl_steps


@dataclass
class Target:
    """One SFT target of the verifier."""

    ids: list[int]
    """Token ids, end token included."""
    weights: list[float]
    """Loss weight of each token."""
    verdict: bool


@dataclass
class VerifierBatch:
    """Rollouts picked for a verifier step, flat: one entry per rollout."""

    vprompts: list[str]
    """Verification prompts (generation prompt + solution + the verifier's request)."""
    problems: list[str]
    solutions: list
    """The rollouts (backend Samples)."""
    truth: list[bool]
    """Rule-based outcome of each rollout."""
    outcomes: torch.Tensor
    """Outcomes of every rollout drawn, before picking `# (P, n)`."""


class Role:
    """One trained model: weights, tokenizer, prompt config, optimizer, backend, and where it is saved; the model
    and its backend on `placement`'s device."""

    def __init__(self, source: Path, out: Path, lr: float, placement: Placement = CPU):
        self.model, self.tokenizer, self.prompt_config = ckpt.load_model(source)
        self.model = placement.place(self.model)
        self.placement = placement
        self.out = out
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.0)
        self.scheduler = ckpt.cosine_schedule(self.optimizer, 10**9, 5, min_ratio=1.0)  # warm-up, then constant
        self.backend = HFBackend(self.model, self.tokenizer, device=placement.name, max_batch_rows=512)
        self.pad_id = self.tokenizer.pad_token_id

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def update(self, loss: torch.Tensor | Iterable[torch.Tensor], lr: float | None = None, clip: float = 1.0) -> float:
        """One optimizer step on `loss` (a tensor, or parts that sum to it: `loop.optimizer_step`); returns its value."""
        if lr is not None:  # the schedule's base rate (its factor still applies)
            self.scheduler.base_lrs = [lr] * len(self.optimizer.param_groups)
            factor = self.scheduler.lr_lambdas[0](self.scheduler.last_epoch)
            for group in self.optimizer.param_groups:
                group["lr"] = lr * factor
        self.model.train()
        value = optimizer_step(self.model, self.optimizer, self.scheduler, loss, clip)
        if self.backend.prefix_cache is not None:  # keys and values computed with the old weights
            self.backend.prefix_cache.clear()
        return value

    def save(self, step: int, config) -> None:
        ckpt.save_model(self.out, self.model, self.tokenizer, self.prompt_config, config)
        ckpt.save_state(self.out, self.optimizer, self.scheduler, step)


class TangoTrainer:
    """Holds both roles and the problem streams; `step()` runs the next step of the schedule."""

    def __init__(self, config: TangoConfig):
        torch.set_num_threads(config.threads)
        placement = Placement.of(config)
        self.config = c = config
        self.out = Path(c.out_dir)
        resume = ckpt.has_state(self.out / "generator") and ckpt.has_state(self.out / "verifier")
        gen_src = self.out / "generator" if resume else Path(c.init_dir)
        ver_src = self.out / "verifier" if resume else Path(c.verifier_init_dir or c.init_dir)
        self.gen = Role(gen_src, self.out / "generator", c.lr, placement)
        self.ver = Role(ver_src, self.out / "verifier", c.verifier_lr, placement)
        self.step_count = 0
        if resume:
            self.step_count, _ = ckpt.load_state(self.gen.out, self.gen.optimizer, self.gen.scheduler)
            ckpt.load_state(self.ver.out, self.ver.optimizer, self.ver.scheduler)
        held_out = held_out_texts()
        self.gen_stream = ProblemStream(c.seed, c.level_tuple, c.level_weights, held_out)
        self.ver_stream = ProblemStream(c.seed + 1, c.level_tuple, c.level_weights, held_out)
        done = tr.count_phases(c.total_steps, c.warmup_steps, c.ratio, upto=self.step_count)
        for _ in range(done["generator"] * c.prompts_per_step):  # replay the streams to where the run stopped
            self.gen_stream.next()
        for _ in range((done["warmup"] + done["verifier"]) * c.verifier_problems):
            self.ver_stream.next()
        self.generator_steps = tr.count_phases(c.total_steps, c.warmup_steps, c.ratio)["generator"]
        self.generator_done = done["generator"]

    # --- shared pieces ------------------------------------------------------------------------------------
    def rollouts(self, problems, n: int):
        """n rollouts per problem from the current generator: prompts, samples (P lists of n), outcomes (P, n)."""
        c = self.config
        prompts = [build_prompt(self.gen.prompt_config, p.problem) for p in problems]
        params = SamplingParams(
            n=n,
            temperature=c.temperature,
            max_new_tokens=c.max_new_tokens,
            seed=c.seed * 1_000_003 + self.step_count,
            stop=list(self.gen.prompt_config.stop),
        )
        samples = self.gen.backend.generate(prompts, params)
        self.gen.model.train()
        outcomes = torch.tensor([[solution_reward(p.answer, s.text) for s in row] for p, row in zip(problems, samples)])
        return prompts, samples, outcomes

    def verify_prompts(self, problems, prompts, samples) -> list[str]:
        return [
            build_process_prompt(self.ver.prompt_config, p.problem, prompt, s.text, "compact")
            for p, prompt, row in zip(problems, prompts, samples)
            for s in row
        ]

    def verify(self, vprompts: list[str], n: int, greedy: bool):
        """n verifications per prompt from the current verifier (P lists of n Samples)."""
        c = self.config
        params = SamplingParams(
            n=n,
            temperature=0.0 if greedy else c.temperature,
            max_new_tokens=c.verifier_max_new_tokens,
            seed=c.seed * 7919 + self.step_count,
        )
        out = self.ver.backend.generate(vprompts, params)
        self.ver.model.train()
        return out

    def verifier_batch(self) -> VerifierBatch:
        """Fresh rollouts for the verifier, rebalanced (flat, one entry per picked rollout)."""
        c = self.config
        problems = self.ver_stream.batch(c.verifier_problems)
        prompts, samples, outcomes = self.rollouts(problems, c.verifier_rollouts * c.verifier_pool)
        vprompts = self.verify_prompts(problems, prompts, samples)
        flat = [(p.problem, s) for p, row in zip(problems, samples) for s in row]
        truth = [bool(o >= 0.5) for o in outcomes.flatten().tolist()]
        rng = random.Random(c.seed * 131 + self.step_count)
        pick = tr.balanced_pick(truth, c.verifier_problems * c.verifier_rollouts, rng)
        return VerifierBatch(
            vprompts=[vprompts[k] for k in pick],
            problems=[flat[k][0] for k in pick],
            solutions=[flat[k][1] for k in pick],
            truth=[truth[k] for k in pick],
            outcomes=outcomes,
        )

    def warm_targets(self, batch: VerifierBatch, outcome_verdicts: bool) -> list[Target]:
        """The verifier's SFT targets, from the outcome only (`outcome_verdicts` changes nothing in this form: its
        targets' verdicts always come from the outcome)."""
        rng = random.Random(self.config.seed * 31 + self.step_count)
        texts = [tr.warm_start_target(len(split_steps(s.text)), ok, rng) for s, ok in zip(batch.solutions, batch.truth)]
        return [self.plain_target(t, ok) for t, ok in zip(texts, batch.truth)]

    def plain_target(self, text: str, verdict: bool) -> Target:
        """An SFT target whose every token (and the end token) weighs 1."""
        ids = self.ver.encode(text) + [self.ver.tokenizer.eos_token_id]
        return Target(ids, [1.0] * len(ids), verdict)

    # --- the three kinds of step ---------------------------------------------------------------------------
    def warmup_step(self, lr: float | None = None, outcome_verdicts: bool = False) -> dict:
        """Verifier format SFT on fresh rollouts, never step labels (also the "sft" verifier step, whose targets
        take their verdicts from the outcome)."""
        c = self.config
        batch = self.verifier_batch()
        targets = self.warm_targets(batch, outcome_verdicts)
        weights = torch.tensor(tr.class_weights(batch.truth))
        with self.ver.placement.autocast():
            loss = weighted_sft_loss(self.ver, batch.vprompts, targets, weights)
        self.ver.update(loss, lr if lr is not None else c.warmup_lr)
        return {
            "verifier_sft_loss": round(loss.item(), 4),
            "reward": round(batch.outcomes.mean().item(), 4),
            "verifier_batch_correct": sum(batch.truth),
            "target_verdict_match": round(
                sum(t.verdict == ok for t, ok in zip(targets, batch.truth)) / len(targets), 4
            ),
        }

    def generator_step(self) -> dict:
        c = self.config
        alpha = (
            tr.alpha_at(self.generator_done, self.generator_steps, c.alpha_start, c.alpha_end)
            if c.process_rewards
            else 0.0
        )
        problems = self.gen_stream.batch(c.prompts_per_step)
        prompts, samples, outcomes = self.rollouts(problems, c.group_size)  # outcomes (P, G)
        outcome_adv = advantages(outcomes, c.algorithm)  # (P, G)
        stats = {"alpha": round(alpha, 5)}
        process = [[torch.zeros(len(s.token_ids)) for s in row] for row in samples]
        if c.process_rewards:
            process, stats_v = self.process_advantages(problems, prompts, samples, outcomes)
            stats.update(stats_v)
        rows = [(i, g) for i in range(len(samples)) for g in range(c.group_size)]
        token_adv = [tr.mix_advantages(outcome_adv[i, g].item(), process[i][g], alpha) for i, g in rows]
        keep = [
            k
            for k, a in enumerate(token_adv)
            if a.abs().max() > 1e-8 and len(samples[rows[k][0]][rows[k][1]].token_ids)
        ]
        if keep:
            prompt_ids = [self.gen.encode(prompts[rows[k][0]]) for k in keep]
            picked = [samples[rows[k][0]][rows[k][1]] for k in keep]
            parts = token_policy_loss_chunks(
                self.gen.model,
                prompt_ids,
                [s.token_ids for s in picked],
                [s.logprobs for s in picked],
                [token_adv[k] for k in keep],
                c.clip_eps,
                self.gen.pad_id,
                c.loss_chunk_tokens,
            )
            loss = self.gen.update(part * len(keep) / len(rows) for part in parts)
            stats["pg_loss"] = round(loss, 4)
        self.generator_done += 1
        lengths = [s.num_tokens for row in samples for s in row]
        return {"reward": round(outcomes.mean().item(), 4), "mean_len": round(sum(lengths) / len(lengths), 1), **stats}

    def parsed_verdicts(self, problems, prompts, samples) -> list:
        """The verifier's greedy verification of every rollout (flat), parsed."""
        vsamples = self.verify(self.verify_prompts(problems, prompts, samples), 1, greedy=True)
        flat = [s for row in samples for s in row]
        return [parse_verification(v[0].text, len(split_steps(s.text))) for v, s in zip(vsamples, flat)]

    def process_advantages(self, problems, prompts, samples, outcomes):
        """The verifier's verdicts on every rollout -> per-token process advantages, and verdict stats."""
        c = self.config
        parsed_all = self.parsed_verdicts(problems, prompts, samples)
        result, k = [], 0
        for row in samples:
            rewards, ends, lengths = [], [], []
            for s in row:
                parsed = parsed_all[k]
                k += 1
                texts = [self.gen.tokenizer.decode([t], skip_special_tokens=True) for t in s.token_ids]
                rewards.append(tr.step_rewards(parsed))
                ends.append(step_end_tokens(s.text, texts))
                lengths.append(len(s.token_ids))
            result.append(tr.process_advantages(rewards, ends, lengths, c.algorithm))
        labels = outcomes.flatten()
        # a missing verdict counts as the wrong one
        finals = torch.tensor(
            [float(p.final) if p.final is not None else 1.0 - y for p, y in zip(parsed_all, labels.tolist())]
        )
        stats = {
            "verifier_acc": round((finals == labels).float().mean().item(), 4),
            "verifier_bal_acc": balanced_accuracy(finals, labels),
            "verifier_ok_format": round(sum(p.status == "ok" for p in parsed_all) / len(parsed_all), 4),
        }
        return result, stats

    def verifier_step(self) -> dict:
        """The verifier's step in its mode: kept as warmed up, SFT on outcome-labelled targets, or Tango's RL."""
        c = self.config
        if c.verifier_mode == "frozen":
            return {"verifier": "frozen"}
        if c.verifier_mode == "sft":
            return self.warmup_step(c.verifier_lr, outcome_verdicts=True)
        return self.verifier_rl_step()

    def verifier_rl_step(self) -> dict:
        """Sampled verifications of fresh rollouts, rewarded by the rule-based outcome."""
        c = self.config
        batch = self.verifier_batch()
        vprompts, solutions, truth = batch.vprompts, batch.solutions, batch.truth
        vsamples = self.verify(vprompts, c.verifier_group, greedy=False)  # (B, V)
        parsed = [
            [parse_verification(v.text, len(split_steps(s.text))) for v in row] for s, row in zip(solutions, vsamples)
        ]
        rewards = torch.tensor(
            [tr.verifier_rewards(row, [ok] * len(row), c.format_weight) for row, ok in zip(parsed, truth)]
        )  # (B, V)
        weights = torch.tensor(tr.class_weights(truth)) * len(truth)  # (B,), mean 1
        adv = (advantages(rewards, c.algorithm) * weights[:, None]).flatten()  # (B*V,)
        flat = [(b, v) for b in range(len(vsamples)) for v in range(c.verifier_group)]
        keep = [k for k in range(len(flat)) if adv[k].abs() > 1e-8]
        stats = {
            "verifier_reward": round(rewards.mean().item(), 4),
            "verifier_batch_correct": sum(truth),
            "verifier_match": round(
                sum(p.final == ok for row, ok in zip(parsed, truth) for p in row) / rewards.numel(), 4
            ),
        }
        if keep:
            completions = [vsamples[flat[k][0]][flat[k][1]].token_ids for k in keep]
            parts = token_policy_loss_chunks(
                self.ver.model,
                [self.ver.encode(vprompts[flat[k][0]]) for k in keep],
                completions,
                [vsamples[flat[k][0]][flat[k][1]].logprobs for k in keep],
                sequence_advantages(adv[keep], completions),
                c.clip_eps,
                self.ver.pad_id,
                c.loss_chunk_tokens,
            )
            loss = self.ver.update((part * len(keep) / len(flat) for part in parts), c.verifier_lr)
            stats["verifier_pg_loss"] = round(loss, 4)
        return stats

    def step(self) -> dict:
        c = self.config
        t0 = time.time()
        kind = tr.phase(self.step_count, c.warmup_steps, c.ratio)
        record = {"warmup": self.warmup_step, "generator": self.generator_step, "verifier": self.verifier_step}[kind]()
        self.step_count += 1
        if self.step_count == c.warmup_steps:
            self.save()
            shutil.copytree(self.ver.out, self.out / "verifier_warm", dirs_exist_ok=True)
        return {"step": self.step_count, "phase": kind, **record, "step_s": round(time.time() - t0, 1)}

    def save(self) -> None:
        self.gen.save(self.step_count, self.config)
        self.ver.save(self.step_count, self.config)


def weighted_sft_loss(role: Role, prompts: list[str], targets: list[Target], weights: torch.Tensor) -> torch.Tensor:
    """Per-example next-token cross-entropy of each target, its tokens weighted and averaged over its length, then
    weighted per example `# (B,)` and summed."""
    prompt_ids = [role.encode(p) for p in prompts]
    ids, mask, comp = pad_pairs(prompt_ids, [t.ids for t in targets], role.pad_id)  # (B, T)
    token_weights = torch.zeros_like(comp)  # (B, T)
    for b, (p, t) in enumerate(zip(prompt_ids, targets)):
        token_weights[b, len(p) : len(p) + len(t.ids)] = torch.tensor(t.weights)
    logp = completion_logprobs(role.model, ids, mask)  # (B, T)
    token_weights, comp, weights = (t.to(logp.device) for t in (token_weights, comp, weights))
    per_example = -(logp * token_weights).sum(-1) / comp.sum(-1).clamp(min=1)  # (B,)
    return (per_example * weights).sum()
