"""One model that solves and recomputes its own solutions units digit first (`tts train recompute`).

Every step has two losses on one model (RL^V's unified reasoner-verifier, with a generative verifier):
- generation: next-token loss on reference solutions (keeps pass@1 where the starting checkpoint had it);
- checking: the check of `tts_engine.tasks.arith.recompute` read teacher-forced, for the model's own fresh samples
  (the errors it really makes), for reference solutions and for solutions with a planted error. The input is the
  solution's transcript as written; the target at every position is what a checker that recomputes each step
  would write there (`check_targets`): the value carried from the line before, the problem's operation and
  operand, the exact result of the numbers written on the line, the answer copied from the last line. Where the
  solution is wrong, the written token and the target differ, and the model learns to give the written one a
  low probability. Targets are computed from the problem here, never by the model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import PromptConfig, build_prompt
from tts_engine.tasks.arith.chain import ANSWER_WORD, apply, problem_steps, units_first
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts, make_problem_set, solution_budget
from tts_engine.tasks.arith.recompute import Transcript, check_query, recompute_prompt_config, transcribe

from . import checkpoint as ckpt
from .batching import forward_logits, pad_pairs
from .config import SelfCheckConfig
from .device import model_device
from .joint import own_samples
from .loop import Steps, start_run, train
from .monitor import DEV_SEED, dev_pass_at_1
from .rederive import plant_error, wrong_value
from .sft import sft_loss

IGNORE = None
"""A target position the loss skips (after a line's structure stops matching what a checker would write)."""


@dataclass
class RecomputeConfig(SelfCheckConfig):
    """Joint training of generation and the units-first recompute check, from a checkpoint that solves the task."""

    init_dir: str = "runs/sft_checker"
    out_dir: str = "runs/recompute"
    lr: float = 3e-4
    seed: int = 5
    threads: int = 2
    steps: int = 3000
    warmup_steps: int = 50
    planted: int = 24
    references: int = 8
    """Reference solutions per step that are checked."""
    structural_share: float = 0.25
    """Share of the planted errors that are a line too few or too many (the rest: a wrong result, carried value,
    operand or answer copy)."""
    judgment_weight: float = 2.0
    """Weight of a check position whose written token is wrong (where accepting what is written is the error)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.structural_share <= 1.0:
            raise ValueError(f"structural_share must be in [0, 1], got {self.structural_share}")


# --- targets ----------------------------------------------------------------------------------------------
def _aligned(want: str, written: str) -> list[str | None]:
    """Per position of `written`, the checker's token: `want` where the two have the same length; else `want` up
    to and including the first position that differs, then IGNORE (the structure no longer lines up)."""
    if len(want) == len(written):
        return list(want)
    first = next((i for i, (w, x) in enumerate(zip(want, written)) if w != x), min(len(want), len(written)))
    if first >= len(written):
        return list(want[: len(written)])
    return list(want[: first + 1]) + [IGNORE] * (len(written) - first - 1)


def check_targets(problem: str, transcript: Transcript) -> list[str | None]:
    """The checker's token at every character of `transcript.text` (IGNORE where none is defined)."""
    start, terms = problem_steps(problem)
    targets: list[str | None] = []
    carried: int | None = start  # the value the next line must start from; None once it cannot be known
    for k, (line, step) in enumerate(zip(transcript.lines, transcript.steps)):
        written = line + "\n"
        if carried is None:
            targets += [IGNORE] * len(written)
            continue
        if k >= len(terms):  # a line too many: the checker writes its answer line here
            targets += [ANSWER_WORD[0]] + [IGNORE] * (len(written) - 1)
            carried = None
            continue
        op, operand = terms[k]
        head = f"{units_first(carried)}{op}{units_first(operand)}="
        if step is None:
            targets += [head[0]] + [IGNORE] * (len(written) - 1)
            carried = None
            continue
        exact = apply(step.left, step.op, step.operand)
        tail = f"{units_first(exact)}\n" if exact >= 0 else None
        want = head + (tail or "")
        aligned = _aligned(want, written)
        targets += aligned if tail else aligned[: len(head)] + [IGNORE] * (len(written) - len(head))
        carried = step.result
    written = transcript.answer_line + "\n"
    if carried is None:
        return targets + [IGNORE] * len(written)
    if len(transcript.lines) < len(terms):  # a line too few: the checker writes the next line here
        return targets + [units_first(carried)[0]] + [IGNORE] * (len(written) - 1)
    return targets + _aligned(f"{ANSWER_WORD} {units_first(carried)}\n", written)


# --- planted errors ---------------------------------------------------------------------------------------
def plant_structural_error(problem: str, rng: random.Random) -> str:
    """A solution that stops a line early (boxing the value reached) or writes one line too many."""
    start, terms = problem_steps(problem)
    lines, value = [], start
    for op, operand in terms:
        result = apply(value, op, operand)
        lines.append(f"{value}{op}{operand}={result}")
        value = result
    if rng.random() < 0.5 and len(lines) > 1:
        lines = lines[:-1]
        value = int(lines[-1].rsplit("=", 1)[1])
    else:
        op, operand = rng.choice(["+", "-"]), rng.randint(1, 30)
        result = apply(value, op, operand)
        if result < 0:
            op, result = "+", value + operand
        lines.append(f"{value}{op}{operand}={result}")
        value = result if rng.random() < 0.7 else wrong_value(rng, value)
    return "\n".join(lines + [f"\\boxed{{{value}}}"])


def planted_solution(problem: str, rng: random.Random, structural_share: float) -> str:
    if rng.random() < structural_share:
        return plant_structural_error(problem, rng)
    return plant_error(problem, rng)


# --- the loss ---------------------------------------------------------------------------------------------
def check_example(tokenizer, prompt_config: PromptConfig, problem: str, solution: str):
    """(query ids, transcript ids, target ids, weights-mask of judged positions) of one check; None when the
    solution has no answer or its transcript does not tokenize one character per token."""
    transcript = transcribe(solution)
    if transcript is None:
        return None
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    text = transcript.text
    ids = enc(text)
    if len(ids) != len(text):
        return None
    targets = check_targets(problem, transcript)
    target_ids = [-100 if t is IGNORE else enc(t)[0] for t in targets]
    wrong = [t is not IGNORE and t != c for t, c in zip(targets, text)]
    query = check_query(prompt_config, problem, build_prompt(prompt_config, problem))
    return enc(query), ids, target_ids, wrong


def check_loss(model, tokenizer, prompt_config: PromptConfig, pairs, judgment_weight: float):
    """Weighted cross-entropy of the checker's targets over the checks of (problem text, solution) pairs, and
    the share of wrong written tokens the model gives less than half its probability."""
    examples = [e for e in (check_example(tokenizer, prompt_config, p, s) for p, s in pairs) if e is not None]
    queries, inputs = [e[0] for e in examples], [e[1] for e in examples]
    ids, mask, _ = pad_pairs(queries, inputs, tokenizer.pad_token_id)  # (B, T)
    targets = torch.full_like(ids, -100)  # (B, T): the token each position should predict (-100: none)
    weights = torch.zeros(ids.shape, dtype=torch.float32)  # (B, T)
    judged = torch.zeros((ids.shape[0], ids.shape[1] - 1), dtype=torch.bool)  # (B, T-1): the wrong written tokens
    for b, (q, _, target_ids, wrong) in enumerate(examples):
        for t, (target, bad) in enumerate(zip(target_ids, wrong)):
            if target != -100:
                targets[b, len(q) + t] = target
                weights[b, len(q) + t] = judgment_weight if bad else 1.0
        judged[b, len(q) - 1 : len(q) - 1 + len(wrong)] = torch.tensor(wrong)
    logits = forward_logits(model, ids, mask)[:, :-1]  # (B, T-1, V)
    ids, targets, weights, judged = (t.to(logits.device) for t in (ids, targets, weights, judged))
    logp = torch.log_softmax(logits, dim=-1)
    tgt = targets[:, 1:]
    picked = logp.gather(-1, tgt.clamp(min=0)[..., None])[..., 0]  # (B, T-1)
    w = weights[:, 1:]
    loss = -(picked * w).sum() / w.sum()
    written = logp.gather(-1, ids[:, 1:, None])[..., 0]  # (B, T-1): log P of what the solution wrote
    caught = (written[judged] < -0.6931).float().mean().item() if judged.any() else float("nan")
    return loss, {"wrong_tokens": int(judged.sum()), "wrong_caught": round(caught, 3)}


def dev_verifier_check(model, tokenizer, prompt_config: PromptConfig, problems, rng_seed: int = 0) -> dict:
    """The served verifier on the model's own dev samples and on planted errors (on the model's device): share of
    right solutions scored >= .5, share of wrong ones scored < .5."""
    from tts_engine.answers.rewards import solution_reward
    from tts_engine.params import SamplingParams
    from tts_engine.tasks.arith.recompute import RecomputeVerifier

    backend = HFBackend(model, tokenizer, device=str(model_device(model)))
    verifier = RecomputeVerifier(backend, prompt_config)
    prompts = [build_prompt(prompt_config, p.problem) for p in problems]
    budget = solution_budget({p.level for p in problems})
    rows = backend.generate(prompts, SamplingParams(n=4, temperature=1.0, max_new_tokens=budget, seed=rng_seed))
    rng = random.Random(rng_seed)
    planted = [planted_solution(p.problem, rng, 0.25) for p in problems]
    texts = [[s.text for s in row] + [bad] for row, bad in zip(rows, planted)]
    scores = verifier.score([p.problem for p in problems], prompts, texts)
    model.train()
    right, wrong, plant = [], [], []
    for p, row, srow in zip(problems, texts, scores):
        for k, (text, sc) in enumerate(zip(row, srow)):
            ok = sc.scores["verifier_recompute"] >= 0.5
            if k == len(row) - 1:
                plant.append(not ok)
            else:
                (right if solution_reward(p.answer, text) > 0 else wrong).append(ok)
    share = lambda xs: round(sum(xs) / len(xs), 3) if xs else None  # noqa: E731
    return {
        "dev_right_accepted": share(right),
        "dev_wrong_rejected": share([not x for x in wrong]),
        "dev_wrong": len(wrong),
        "dev_planted_rejected": share(plant),
    }


def train_recompute(config: RecomputeConfig, progress: bool = True, log=print) -> Path:
    """Train (or resume) and return the checkpoint directory."""
    return train(*recompute_steps(config), desc="recompute", progress=progress, log=log)


def recompute_steps(config: RecomputeConfig) -> Steps:
    """The run (started or resumed), its step and its dev checks."""
    run = start_run(config, lambda: ckpt.load_model(config.init_dir))
    run.prompt_config = recompute_prompt_config(run.prompt_config)
    stream = ProblemStream(config.seed + run.step, config.level_tuple, config.level_weights, held_out_texts())
    rng = random.Random(config.seed * 100_003 + run.step)
    sampler = HFBackend(run.model, run.tokenizer, device=run.placement.name, max_batch_rows=64, prefix_cache_tokens=0)
    dev = make_problem_set(DEV_SEED + 1, config.level_tuple, config.dev_per_level)

    def step():
        gen = stream.batch(config.gen_batch)
        own = own_samples(sampler, run.prompt_config, stream.batch(config.own_problems), config, rng.randrange(1 << 30))
        pairs = [(p.problem, s) for p, s in own]
        pairs += [(p.problem, p.solution) for p in stream.batch(config.references)]
        planted = stream.batch(config.planted)
        pairs += [(p.problem, planted_solution(p.problem, rng, config.structural_share)) for p in planted]
        run.model.train()
        prompts = [build_prompt(run.prompt_config, p.problem) for p in gen]
        with run.placement.autocast():
            gen_loss = sft_loss(run.model, run.tokenizer, prompts, [p.solution for p in gen])
            ver_loss, stats = check_loss(run.model, run.tokenizer, run.prompt_config, pairs, config.judgment_weight)
        figures = {"gen_loss": round(gen_loss.item(), 4), "check_loss": round(ver_loss.item(), 4), **stats}
        postfix = {"gen": f"{gen_loss.item():.3f}", "check": f"{ver_loss.item():.3f}", "caught": stats["wrong_caught"]}
        return gen_loss + config.verify_weight * ver_loss, figures, postfix

    def dev_checks() -> dict:
        figures = {
            "dev_pass_at_1": dev_pass_at_1(
                run.model, run.tokenizer, run.prompt_config, config.dev_per_level, config.level_tuple
            )
        }
        return {**figures, **dev_verifier_check(run.model, run.tokenizer, run.prompt_config, dev)}

    return run, step, dev_checks
