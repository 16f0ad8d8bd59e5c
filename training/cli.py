"""`tts train`: train the tiny reasoner-verifier (sft, rlv), evaluate it, write the bundled problem set."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import click


def _config(cls, config_file: str | None, overrides: dict):
    """A config dataclass from defaults, then a JSON file's fields, then command-line options that were given."""
    from tts_engine.tiny import TinyModelConfig

    values = json.loads(Path(config_file).read_text()) if config_file else {}
    known = {f.name for f in fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise click.BadParameter(f"unknown fields {sorted(unknown)} in {config_file}; known: {sorted(known)}",
                                 param_hint="--config")
    values.update({k: v for k, v in overrides.items() if v is not None})
    if isinstance(values.get("model"), dict):
        values["model"] = TinyModelConfig(**values["model"])
    return cls(**values)


@click.group()
def train() -> None:
    """Train and evaluate the tiny reasoner-verifier the engine serves by default."""


@train.command()
@click.option("--out", "out_dir", default=None, help="Checkpoint directory (resumed if it holds one). [runs/sft]")
@click.option("--steps", type=int, default=None, help="Optimizer steps. [350]")
@click.option("--batch-size", type=int, default=None, help="Problems per step. [32]")
@click.option("--lr", type=float, default=None, help="Peak learning rate. [3e-3]")
@click.option("--seed", type=int, default=None, help="Seed of the training problem stream. [1]")
@click.option("--threads", type=int, default=None, help="torch CPU threads. [2]")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON file with any SFTConfig fields (command-line options win).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def sft(config_file, quiet, **overrides) -> None:
    """Supervised training on reference solutions (loss on the solution only)."""
    from .sft import SFTConfig, train_sft

    config = _config(SFTConfig, config_file, overrides)
    click.echo(train_sft(config, progress=not quiet, log=click.echo))


@train.command()
@click.option("--init", "init_dir", default=None, help="Starting checkpoint (an SFT run). [runs/sft]")
@click.option("--out", "out_dir", default=None, help="Checkpoint directory (resumed if it holds one). [runs/rlv]")
@click.option("--algorithm", type=click.Choice(["grpo", "rloo"]), default=None, help="Advantage estimator. [grpo]")
@click.option("--verify-weight", "verify_weight", type=float, default=None,
              help="lambda, weight of the Yes/No verification loss; 0 = reasoner only. [1.0]")
@click.option("--steps", type=int, default=None, help="RL steps. [see RLVConfig]")
@click.option("--prompts-per-step", type=int, default=None, help="Problems per step.")
@click.option("--group-size", type=int, default=None, help="G, rollouts per problem.")
@click.option("--lr", type=float, default=None, help="Peak learning rate.")
@click.option("--seed", type=int, default=None, help="Seed of problems and sampling.")
@click.option("--threads", type=int, default=None, help="torch CPU threads.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON file with any RLVConfig fields (command-line options win).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def rlv(config_file, quiet, **overrides) -> None:
    """RL^V: GRPO/RLOO on the task reward plus lambda x Yes/No verification on the policy's own rollouts."""
    from .rlv import RLVConfig, train_rlv

    config = _config(RLVConfig, config_file, overrides)
    click.echo(train_rlv(config, progress=not quiet, log=click.echo))


@train.command()
@click.argument("model_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--problems", "problems_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSONL problem set. [the bundled set]")
@click.option("-n", "--samples", "n", type=int, default=64, show_default=True, help="Samples per problem.")
@click.option("--per-level", type=int, default=None, help="Only the first PER_LEVEL problems of each level.")
@click.option("--threads", type=int, default=1, show_default=True, help="torch CPU threads.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="Write the report as JSON.")
def evaluate(model_dir, problems_path, n, per_level, threads, out_path) -> None:
    """pass@1, majority / weighted / best-of-N at N=4,16,64 and verifier metrics of a checkpoint."""
    from .evaluate import evaluate as run, save_report, to_markdown
    from .task import bundled_problems_path, first_per_level, load_problems

    problems = load_problems(problems_path or bundled_problems_path())
    if per_level is not None:
        problems = first_per_level(problems, per_level)
    report = run(model_dir, problems, n=n, threads=threads)
    if out_path:
        save_report(report, out_path)
    click.echo(to_markdown(report))


@train.command("make-problems")
@click.option("--out", default=None, help="Output JSONL. [the bundled set's path]")
@click.option("--seed", type=int, default=None, help="Seed of the set.")
@click.option("--per-level", type=int, default=None, help="Problems per level.")
def make_problems(out, seed, per_level) -> None:
    """Write the arithmetic task's evaluation set (the bundled one by default)."""
    from .task import EVAL_PER_LEVEL, EVAL_SEED, bundled_problems_path, write_problem_set

    click.echo(write_problem_set(out or bundled_problems_path(), EVAL_SEED if seed is None else seed,
                                 EVAL_PER_LEVEL if per_level is None else per_level))


@train.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--to", "dest", default=None, help="Destination. [the package's default model]")
def export(run_dir, dest) -> None:
    """Copy a run's serving files (weights, tokenizer, tts_engine.json; no optimizer state) to the default model."""
    from .checkpoint import default_model_path, export_serving

    click.echo(export_serving(run_dir, dest or default_model_path()))


def _add_tango() -> None:
    from .tango import tango_command

    train.add_command(tango_command)


_add_tango()
