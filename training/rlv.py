"""RL^V: one model trained as reasoner (GRPO or RLOO) and as verifier (lambda x Yes/No SFT on its own rollouts).

Each step samples G rollouts per prompt from the policy through the engine's HF backend (their token ids and
sampling log-probs), rewards them with the rule-based checker, and takes a clipped policy-gradient step on the
generated tokens. On the same batch, every rollout becomes a verification example: build_verify_prompt(...)
followed by "Yes" if its reward is 1 else "No", trained by next-token cross-entropy, class-balanced.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.params import SamplingParams
from tts_engine.prompts import build_prompt, build_verify_prompt
from tts_engine.settings import setting

from . import checkpoint as ckpt
from .batching import completion_logprobs, next_token_logits, pad_pairs
from .config import TrainConfig
from .monitor import dev_pass_at_1
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts

ALGORITHMS = ("grpo", "rloo")


@dataclass
class RLVConfig(TrainConfig):
    """RL^V training of a reasoner-verifier from an SFT checkpoint."""

    out_dir: str = "runs/rlv"
    seed: int = 2
    init_dir: str = "runs/sft"
    """Checkpoint to start from (used only when out_dir holds no checkpoint yet)."""
    algorithm: str = setting("grpo", choices=ALGORITHMS)
    """"grpo" (group-normalised advantages) or "rloo" (leave-one-out baseline)."""
    verify_weight: float = 1.0
    """lambda: weight of the verification loss; 0 trains the reasoner alone (the baseline)."""
    steps: int = 200
    """RL steps (each: one sampling pass, `inner_steps` updates)."""
    prompts_per_step: int = 32
    """Problems per step."""
    group_size: int = 8
    """G: rollouts per problem."""
    inner_steps: int = 1
    """Optimizer updates per sampled batch (the ratio to the sampling log-probs is clipped)."""
    clip_eps: float = 0.2
    """PPO clip range of the probability ratio."""
    warmup_steps: int = 10
    """Linear warm-up steps."""
    grad_clip: float = 1.0
    """Gradient-norm clip."""
    temperature: float = 1.0
    """Sampling temperature of rollouts."""
    max_new_tokens: int = 96
    """Longest rollout in tokens."""
    level_weights: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0, 1.0, 1.0])
    """Sampling weight of levels 1..5."""
    eval_every: int = 25
    """Steps between dev pass@1 checks and checkpoints."""
    dev_per_level: int = 16
    """Dev problems per level in the periodic pass@1 check (4 samples each)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (advantages compare rollouts of a group), got {self.group_size}")
        if self.verify_weight < 0:
            raise ValueError(f"verify_weight must be >= 0, got {self.verify_weight}")


def advantages(rewards: torch.Tensor, algorithm: str, eps: float = 1e-6) -> torch.Tensor:
    """Advantages `# (P, G)` of rewards `# (P, G)`.

    grpo: (r - mean) / (std + eps) within each group (std with Bessel's correction, as GRPO).
    rloo: r_i - mean of the other G - 1 rewards of the group.
    """
    if algorithm == "grpo":
        return (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + eps)
    if algorithm == "rloo":
        g = rewards.shape[-1]
        return (rewards - rewards.mean(-1, keepdim=True)) * g / (g - 1)
    raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")


@dataclass
class VerifyExample:
    """One rollout as a verification example."""

    prompt: str
    """build_verify_prompt(...) of the rollout."""
    label: int
    """1 ("Yes") if the rollout's reward is 1, else 0 ("No")."""
    weight: float
    """Class-balanced weight: each present class sums to 1/(number of present classes)."""


def verification_examples(
    prompt_config, problems: list[str], prompts: list[str], texts: list[list[str]], rewards: list[list[float]]
) -> list[VerifyExample]:
    """Every rollout of the batch, labelled by its reward, weighted so correct and incorrect weigh the same."""
    items = [
        (build_verify_prompt(prompt_config, problem, prompt, text), int(r >= 0.5))
        for problem, prompt, row_t, row_r in zip(problems, prompts, texts, rewards)
        for text, r in zip(row_t, row_r)
    ]
    counts = {label: sum(1 for _, l in items if l == label) for label in (0, 1)}
    present = sum(1 for c in counts.values() if c)
    return [VerifyExample(p, label, 1.0 / (present * counts[label])) for p, label in items]


