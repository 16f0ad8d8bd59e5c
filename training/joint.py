"""One model that solves and checks its own solutions: generation SFT and the re-solve check, trained together.

`form: yes_no` trains RL^V's single-token verifier the same way (same solutions, same balanced weights, the
verdict token right after "Is this solution correct? Answer Yes or No."), the baseline the check is measured
against.

Every step has two losses on one model (RL^V's unified reasoner-verifier, with a generative verifier):
- generation: next-token loss on reference solutions (keeps pass@1 where the SFT base had it);
- checking: next-token loss on the re-solve check of `training.rederive` (`resolve`) after prompt + solution + end
  token + the request that restates the problem, for the model's own fresh samples (the errors it really makes)
  and for solutions with a planted error. The mark and the verdict are weighted up and class-balanced per batch,
  and so are the lines from the first one that differs from the solution's.
The targets are computed from the problem, never by the model, so the check it learns is arithmetic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import VERIFY_QUESTION, PromptConfig, build_prompt, build_verify_prompt
from tts_engine.params import SamplingParams
from tts_engine.settings import setting
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts, make_problem_set
from tts_engine.verifiers.process import build_process_prompt

from . import checkpoint as ckpt
from .batching import completion_logprobs, pad_pairs
from .config import SelfCheckConfig
from .loop import Steps, start_run, train
from .monitor import DEV_SEED, dev_pass_at_1
from .rederive import VERDICT_PREFIX, Check, plant_error, resolve
from .sft import sft_loss

RESOLVE_SUFFIX = "<|endoftext|>Solve it again and compare.\n{problem}\n"
"""The re-solve form's request, after the solution's end token: the problem restated next to the check (a small
model copies badly from ~100 tokens back; next to it, the re-solve reads its operands as generation does)."""
YES_NO_SUFFIX = f"<|endoftext|>{VERIFY_QUESTION}\n"
"""The single-token form's question, after the solution's end token too."""
FORMS = ("resolve", "yes_no")


@dataclass
class JointConfig(SelfCheckConfig):
    """Joint training of generation and the re-solve check (or the Yes/No verdict), from an SFT checkpoint."""

    out_dir: str = "runs/joint"
    lr: float = 1e-3
    seed: int = 3
    steps: int = 1500
    warmup_steps: int = 30
    gen_batch: int = 24
    sample_from: str | None = None
    """A checkpoint whose fresh samples are checked (in training and in the dev checks); default: the model
    being trained."""
    form: str = setting("resolve", choices=FORMS)
    """resolve: solve the problem again in the solution's form, compare the answers, then the verdict; yes_no: the
    verdict token alone."""
    mark_weight: float = 4.0
    """Weight of a step mark token (class-balanced within the batch) against 1 for other check tokens."""
    verdict_weight: float = 4.0
    """Weight of the verdict token (class-balanced within the batch)."""
    wrong_line_weight: float = 4.0
    """Weight of the check tokens of a line that differs from the solution's (most lines agree, and there copying
    the solution's numbers would pass for computing them)."""


def check_prompt_config(base: PromptConfig, form: str = "resolve") -> PromptConfig:
    """The serving prompts of a checkpoint that verifies its own solutions in `form`."""
    if form == "yes_no":
        return replace(base, verify_form="yes_no", verify_suffix=YES_NO_SUFFIX)
    return replace(
        base, verify_form="check", check_suffix=RESOLVE_SUFFIX, check_max_tokens=256, check_answer_score=True
    )


def verification_example(tokenizer, prompt_config: PromptConfig, problem: str, solution: str, form: str = "resolve"):
    """(prompt ids, target ids, target roles) of one verification of `solution` in `form` (prompts of
    `check_prompt_config(..., form)`)."""
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    prompt = build_prompt(prompt_config, problem)
    check = resolve(problem, solution)
    if form == "yes_no":
        word = prompt_config.yes_token if check.verdict else prompt_config.no_token
        return (
            enc(build_verify_prompt(prompt_config, problem, prompt, solution)),
            enc(word),
            ["verdict+" if check.verdict else "verdict-"],
        )
    ids, roles = check_targets(tokenizer, check)
    return enc(build_process_prompt(prompt_config, problem, prompt, solution, "compact")), ids, roles


