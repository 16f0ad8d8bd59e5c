"""Training the thinker (`tts train thinker`): supervised traces of solutions that the default writes, each followed
by its check written units digit first, plus the recompute check that keeps it a verifier of plain solutions.

Each step has two losses on one model:
- the trace: next-token loss on a trace (`tts_engine.tasks.arith.thinking.trace`): a solution the default really
  sampled (the chains file), then the exact check of the problem (the problem units digit first, each step in that
  form, the check's answer) and the answer. Never on the solution's lines from its first wrong one on (they are
  context: the thinker learns to check them, not to write them). A share of the traces are cut at a random point
  and the answer is forced there (`ANSWER_FORCING`): the loss is then on the forced answer alone, the answer the
  trace holds there (`thinking.current_answer`), so that a cut or a probe reads the answer the trace holds so far;
- the check: the recompute check of `training.recompute` on the chains' first solutions (the default's real
  errors) and on planted errors, so that the served verifier still reads the thinker's final chain.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from tts_engine.answers.rewards import solution_reward
from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import build_prompt
from tts_engine.params import SamplingParams
from tts_engine.tasks.arith.generator import make_problem_set
from tts_engine.tasks.arith.thinking import (
    ANSWER_FORCING,
    Piece,
    current_answer,
    first_wrong,
    thinker_prompt_config,
    trace,
)

from .. import checkpoint as ckpt
from ..batching import completion_logprobs, pad_pairs
from ..config import LoopConfig
from ..device import model_device
from ..loop import Steps, start_run, train
from ..monitor import DEV_SEED
from ..recompute import check_loss, planted_solution


@dataclass
class ThinkerConfig(LoopConfig):
    """Supervised training of the thinker on traces built from sampled chains (`tts train thinker-chains`)."""

    init_dir: str = "tts_engine/assets/default_model"
    out_dir: str = "runs/thinker"
    chains_file: str = "runs/thinker_chains.jsonl"
    """The chains the traces are built from (`tts train thinker-chains`)."""
    batch_size: int = 24
    """Traces per step."""
    cut_share: float = 0.2
    """Share of the traces cut at a random point, with the answer forced there."""
    check_pairs: int = 8
    """Solutions per step whose recompute check is trained (half the chains' first solutions, half planted)."""
    length_groups: int = 2
    """Forward passes per step, each over traces of similar length (less padding)."""
    verify_weight: float = 0.5
    """Weight of the check loss beside the trace loss."""
    context: int = 1024
    """Positions the thinker is served with (its traces run longer than the default's solutions)."""
    dev_max_tokens: int = 900
    lr: float = 5e-4
    steps: int = 2500
    warmup_steps: int = 50
    eval_every: int = 250
    dev_per_level: int = 8
    levels: str = "1-8"
    threads: int = 2
    seed: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.cut_share < 1.0:
            raise ValueError(f"cut_share must be in [0, 1), got {self.cut_share}")


def load_chains(path: str | Path, log=print) -> list[dict]:
    """The chains file's records whose first chain (the default's own solution) has the problem's shape; how many
    were left out is logged."""
    records, left_out = [], 0
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        try:
            first_wrong(record["problem"], record["chains"][0])
        except ValueError:
            left_out += 1
            continue
        records.append(record)
    if not records:
        raise ValueError(f"{path}: no chains of the task's shape; run `tts train thinker-chains` first")
    log(f"{path}: {len(records)} problems' solutions, {left_out} left out (not a chain of the problem's shape)")
    return records


def cut_trace(pieces: list[Piece], rng: random.Random) -> list[Piece] | None:
    """`pieces` cut at a random character inside the thinking, the answer forced there: the cut text as context,
    the forced answer (the answer the cut trace holds: `current_answer`) as the target; None when the cut holds no
    solution line yet."""
    text = "".join(p.text for p in pieces)
    end = text.index("</think>")
    at = rng.randrange(1, end + 1)
    answer = current_answer(text[:at])
    if answer is None:
        return None
    return [Piece(text[:at] + ANSWER_FORCING, "cut", learn=False), Piece(f"{answer}}}", "answer")]


def trace_loss(model, tokenizer, prompts: list[str], traces: list[list[Piece]]) -> tuple[torch.Tensor, float]:
    """Summed next-token cross-entropy over the learned pieces of the traces (and the end token), and the number of
    learned tokens."""
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    prompt_ids = [enc(p) for p in prompts]
    completions, learn = [], []
    for pieces in traces:
        ids, mask = [], []
        for piece in pieces:
            piece_ids = enc(piece.text)
            ids += piece_ids
            mask += [piece.learn] * len(piece_ids)
        completions.append(ids + [tokenizer.eos_token_id])
        learn.append(mask + [True])
    ids, attention, comp = pad_pairs(prompt_ids, completions, tokenizer.pad_token_id)  # (B, T)
    for b, (p, m) in enumerate(zip(prompt_ids, learn)):
        comp[b, len(p) : len(p) + len(m)] = torch.tensor(m, dtype=torch.float32)
    logp = completion_logprobs(model, ids, attention)  # (B, T)
    comp = comp.to(logp.device)
    return -(logp * comp).sum(), comp.sum().item()


def length_groups(prompts: list[str], traces: list[list[Piece]], groups: int) -> list[list[int]]:
    """The batch's indices in `groups` runs of similar length (a trace of level 1 and one of level 8 differ 5x in
    length: padded together, most of the short one's row is padding)."""
    by_length = sorted(range(len(traces)), key=lambda k: len(prompts[k]) + sum(len(p.text) for p in traces[k]))
    size = -(-len(by_length) // groups)
    return [by_length[k : k + size] for k in range(0, len(by_length), size)]


def first_solution(record: dict) -> str:
    """A record's first sampled chain as a plain solution (its last line's result boxed)."""
    lines = record["chains"][0]
    return "\n".join(lines + [f"\\boxed{{{lines[-1].rsplit('=', 1)[1]}}}"])


def dev_thinking(model, tokenizer, prompt_config, per_level: int, levels, max_new_tokens: int) -> dict:
    """pass@1 (n = 2, temperature 1) per level of the thinker's answers, and its mean generated tokens."""
    problems = make_problem_set(DEV_SEED, levels, per_level)
    backend = HFBackend(model, tokenizer, device=str(model_device(model)), prefix_cache_tokens=0)
    prompts = [build_prompt(prompt_config, p.problem) for p in problems]
    rows = backend.generate(prompts, SamplingParams(n=2, temperature=1.0, max_new_tokens=max_new_tokens, seed=0))
    model.train()
    by_level: dict[str, list[float]] = {}
    tokens = []
    for p, row in zip(problems, rows):
        by_level.setdefault(f"L{p.level}", []).extend(solution_reward(p.answer, s.text) for s in row)
        tokens += [len(s.token_ids) for s in row]
    result = {k: round(sum(v) / len(v), 3) for k, v in by_level.items()}
    result["all"] = round(sum(result[f"L{level}"] for level in levels) / len(levels), 3)
    return {"dev_pass_at_1": result, "dev_tokens": round(sum(tokens) / len(tokens), 1)}


def train_thinker(config: ThinkerConfig, progress: bool = True, log=print) -> Path:
    """Train (or resume) and return the checkpoint directory."""
    return train(*thinker_steps(config, log), desc="thinker", progress=progress, log=log)


def thinker_steps(config: ThinkerConfig, log=print) -> Steps:
    """The run (started or resumed), its step and its dev checks."""

    def fresh():
        model, tokenizer, prompt_config = ckpt.load_model(config.init_dir)
        model.config.max_position_embeddings = config.context
        return model, tokenizer, prompt_config

    run = start_run(config, fresh)
    run.prompt_config = thinker_prompt_config(run.prompt_config)  # what its checkpoints are served with
    records = load_chains(config.chains_file, log)
    order = list(range(len(records)))

    def batch_at(step: int) -> list[dict]:
        """The step's records: the file in a fresh seeded order every epoch (so a resumed run sees the same)."""
        out = []
        for k in range(step * config.batch_size, (step + 1) * config.batch_size):
            epoch, at = divmod(k, len(order))
            shuffled = order[:]
            random.Random(config.seed * 7919 + epoch).shuffle(shuffled)
            out.append(records[shuffled[at]])
        return out

    def step():
        rng = random.Random(config.seed * 100_003 + run.step)
        batch = batch_at(run.step)
        traces = []
        for record in batch:
            pieces = trace(record["problem"], record["chains"][0])
            cut = cut_trace(pieces, rng) if rng.random() < config.cut_share else None
            traces.append(cut or pieces)
        prompts = [build_prompt(run.prompt_config, r["problem"]) for r in batch]
        half = config.check_pairs // 2
        pairs = [(r["problem"], first_solution(r)) for r in batch[:half]]
        pairs += [(r["problem"], planted_solution(r["problem"], rng, 0.25)) for r in batch[half : config.check_pairs]]
        run.model.train()
        enc = lambda text: run.tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
        learned = sum(sum(len(enc(p.text)) for p in pieces if p.learn) + 1 for pieces in traces)  # + the end token
        with run.placement.autocast():
            ver_loss, stats = check_loss(run.model, run.tokenizer, run.prompt_config, pairs, 2.0)
        figures = {"check_loss": round(ver_loss.item(), 4), **stats}

        def parts():
            """Each length group's share of the mean trace loss, then the check's: backpropagated one at a time."""
            total = 0.0
            for group in length_groups(prompts, traces, config.length_groups):
                with run.placement.autocast():
                    summed, _ = trace_loss(
                        run.model, run.tokenizer, [prompts[k] for k in group], [traces[k] for k in group]
                    )
                total += summed.item()
                yield summed / learned
            yield config.verify_weight * ver_loss
            figures["trace_loss"] = round(total / learned, 4)

        return parts(), figures, {"check": f"{ver_loss.item():.3f}"}

    def dev_checks() -> dict:
        return dev_thinking(
            run.model, run.tokenizer, run.prompt_config, config.dev_per_level, config.level_tuple, config.dev_max_tokens
        )

    return run, step, dev_checks
