"""Tango with a verifier that recomputes each step units digit first (`tts train tango --verifier-form recompute`).

The verifier is the recompute verifier of the default model (`tts_engine.tasks.arith.recompute`) on its own
checkpoint: after the problem restated units digit first it reads the solution's transcript, and each step's mark
is whether it would write that step's line itself. Sampled, a verification writes every line of the transcript
after the solution's own earlier lines (`# (lines, V)` samples per solution); a mark is "+" when the sampled line
is the solution's, the verdict "Yes" when every mark is. Read teacher-forced at test time, P(line) is the exact
probability of a "+" mark and P(transcript) that of a "Yes" verdict, so what RL trains is what the engine serves.

- warm-up: the verifier learns the form from the generator's own solutions whose answer is right (the rule-based
  outcome), transcribed: what the pair computes itself, never the task's step labels;
- Tango verifier step: sampled verifications of fresh, class-rebalanced rollouts; reward 1 when the verdict
  matches the rule-based outcome; GRPO/RLOO over each solution's group; every sampled line of a verification
  shares its advantage;
- SFT baseline (`verifier_mode="sft"`): binary cross-entropy of the verdict's probability P(transcript) against
  the outcome, class-balanced (per token of the transcript);
- generator step: step verdicts are P(line) >= 0.5, teacher-forced, one read per rollout.
"""

from __future__ import annotations

import torch

from tts_engine.params import SamplingParams
from tts_engine.pipeline.metrics import balanced_accuracy
from tts_engine.tasks.arith.recompute import RecomputeVerifier, check_query, recompute_prompt_config, transcribe
from tts_engine.verifiers.process import ParsedVerification
from tts_engine.verifiers.steps import split_steps

from ..batching import completion_logprobs, pad_pairs
from ..rl import advantages, sequence_advantages, token_policy_loss_chunks
from . import rewards as tr
from .trainer import TangoTrainer, VerifierBatch

STEP_ACCEPTED = 0.5
"""A step is judged right when the verifier gives its line at least this probability."""


def line_queries(query: str, pieces: list[str]) -> list[str]:
    """The prefix each line of a transcript is written after: the check's query, then the solution's earlier lines."""
    return [query + "".join(pieces[:k]) for k in range(len(pieces))]