def check_targets(tokenizer, check: Check) -> tuple[list[int], list[str]]:
    """Token ids of a check (+ end token) and the role of each token: body, body- (a line whose computed part
    differs from the solution's: where copying the solution's numbers is wrong), mark+, mark-, verdict+,
    verdict-. A line that ends in neither a mark nor the verdict is body alone."""
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    ids, roles = [], []
    lines = check.text.split("\n")
    for k, line in enumerate(lines):
        body_role = "body-" if k < len(check.disagrees) and check.disagrees[k] else "body"
        if line.startswith(VERDICT_PREFIX):
            body, last, role = VERDICT_PREFIX, line[len(VERDICT_PREFIX) :], "verdict"
            sign = "+" if last == "Yes" else "-"
        elif line.endswith((" +", " -")):
            body, last, role, sign = line[:-1], line[-1], "mark", line[-1]
        else:
            body, last, role, sign = line, "", "", ""
        for text, r in ((body, body_role), (last, f"{role}{sign}")):
            piece = enc(text)
            ids += piece
            roles += [r] * len(piece)
        if k < len(lines) - 1:
            ids += enc("\n")
            roles.append("body")
    return ids + [tokenizer.eos_token_id], roles + ["body"]


def role_weights(
    roles: list[list[str]], mark_weight: float, verdict_weight: float, wrong_line_weight: float = 1.0
) -> list[list[float]]:
    """Per-token loss weights: 1 for body tokens, `wrong_line_weight` for the body of a step that does not check
    out; marks and verdicts weighted and balanced between + and -."""
    counts = {r: sum(row.count(r) for row in roles) for r in ("mark+", "mark-", "verdict+", "verdict-")}

    def balanced(kind: str, sign: str, weight: float) -> float:
        total = counts[f"{kind}+"] + counts[f"{kind}-"]
        mine = counts[f"{kind}{sign}"]
        return weight * total / (2 * mine) if counts[f"{kind}+"] and counts[f"{kind}-"] else weight

    table = {"body": 1.0, "body-": wrong_line_weight}
    for kind, weight in (("mark", mark_weight), ("verdict", verdict_weight)):
        for sign in "+-":
            table[f"{kind}{sign}"] = balanced(kind, sign, weight)
    return [[table[r] for r in row] for row in roles]


def check_loss(model, tokenizer, prompt_config: PromptConfig, pairs, config: JointConfig):
    """Weighted next-token loss of the checks of (problem, solution) pairs, and teacher-forced accuracies."""
    prompt_ids, completion_ids, roles = [], [], []
    for problem, solution in pairs:
        prompt, ids, role = verification_example(tokenizer, prompt_config, problem.problem, solution, config.form)
        prompt_ids.append(prompt)
        completion_ids.append(ids)
        roles.append(role)
    ids, mask, comp = pad_pairs(prompt_ids, completion_ids, tokenizer.pad_token_id)  # (B, T)
    weights = torch.zeros_like(comp)  # (B, T)
    flat_roles = [["pad"] * ids.shape[1] for _ in pairs]
    for b, (p, row) in enumerate(
        zip(prompt_ids, role_weights(roles, config.mark_weight, config.verdict_weight, config.wrong_line_weight))
    ):
        weights[b, len(p) : len(p) + len(row)] = torch.tensor(row)
        flat_roles[b][len(p) : len(p) + len(row)] = roles[b]
    logp = completion_logprobs(model, ids, mask)  # (B, T)
    weights = weights.to(logp.device)
    loss = -(logp * weights).sum() / weights.sum()
    return loss, _role_accuracy(logp.detach().cpu(), flat_roles)


def _role_accuracy(logp: torch.Tensor, roles: list[list[str]]) -> dict[str, float]:
    """Share of mark / verdict tokens of each sign the model gives more than half its probability."""
    hits: dict[str, list[bool]] = {}
    for b, row in enumerate(roles):
        for t, role in enumerate(row):
            if role.startswith(("mark", "verdict")):
                hits.setdefault(role, []).append(bool(logp[b, t] > -0.6931))
    return {f"acc_{k}": round(sum(v) / len(v), 3) for k, v in sorted(hits.items())}


def own_samples(backend: HFBackend, prompt_config: PromptConfig, problems, config: JointConfig, seed: int):
    """(problem, solution) pairs of fresh samples of the current model."""
    prompts = [build_prompt(prompt_config, p.problem) for p in problems]
    params = SamplingParams(n=config.group_size, temperature=1.0, max_new_tokens=config.max_new_tokens, seed=seed)
    rows = backend.generate(prompts, params)
    return [(p, s.text) for p, row in zip(problems, rows) for s in row]