def verification_loss(model, tokenizer, examples: list[VerifyExample], yes_id: int, no_id: int):
    """Weighted next-token cross-entropy of "Yes"/"No" (full vocabulary), and the yes_no scores `# (B,)`."""
    seqs = [tokenizer.encode(e.prompt, add_special_tokens=False) for e in examples]
    logits = next_token_logits(model, seqs, tokenizer.pad_token_id)  # (B, V)
    logp = torch.log_softmax(logits, dim=-1)
    targets = torch.tensor([yes_id if e.label else no_id for e in examples])
    weights = torch.tensor([e.weight for e in examples])
    loss = -(logp.gather(-1, targets[:, None]).squeeze(-1) * weights).sum()
    scores = torch.sigmoid(logp[:, yes_id] - logp[:, no_id]).detach()  # (B,) P(Yes)/(P(Yes)+P(No))
    return loss, scores


def clipped_pg_loss(
    new: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, clip_eps: float
) -> torch.Tensor:
    """PPO's clipped surrogate, the one policy-gradient loss of every trainer: token log-probs `# (B, T)` under
    the current and the sampling policy, advantages `# (B, T)` or `# (B, 1)`, mask `# (B, T)` of generated
    tokens; returns the per-sequence token mean `# (B,)`."""
    ratio = torch.exp((new - old) * mask)  # (B, T)
    per_token = -torch.minimum(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv) * mask
    return per_token.sum(-1) / mask.sum(-1).clamp(min=1)


def token_policy_loss(
    model,
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    old_logprobs: list[list[float]],
    token_adv: list[torch.Tensor],
    clip_eps: float,
    pad_id: int,
) -> torch.Tensor:
    """clipped_pg_loss on the generated tokens with a per-token advantage: per-sequence token mean, then batch mean."""
    ids, mask, comp = pad_pairs(prompt_ids, completion_ids, pad_id)  # (B, T)
    new = completion_logprobs(model, ids, mask)  # (B, T)
    old = torch.zeros_like(new)
    adv = torch.zeros_like(new)
    for b, (p, lps, a) in enumerate(zip(prompt_ids, old_logprobs, token_adv)):
        old[b, len(p) : len(p) + len(lps)] = torch.tensor(lps)
        adv[b, len(p) : len(p) + len(a)] = a
    return clipped_pg_loss(new, old, adv, comp, clip_eps).mean()


def policy_loss(
    model,
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    old_logprobs: list[list[float]],
    adv: torch.Tensor,
    clip_eps: float,
    pad_id: int,
) -> torch.Tensor:
    """token_policy_loss with one advantage `# (B,)` per sequence."""
    token_adv = [adv[b].expand(len(c)) for b, c in enumerate(completion_ids)]
    return token_policy_loss(model, prompt_ids, completion_ids, old_logprobs, token_adv, clip_eps, pad_id)