def sequence_logprobs(role, prompts: list[str], completions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """log P(completion | prompt) summed over its tokens `# (B,)`, and the completions' token counts `# (B,)`."""
    prompt_ids = [role.encode(p) for p in prompts]
    ids, mask, comp = pad_pairs(prompt_ids, [role.encode(c) for c in completions], role.pad_id)  # (B, T)
    logp = completion_logprobs(role.model, ids, mask)  # (B, T)
    comp = comp.to(logp.device)
    return (logp * comp).sum(-1), comp.sum(-1)


def sampled_verdicts(pieces: list[str], lines) -> list[bool]:
    """The verdict of each of V sampled verifications of one transcript: "Yes" when every line it sampled is the
    solution's (`lines`: per line, its V samples)."""
    group = len(lines[0]) if lines else 0
    return [all(row[v].text.strip() == piece.strip() for row, piece in zip(lines, pieces)) for v in range(group)]


def outcome_bce(logp: torch.Tensor, lengths: torch.Tensor, truth: list[bool]) -> torch.Tensor:
    """Class-balanced binary cross-entropy of P(Yes) = exp(logp) against the outcome, per token of the transcript."""
    right = torch.tensor(truth, device=logp.device)
    nll = torch.where(right, -logp, -torch.log(-torch.expm1(logp.clamp(max=-1e-6))))  # (B,)
    weights = torch.tensor(tr.class_weights(truth), device=logp.device)  # (B,), sums to 1
    return (nll / lengths.clamp(min=1) * weights).sum()


class RecomputeTangoTrainer(TangoTrainer):
    """TangoTrainer whose verifier recomputes each step units digit first (its checkpoint serves that form)."""

    def __init__(self, config):
        super().__init__(config)
        self.ver.prompt_config = recompute_prompt_config(self.ver.prompt_config)
        self.scorer = RecomputeVerifier(self.ver.backend, self.ver.prompt_config)

    def verify_prompts(self, problems, prompts, samples) -> list[str]:
        return [
            check_query(self.ver.prompt_config, p.problem, prompt)
            for p, prompt, row in zip(problems, prompts, samples)
            for _ in row
        ]

    # --- warm-up and the SFT baseline ----------------------------------------------------------------------
    def warmup_step(self, lr: float | None = None, outcome_verdicts: bool = False) -> dict:
        """Warm-up: log-likelihood of the transcripts of fresh rollouts whose answer is right (no rebalancing: the
        wrong ones are not used). With `outcome_verdicts` (the SFT baseline's verifier step): the outcome BCE of
        P(transcript) on a class-rebalanced batch."""
        c = self.config
        if outcome_verdicts:
            batch = self.verifier_batch()
        else:
            problems = self.ver_stream.batch(c.verifier_problems)
            prompts, samples, outcomes = self.rollouts(problems, c.verifier_rollouts)
            truth = [bool(o >= 0.5) for o in outcomes.flatten().tolist()]
            flat = [s for row in samples for s in row]
            texts = [p.problem for p, row in zip(problems, samples) for _ in row]
            batch = VerifierBatch(self.verify_prompts(problems, prompts, samples), texts, flat, truth, outcomes)
        transcripts = [transcribe(s.text) for s in batch.solutions]
        keep = [k for k, t in enumerate(transcripts) if t and (outcome_verdicts or batch.truth[k])]
        stats = {"reward": round(batch.outcomes.mean().item(), 4), "verifier_batch_correct": sum(batch.truth)}
        if not keep:
            return {**stats, "verifier_sft_loss": None}
        with self.ver.placement.autocast():
            logp, lengths = sequence_logprobs(
                self.ver, [batch.vprompts[k] for k in keep], [transcripts[k].text for k in keep]
            )
        truth = [batch.truth[k] for k in keep]
        loss = outcome_bce(logp, lengths, truth) if outcome_verdicts else -(logp.sum() / lengths.sum())
        self.ver.update(loss, lr if lr is not None else c.warmup_lr)
        accepted = (logp.detach().exp() >= STEP_ACCEPTED).float()
        return {
            **stats,
            "verifier_sft_loss": round(loss.item(), 4),
            "verifier_accepts": round(accepted.mean().item(), 4),
            "verifier_bal_acc": balanced_accuracy(accepted, torch.tensor(truth).float()),
        }

    # --- the generator's process rewards -------------------------------------------------------------------
    def parsed_verdicts(self, problems, prompts, samples) -> list[ParsedVerification]:
        """The verifier's teacher-forced step verdicts on every rollout (flat), as parsed verifications."""
        items = [(p.problem, prompt, s.text) for p, prompt, row in zip(problems, prompts, samples) for s in row]
        parsed = []
        for (_, _, text), score in zip(items, self.scorer.read_steps(items)):
            final = score.scores["verifier_recompute"] >= STEP_ACCEPTED
            steps = [p >= STEP_ACCEPTED for p in score.step_scores or []]
            ok = score.status == "ok" and len(steps) == len(split_steps(text))
            parsed.append(ParsedVerification(steps if ok else None, final, "ok" if ok else "step_count_mismatch"))
        self.ver.model.train()
        return parsed

    # --- the Tango verifier step ---------------------------------------------------------------------------
    def sampled_verifications(self, batch: VerifierBatch):
        """For each rollout with an answer: its line queries, the solution's lines, and V sampled lines per query."""
        c = self.config
        rows = []
        for k, (query, solution) in enumerate(zip(batch.vprompts, batch.solutions)):
            transcript = transcribe(solution.text)
            if transcript is not None:
                rows.append((k, line_queries(query, transcript.pieces), transcript.pieces))
        flat = [q for _, queries, _ in rows for q in queries]
        longest = max((len(self.ver.encode(p)) for _, _, pieces in rows for p in pieces), default=1)
        params = SamplingParams(
            n=c.verifier_group,
            temperature=c.temperature,
            max_new_tokens=longest + 1,
            stop=["\n"],
            seed=c.seed * 7919 + self.step_count,
        )
        samples = self.ver.backend.generate(flat, params) if flat else []
        self.ver.model.train()
        out, at = [], 0
        for k, queries, pieces in rows:
            out.append((k, queries, pieces, samples[at : at + len(queries)]))  # samples: (lines, V)
            at += len(queries)
        return out

    def verifier_rl_step(self) -> dict:
        c = self.config
        batch = self.verifier_batch()
        checked = self.sampled_verifications(batch)
        if not checked:
            return {"verifier_batch_correct": sum(batch.truth)}
        truth = [batch.truth[k] for k, _, _, _ in checked]
        verdicts = torch.tensor([sampled_verdicts(pieces, lines) for _, _, pieces, lines in checked])  # (B, V)
        rewards = (verdicts == torch.tensor(truth)[:, None]).float()  # (B, V)
        weights = torch.tensor(tr.class_weights(truth)) * len(truth)  # (B,), mean 1
        adv = advantages(rewards, c.algorithm) * weights[:, None]  # (B, V)
        seqs = [
            (query, row[v], adv[b, v])
            for b, (_, queries, _, lines) in enumerate(checked)
            for query, row in zip(queries, lines)
            for v in range(c.verifier_group)
            if adv[b, v].abs() > 1e-8 and row[v].token_ids
        ]
        stats = {"verifier_reward": round(rewards.mean().item(), 4), "verifier_batch_correct": sum(truth)}
        if seqs:
            completions = [s.token_ids for _, s, _ in seqs]
            parts = token_policy_loss_chunks(
                self.ver.model,
                [self.ver.encode(q) for q, _, _ in seqs],
                completions,
                [s.logprobs for _, s, _ in seqs],
                sequence_advantages(torch.stack([a for _, _, a in seqs]), completions),
                c.clip_eps,
                self.ver.pad_id,
                c.loss_chunk_tokens,
            )
            stats["verifier_pg_loss"] = round(self.ver.update(parts, c.verifier_lr), 4)
        return stats