def dev_check_accuracy(
    backend: HFBackend, prompt_config: PromptConfig, problems, seed: int = 0, sampler: HFBackend | None = None
) -> dict:
    """Served check on fresh dev samples (of `sampler`, default the checker itself): verdict accuracy on right and
    wrong solutions (greedy check)."""
    from tts_engine.answers.rewards import solution_reward
    from tts_engine.verifiers import make_verifier

    prompts = [build_prompt(prompt_config, p.problem) for p in problems]
    rows = (sampler or backend).generate(prompts, SamplingParams(n=4, temperature=1.0, max_new_tokens=128, seed=seed))
    scores = make_verifier(backend, prompt_config).score(
        [p.problem for p in problems], prompts, [[s.text for s in row] for row in rows]
    )
    right, wrong = [], []
    for p, row, srow in zip(problems, rows, scores):
        for s, sc in zip(row, srow):
            (right if solution_reward(p.answer, s.text) > 0 else wrong).append(sc.scores["verifier_yes_no"] > 0.5)
    acc_right = sum(right) / max(1, len(right))
    acc_wrong = 1 - sum(wrong) / max(1, len(wrong))
    return {
        "check_acc_right": round(acc_right, 3),
        "check_acc_wrong": round(acc_wrong, 3),
        "check_balanced": round((acc_right + acc_wrong) / 2, 3),
        "dev_wrong": len(wrong),
    }


def train_joint(config: JointConfig, progress: bool = True, log=print) -> Path:
    """Train (or resume) and return the checkpoint directory."""
    return train(*joint_steps(config), desc="joint", progress=progress, log=log)


def joint_steps(config: JointConfig) -> Steps:
    """The run (started or resumed), its step and its dev checks."""
    run = start_run(config, lambda: ckpt.load_model(config.init_dir))
    run.prompt_config = check_prompt_config(run.prompt_config, config.form)
    stream = ProblemStream(config.seed + run.step, config.level_tuple, config.level_weights, held_out_texts())
    rng = random.Random(config.seed * 100_003 + run.step)
    device = run.placement.name
    backend = HFBackend(run.model, run.tokenizer, device=device, max_batch_rows=64, prefix_cache_tokens=0)
    sampler = _sampler(config.sample_from, device) or backend  # the model trained: nothing in its cache stays valid
    dev = make_problem_set(DEV_SEED + 1, config.level_tuple, config.dev_per_level)

    def step():
        gen = stream.batch(config.gen_batch)
        pairs = own_samples(
            sampler, run.prompt_config, stream.batch(config.own_problems), config, rng.randrange(1 << 30)
        )
        pairs += [(p, plant_error(p.problem, rng)) for p in stream.batch(config.planted)]
        run.model.train()
        prompts = [build_prompt(run.prompt_config, p.problem) for p in gen]
        with run.placement.autocast():
            gen_loss = (
                sft_loss(run.model, run.tokenizer, prompts, [p.solution for p in gen]) if gen else torch.zeros(())
            )
            ver_loss, accuracy = check_loss(run.model, run.tokenizer, run.prompt_config, pairs, config)
        figures = {"gen_loss": round(gen_loss.item(), 4), "check_loss": round(ver_loss.item(), 4), **accuracy}
        postfix = {"gen": f"{gen_loss.item():.3f}", "check": f"{ver_loss.item():.3f}"}
        return gen_loss + config.verify_weight * ver_loss, figures, postfix

    def dev_checks() -> dict:
        figures = {
            "dev_pass_at_1": dev_pass_at_1(
                run.model, run.tokenizer, run.prompt_config, config.dev_per_level, config.level_tuple
            )
        }
        checker = HFBackend(run.model, run.tokenizer, device=device)
        other = None if sampler is backend else sampler
        return {**figures, **dev_check_accuracy(checker, run.prompt_config, dev, sampler=other)}

    return run, step, dev_checks


def _sampler(path: str | None, device: str = "cpu") -> HFBackend | None:
    """A frozen generator whose samples are checked, when it is not the model being trained (on its device)."""
    if path is None:
        return None
    model, tokenizer, _ = ckpt.load_model(path)
    return HFBackend(model.eval(), tokenizer, device=device, max_batch_rows=64, prefix_cache_tokens=0)