def joint_losses(
    model,
    tokenizer,
    prompts: list[str],
    samples: list,
    examples: list[VerifyExample],
    adv: torch.Tensor,
    yes_id: int,
    no_id: int,
    clip_eps: float,
):
    """policy_loss + verification_loss of the same rollouts from one forward pass each.

    A verification prompt is prompt + solution + question, so its forward pass also holds the log-probs of the
    generated tokens: the end token's log-prob is read where the solution ends, before the question. Rows whose
    tokenization differs from the sampled tokens (rare) fall back to a separate policy_loss pass.
    Returns (policy loss, verification loss, yes_no scores `# (B,)`).
    """
    eos = tokenizer.eos_token_id
    seqs = [tokenizer.encode(e.prompt, add_special_tokens=False) for e in examples]
    starts, targets, fallback = [], [], []
    for b, (prompt, sample, seq) in enumerate(zip(prompts, samples, seqs)):
        p = tokenizer.encode(prompt, add_special_tokens=False)
        gen = list(sample.token_ids)
        body = gen[:-1] if gen and gen[-1] == eos else gen
        if seq[: len(p) + len(body)] != p + body or len(seq) <= len(p) + len(body):
            fallback.append(b)
        starts.append(len(p))
        targets.append(gen)
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s)
        mask[b, : len(s)] = 1
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)  # (B, T, V)
    rows = torch.arange(len(seqs))
    last = logp[rows, torch.tensor([len(s) - 1 for s in seqs])]  # (B, V)
    labels = torch.tensor([yes_id if e.label else no_id for e in examples])
    weights = torch.tensor([e.weight for e in examples])
    v_loss = -(last.gather(-1, labels[:, None]).squeeze(-1) * weights).sum()
    scores = torch.sigmoid(last[:, yes_id] - last[:, no_id]).detach()
    active = [b for b in range(len(seqs)) if b not in fallback and adv[b].abs() > 1e-8]
    per_seq = torch.zeros(len(seqs))
    if active:
        width_l = max(len(targets[b]) for b in active)
        pos = torch.zeros((len(active), width_l), dtype=torch.long)
        tgt = torch.zeros((len(active), width_l), dtype=torch.long)
        old = torch.zeros((len(active), width_l))
        comp = torch.zeros((len(active), width_l))
        for k, b in enumerate(active):
            n = len(targets[b])
            pos[k, :n] = torch.arange(starts[b] - 1, starts[b] - 1 + n)
            tgt[k, :n] = torch.tensor(targets[b])
            old[k, :n] = torch.tensor(samples[b].logprobs)
            comp[k, :n] = 1.0
        new = logp[torch.tensor(active)[:, None], pos, tgt]  # (A, L)
        per_seq = per_seq.index_put(
            (torch.tensor(active),), clipped_pg_loss(new, old, adv[active][:, None], comp, clip_eps)
        )
    pg = per_seq.sum() / len(seqs)
    if fallback:
        fb = [b for b in fallback if adv[b].abs() > 1e-8]
        if fb:
            pg = pg + policy_loss(
                model,
                [tokenizer.encode(prompts[b], add_special_tokens=False) for b in fb],
                [targets[b] for b in fb],
                [samples[b].logprobs for b in fb],
                adv[fb],
                clip_eps,
                tokenizer.pad_token_id,
            ) * len(fb) / len(seqs)
    return pg, v_loss, scores


def balanced_accuracy(scores: torch.Tensor, labels: torch.Tensor, threshold: float = 0.5) -> float | None:
    """eval's balanced_accuracy (accepted: score >= threshold) on tensors of scores and 1/0 labels."""
    from tts_engine.eval.verifier_metrics import balanced_accuracy as balanced

    return balanced(scores.detach().float().cpu().numpy(), labels.cpu().numpy() == 1, threshold)


