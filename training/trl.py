"""RL^V on TRL: `GRPOTrainer` plus lambda x the class-balanced Yes/No verification loss on the same rollouts.

TRL has no loss hook, so two of its methods are extended:

- `_generate_and_score_completions`: after TRL generated and rewarded the rollouts, every rollout becomes a
  verification example, `build_verify_prompt(...)` exactly as the engine scores it at serve time (`tts solve`),
  labelled "Yes" when its (weighted) reward is >= `verify_label_threshold`, else "No". Class-balanced weights are
  computed over the whole generation batch of every process (correct and incorrect rollouts each weigh half).
  The examples travel as tensors in the batch dict, so TRL's shuffle and split keep them beside their rollouts.
- `_compute_loss`: TRL's own policy loss (any `loss_type`, already normalised for gradient accumulation) plus
  lambda x sum(weight x -log P(label | verification prompt)) over the micro-batch, rescaled as TRL rescales its
  `dapo` loss: x num_processes (DDP averages gradients) x steps_per_generation / gradient_accumulation_steps,
  so one optimizer step over one generation batch applies exactly the class-balanced sum of `training.rl.verification_loss`.

lambda = 0 skips both extensions: the trainer is TRL's GRPOTrainer. Group-normalised (GRPO) advantages are TRL's
default; `scale_rewards="none"` gives r - mean, RLOO's leave-one-out advantage up to the factor G / (G - 1).

Prompts must be text built with the engine's `build_prompt` (`rlv_dataset_rows` does it), so generation,
verification and serving see the same strings. `save_model` writes the prompt settings (`tts_engine.json`) beside
the weights, so `tts solve --model OUT_DIR` scores with the verifier that was trained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import pad

from tts_engine.backends.base import TokenizerMethods
from tts_engine.inputs.prompts import PromptConfig, build_prompt, build_verify_prompt

# What this module shares with the CPU trainers (training/rl.py, training/tango/rewards.py), kept in one place.
from tts_engine.pipeline.metrics import balanced_accuracy
from tts_engine.verifiers.unified import single_token_id

from .tango.rewards import class_weights


@dataclass
class RLVGRPOConfig(GRPOConfig):
    """GRPOConfig plus the RL^V verification loss."""

    verify_weight: float = field(
        default=1.0,
        metadata={"help": "lambda: weight of the Yes/No verification loss; 0 gives TRL's GRPO loss unchanged."},
    )
    verify_label_threshold: float = field(
        default=0.5, metadata={"help": "A rollout is labelled Yes when its weighted reward is >= this."}
    )
    max_verify_length: int | None = field(
        default=None, metadata={"help": "Verification prompts longer than this (tokens) are left out of the loss."}
    )

    def __post_init__(self):
        super().__post_init__()
        if self.verify_weight < 0:
            raise ValueError(f"verify_weight must be >= 0, got {self.verify_weight}")
        if self.max_verify_length is not None and self.max_verify_length < 1:
            raise ValueError(f"max_verify_length must be >= 1 or None, got {self.max_verify_length}")


class EngineTokenizer(TokenizerMethods):
    """A tokenizer behind the engine's encode / decode / chat-template methods (what the hf backend uses)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer


def rlv_dataset_rows(problems: list[dict], tokenizer, prompt_config: PromptConfig) -> list[dict]:
    """Rows {prompt, problem, answer} with the prompt built as the engine builds it (chat template or plain)."""
    engine = EngineTokenizer(tokenizer)
    rows = []
    for i, p in enumerate(problems):
        problem = p.get("problem") or p.get("question")
        if not problem:
            raise ValueError(f"problem {i} has no 'problem' or 'question' text")
        rows.append(
            {
                "prompt": build_prompt(prompt_config, problem, engine),
                "problem": problem,
                "answer": str(p.get("answer", "")),
            }
        )
    return rows


class RLVGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose loss is TRL's policy loss + lambda x the class-balanced Yes/No verification loss.

    prompt_config: how the engine builds prompts for this model (default: the checkpoint's `tts_engine.json` when
        `model` is a local path, else the engine's defaults).
    """

    def __init__(self, model, reward_funcs, args: RLVGRPOConfig | None = None, *more, prompt_config=None, **kwargs):
        if args is not None and not isinstance(args, RLVGRPOConfig):
            raise TypeError(f"args must be an RLVGRPOConfig (GRPOConfig + verify_weight), got {type(args).__name__}")
        super().__init__(model, reward_funcs, args, *more, **kwargs)
        if not isinstance(self.args, RLVGRPOConfig):
            raise TypeError("args must be an RLVGRPOConfig; pass args=RLVGRPOConfig(...)")
        local = isinstance(model, (str, Path)) and Path(model).is_dir()
        self.prompt_config = prompt_config or PromptConfig.load(model if local else None)
        self._engine_tok = EngineTokenizer(self._tokenizer)
        self.yes_id = single_token_id(self._engine_tok, self.prompt_config.yes_token, "yes_token")
        self.no_id = single_token_id(self._engine_tok, self.prompt_config.no_token, "no_token")
        self._scored_batch = None
        self._verify_seen = {"train": ([], []), "eval": ([], [])}

    # --- generation side: verification examples beside the rollouts -----------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._scored_batch = (prompts, completions, rewards_per_func)
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.args.verify_weight > 0:
            output.update(self._verification_batch(inputs))
        return output

    def _verification_batch(self, inputs) -> dict[str, torch.Tensor]:
        """Left-padded verification prompts `# (B, Tv)`, Yes/No targets, labels (-1: left out) and weights `# (B,)`."""
        prompts, completions, rewards_per_func = self._scored_batch  # rewards of every process `# (P*B, F)`
        self._scored_batch = None
        device = self.accelerator.device
        rewards = (rewards_per_func * self.reward_weights.to(device).unsqueeze(0)).nansum(dim=1)
        scorable = ~torch.isnan(rewards_per_func).all(dim=1)
        local = slice(
            self.accelerator.process_index * len(prompts), (self.accelerator.process_index + 1) * len(prompts)
        )
        ids = [
            self._engine_tok.encode(self._verify_prompt(x, prompt, completion))
            for x, prompt, completion in zip(inputs, prompts, completions)
        ]
        fits = torch.tensor(
            [self.args.max_verify_length is None or len(s) <= self.args.max_verify_length for s in ids], device=device
        )
        labels = torch.where(scorable[local] & fits, (rewards[local] >= self.args.verify_label_threshold).long(), -1)
        all_labels = self.accelerator.gather(labels)  # (P*B,)
        included = (all_labels >= 0).nonzero().flatten().tolist()
        all_weights = torch.zeros(len(all_labels), device=device)
        if included:
            all_weights[included] = torch.tensor(class_weights([bool(all_labels[i]) for i in included]), device=device)
        seqs = [torch.tensor(s, dtype=torch.long) for s in ids]
        return {
            "verify_ids": pad(seqs, padding_value=self._tokenizer.pad_token_id, padding_side="left").to(device),
            "verify_mask": pad([torch.ones_like(s) for s in seqs], padding_value=0, padding_side="left").to(device),
            "verify_target": torch.where(labels == 1, self.yes_id, self.no_id),
            "verify_label": labels,
            "verify_weight": all_weights[local],
        }

    def _verify_prompt(self, example: dict, prompt, completion) -> str:
        if not isinstance(prompt, str) or not isinstance(completion, str):
            raise ValueError(
                "RL^V needs text prompts built with tts_engine.inputs.prompts.build_prompt "
                "(see rlv_dataset_rows), not conversational ones"
            )
        problem = example.get("problem")
        if (
            problem is None
            and self.prompt_config.use_chat_template
            and self._engine_tok.apply_chat_template([{"role": "user", "content": ""}]) is not None
        ):
            raise ValueError(
                "with a chat template the verification prompt needs the problem text: "
                "add a 'problem' column to the dataset (rlv_dataset_rows does)"
            )
        return build_verify_prompt(self.prompt_config, problem or "", prompt, completion, self._engine_tok)

    # --- loss side --------------------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        if self.args.verify_weight == 0 or "verify_ids" not in inputs:
            return loss
        mode = "train" if self.model.training else "eval"
        v_loss, scores = self.verification_loss(model, inputs)
        scale = self.accelerator.num_processes
        if mode == "train":
            scale = scale * self.args.steps_per_generation / self.current_gradient_accumulation_steps
        labels = inputs["verify_label"]
        seen_scores, seen_labels = self._verify_seen[mode]
        seen_scores.append(self.accelerator.gather(scores))
        seen_labels.append(self.accelerator.gather(labels))
        per_batch = v_loss.detach() * scale * (self.current_gradient_accumulation_steps if mode == "train" else 1)
        self._metrics[mode]["verify/loss"].append(self.accelerator.gather(per_batch).mean().item())
        return loss + self.args.verify_weight * v_loss * scale

    def verification_loss(self, model, inputs) -> tuple[torch.Tensor, torch.Tensor]:
        """sum(weight x -log P(Yes/No target)) over the micro-batch (full-vocabulary softmax, temperature 1), and
        the yes_no scores P(Yes)/(P(Yes)+P(No)) `# (B,)`, from the logits after each verification prompt."""
        ids, mask = inputs["verify_ids"], inputs["verify_mask"]
        first = int(mask.sum(0).nonzero()[0])  # drop columns that are padding in every row
        ids, mask = ids[:, first:], mask[:, first:]
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding: positions start at each row's first token
        with self.accelerator.autocast():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=position_ids, logits_to_keep=1).logits
        logp = torch.log_softmax(logits[:, -1].float(), dim=-1)  # (B, V)
        nll = -logp.gather(-1, inputs["verify_target"][:, None]).squeeze(-1)  # (B,)
        scores = torch.sigmoid(logp[:, self.yes_id] - logp[:, self.no_id]).detach()
        return (nll * inputs["verify_weight"]).sum(), scores

    # --- logging and saving -----------------------------------------------------------------------------------
    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "train" if self.model.training else "eval"
        seen_scores, seen_labels = self._verify_seen[mode]
        if seen_scores:
            scores, labels = torch.cat(seen_scores).cpu(), torch.cat(seen_labels).cpu()
            keep = labels >= 0
            acc = balanced_accuracy(scores[keep], labels[keep])
            self._metrics[mode]["verify/balanced_accuracy"].append(float("nan") if acc is None else acc)
            self._metrics[mode]["verify/yes_share"].append(labels[keep].float().mean().item() if keep.any() else 0.0)
            seen_scores.clear()
            seen_labels.clear()
        super().log(logs, start_time)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        super().save_model(output_dir, _internal_call)
        if self.accelerator.is_main_process:
            self.prompt_config.save(output_dir or self.args.output_dir)


# --- command line: `accelerate launch -m tts_engine.training.trl --config RECIPE.yaml [--key value ...]` ------------
@dataclass
class RLVScriptArguments:
    """What to train on and how rollouts are rewarded (the training settings are RLVGRPOConfig's)."""

    model: str = field(default="", metadata={"help": "Local checkpoint or hub id of the policy (reasoner-verifier)."})
    problems: str = field(default="", metadata={"help": "JSONL/JSON problem set with a problem text and an answer."})
    reward: str = field(default="rule", metadata={"help": "rule, hybrid (TinyV: rule, then the judge) or judge."})
    judge_url: str | None = field(default=None, metadata={"help": "OpenAI-compatible server of the judge (hybrid)."})
    judge_model: str | None = field(default=None, metadata={"help": "Model name of the judge on that server."})
    async_reward: bool = field(default=False, metadata={"help": "Grade in a worker thread (TRL's async rewards)."})


def main(argv: list[str] | None = None) -> None:
    """Train RL^V with TRL from a recipe (defaults, then the YAML file's fields, then `--key value` options)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import TrlParser

    from tts_engine.inputs.problems import load_problems

    from .reward_functions import answer_reward, async_answer_reward, openai_judge

    script, args = TrlParser((RLVScriptArguments, RLVGRPOConfig)).parse_args_and_config(argv)
    if not script.model or not script.problems:
        raise SystemExit("--model and --problems are required (in the recipe or on the command line)")
    tokenizer = AutoTokenizer.from_pretrained(script.model)
    local = Path(script.model).is_dir()
    prompt_config = PromptConfig.load(script.model if local else None)
    problems = [
        {"problem": p.text, "answer": p.reference} for p in load_problems(script.problems) if p.reference is not None
    ]
    if not problems:
        raise SystemExit(f"{script.problems}: no problem has a reference answer (field 'answer' or 'ground_truth')")
    if script.reward != "rule" and not (script.judge_url and script.judge_model):
        raise SystemExit(f"--reward {script.reward} needs --judge_url and --judge_model")
    judge = openai_judge(script.judge_url, script.judge_model) if script.reward != "rule" else None
    reward = (async_answer_reward if script.async_reward else answer_reward)(script.reward, judge)
    data = Dataset.from_list(rlv_dataset_rows(problems, tokenizer, prompt_config))
    trainer = RLVGRPOTrainer(
        model=script.model,
        reward_funcs=reward,
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
        prompt_config=prompt_config,
    )
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
