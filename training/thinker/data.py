"""Chains the default really samples, and their corrections: the thinker's traces start from each problem's first
chain (the default's own solution). The corrections after it served an earlier trace format
that fixed the first wrong line; they are kept so that the recipe still makes the file the thinker was trained on.

For each training problem the starting checkpoint writes a solution (temperature 1). Where a line is wrong, the
chain is cut there, the line is fixed, and the checkpoint writes the rest again from that prefix; this repeats
until a chain is right (at most `rounds` chains). A problem's record holds its chains in order.
Written as JSONL, one line per problem, appended as each batch finishes (a rerun resumes).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from tts_engine.backends.hf import HFBackend
from tts_engine.inputs.prompts import build_prompt
from tts_engine.params import SamplingParams
from tts_engine.tasks.arith.chain import apply, problem_steps, read_step_line
from tts_engine.tasks.arith.generator import ProblemStream, held_out_texts, solution_budget
from tts_engine.tasks.arith.thinking import first_wrong

from ..checkpoint import load_model
from ..config import TrainConfig


@dataclass
class ChainsConfig(TrainConfig):
    """Sampling the chains of the thinker's traces from a checkpoint that solves the task."""

    init_dir: str = "tts_engine/assets/default_model"
    """The checkpoint whose chains (and errors) the traces show."""
    out_dir: str = "runs/thinker_chains.jsonl"
    """The JSONL file of chains (appended; a rerun resumes)."""
    problems: int = 32_000
    """Training problems."""
    batch: int = 512
    """Problems sampled together."""
    rounds: int = 6
    """Most chains per problem; a problem still wrong after them is left out."""
    levels: str = "1-8"
    seed: int = 31
    threads: int = 2


def chain_lines(prefix: list[str], text: str, steps: int) -> list[str] | None:
    """`prefix` + the step lines a sample continued it with, when they make a chain of `steps` step lines."""
    lines = list(prefix)
    for line in text.split("\n"):
        if "\\boxed" in line:
            break
        if line.strip():
            lines.append(line.strip())
    if len(lines) != steps or any(read_step_line(line) is None for line in lines):
        return None
    return lines


def fixed_prefix(problem: str, lines: list[str], wrong: int) -> list[str]:
    """The chain's right lines before `wrong`, then line `wrong` written right."""
    value, terms = problem_steps(problem)
    if wrong:
        value = read_step_line(lines[wrong - 1]).result
    op, operand = terms[wrong]
    return lines[:wrong] + [f"{value}{op}{operand}={apply(value, op, operand)}"]


def sample_batch(backend, prompt_config, problems, config: ChainsConfig, seed: int) -> list[dict]:
    """Every problem's chains (records of the problems that ended right)."""
    open_ = {k: [] for k in range(len(problems))}  # problem index -> its chains so far
    prefixes = {k: [] for k in range(len(problems))}
    done: list[dict] = []
    for r in range(config.rounds):
        keys = sorted(open_)
        if not keys:
            break
        prompts = [
            build_prompt(prompt_config, problems[k].problem) + "".join(line + "\n" for line in prefixes[k])
            for k in keys
        ]
        budget = solution_budget({problems[k].level for k in keys})
        rows = backend.generate(prompts, SamplingParams(n=1, temperature=1.0, max_new_tokens=budget, seed=seed + r))
        for k, row in zip(keys, rows):
            p = problems[k]
            lines = chain_lines(prefixes[k], row[0].text, len(problem_steps(p.problem)[1]))
            if lines is None:
                del open_[k]
                continue
            open_[k].append(lines)
            wrong = first_wrong(p.problem, lines, len(prefixes[k]))
            if wrong is None:
                done.append({"problem": p.problem, "answer": p.answer, "level": p.level, "chains": open_.pop(k)})
            else:
                prefixes[k] = fixed_prefix(p.problem, lines, wrong)
    return done


def sample_chains(config: ChainsConfig, log=print) -> Path:
    """Sample (or resume sampling) the chains file; returns its path."""
    torch.set_num_threads(config.threads)
    out = Path(config.out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    batches_done = 0
    if out.is_file():
        batches_done = max((json.loads(line)["batch"] for line in out.read_text().splitlines() if line), default=-1) + 1
    model, tokenizer, prompt_config = load_model(config.init_dir)
    model.eval()
    backend = HFBackend(model, tokenizer, max_batch_rows=config.batch, prefix_cache_tokens=0)
    stream = ProblemStream(config.seed, config.level_tuple, config.level_weights, held_out_texts())
    total = -(-config.problems // config.batch)
    for b in range(total):
        problems = stream.batch(config.batch)
        if b < batches_done:
            continue
        started = time.time()
        records = sample_batch(backend, prompt_config, problems, config, config.seed * 1_000_003 + b * 101)
        with out.open("a") as f:
            for record in records:
                f.write(json.dumps({"batch": b, **record}) + "\n")
        fixed = sum(len(r["chains"]) > 1 for r in records)
        log(f"batch {b + 1}/{total}: {len(records)} problems, {fixed} with a fix, {time.time() - started:.0f} s")
    return out