class RLVTrainer:
    """Holds the model, optimizer and stream; `step()` runs one RL^V step and returns its log record."""

    def __init__(self, config: RLVConfig):
        torch.set_num_threads(config.threads)
        self.config = config
        self.out = Path(config.out_dir)
        source = self.out if ckpt.has_state(self.out) else Path(config.init_dir)
        self.model, self.tokenizer, self.prompt_config = ckpt.load_model(source)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.lr, weight_decay=0.0)
        self.scheduler = ckpt.cosine_schedule(self.optimizer, config.steps, config.warmup_steps)
        self.step_count = 0
        if ckpt.has_state(self.out):
            self.step_count, _ = ckpt.load_state(self.out, self.optimizer, self.scheduler)
        held_out = held_out_texts()
        self.stream = ProblemStream(config.seed, level_weights=config.level_weights, exclude=held_out)
        for _ in range(self.step_count * config.prompts_per_step):
            self.stream.next()
        self.backend = HFBackend(self.model, self.tokenizer, device="cpu", max_batch_rows=512)
        self.yes_id = self.tokenizer.convert_tokens_to_ids(self.prompt_config.yes_token)
        self.no_id = self.tokenizer.convert_tokens_to_ids(self.prompt_config.no_token)

    def rollouts(self, problems):
        """G samples per problem from the current policy, and their rewards `# (P, G)`."""
        c = self.config
        prompts = [build_prompt(self.prompt_config, p.problem) for p in problems]
        params = SamplingParams(
            n=c.group_size,
            temperature=c.temperature,
            max_new_tokens=c.max_new_tokens,
            seed=c.seed * 1_000_003 + self.step_count,
            stop=list(self.prompt_config.stop),
        )
        samples = self.backend.generate(prompts, params)  # P lists of G
        self.model.train()
        rewards = torch.tensor([[solution_reward(p.answer, s.text) for s in row] for p, row in zip(problems, samples)])
        return prompts, samples, rewards

    def step(self) -> dict:
        c = self.config
        t0 = time.time()
        problems = self.stream.batch(c.prompts_per_step)
        prompts, samples, rewards = self.rollouts(problems)  # rewards (P, G)
        t_sample = time.time() - t0
        adv = advantages(rewards, c.algorithm).flatten()  # (P*G,)
        flat_prompts = [prompts[i] for i, row in enumerate(samples) for _ in row]
        flat_samples = [s for row in samples for s in row]
        examples = verification_examples(
            self.prompt_config,
            [p.problem for p in problems],
            prompts,
            [[s.text for s in row] for row in samples],
            rewards.tolist(),
        )
        stats = {}
        for inner in range(c.inner_steps):
            pg, v_loss, scores = joint_losses(
                self.model,
                self.tokenizer,
                flat_prompts,
                flat_samples,
                examples,
                adv,
                self.yes_id,
                self.no_id,
                c.clip_eps,
            )
            loss = pg + c.verify_weight * v_loss if c.verify_weight > 0 else pg
            if inner == 0:
                labels = torch.tensor([e.label for e in examples])
                stats.update(
                    pg_loss=round(pg.item(), 4),
                    verify_loss=round(v_loss.item(), 4),
                    verify_bal_acc=balanced_accuracy(scores, labels),
                )
            if loss.requires_grad:
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.grad_clip)
                self.optimizer.step()
        self.scheduler.step()
        self.step_count += 1
        lengths = [s.num_tokens for row in samples for s in row]
        return {
            "step": self.step_count,
            "reward": round(rewards.mean().item(), 4),
            "solved_groups": round((rewards.max(-1).values > 0).float().mean().item(), 3),
            "mean_len": round(sum(lengths) / len(lengths), 1),
            "truncated": sum(s.finish_reason == "length" for row in samples for s in row),
            **stats,
            "lr": self.scheduler.get_last_lr()[0],
            "sample_s": round(t_sample, 1),
            "step_s": round(time.time() - t0, 1),
        }

    def save(self) -> None:
        ckpt.save_model(self.out, self.model, self.tokenizer, self.prompt_config, self.config)
        ckpt.save_state(self.out, self.optimizer, self.scheduler, self.step_count)


def train_rlv(config: RLVConfig, progress: bool = True, log=print) -> Path:
    """Run (or resume) RL^V training and return the checkpoint directory."""
    from tqdm import tqdm

    trainer = RLVTrainer(config)
    trainer.out.mkdir(parents=True, exist_ok=True)
    bar = tqdm(
        total=config.steps,
        initial=trainer.step_count,
        disable=not progress,
        desc=f"rlv-{config.algorithm}",
        dynamic_ncols=True,
    )
    while trainer.step_count < config.steps:
        record = trainer.step()
        bar.update(1)
        bar.set_postfix(reward=record["reward"], v_acc=record.get("verify_bal_acc"))
        if trainer.step_count % config.eval_every == 0 or trainer.step_count == config.steps:
            record["dev_pass_at_1"] = dev_pass_at_1(
                trainer.model, trainer.tokenizer, trainer.prompt_config, per_level=config.dev_per_level
            )
            trainer.save()
            log(json.dumps(record))
        with (trainer.out / "log.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")
    bar.close()
    return trainer.out
