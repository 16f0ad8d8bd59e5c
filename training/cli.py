"""`tts train`: train the tiny reasoner-verifier (sft, rlv, tango, ...), evaluate it, write the bundled problem set.

Every trainer's options come from its config dataclass (training/config.py holds the fields they share):
defaults, then `--config FILE` (JSON or YAML), then the options given.
"""

from __future__ import annotations

from typing import Callable

import click

from tts_engine.settings import Command, Group, build, config_option, options

OLD_FLAGS = {"out_dir": ("--out",), "init_dir": ("--init",)}
"""Option names the first trainers used: deprecated, kept working (with a warning) for every trainer."""


@click.group(cls=Group)
def train() -> None:
    """Train and evaluate the tiny reasoner-verifier the engine serves by default."""


def trainer_command(name: str, config_cls: type, run: Callable, help: str) -> click.Command:
    """`tts train NAME`: options from `config_cls`, `--config FILE`, `--quiet`; runs `run(config, progress)`."""

    @train.command(name, cls=Command, help=help)
    @config_option
    @options(config_cls, deprecated=OLD_FLAGS)
    @click.option("--quiet", is_flag=True, help="No progress bar.")
    def command(config_file, quiet, **settings):
        config = build(config_cls, settings, config_file=config_file)
        click.echo(run(config, progress=not quiet))

    return command


def _sft(config, progress):
    from .sft import train_sft

    return train_sft(config, progress=progress, log=click.echo)


def _rlv(config, progress):
    from .rlv import train_rlv

    return train_rlv(config, progress=progress, log=click.echo)


def _tango(config, progress, trainer_cls=None):
    from .tango import train_tango

    out = train_tango(config, progress=progress, log=click.echo, trainer_cls=trainer_cls)
    return f"generator: {out / 'generator'}\nverifier: {out / 'verifier'}"


def _tango_step_labels(config, progress):
    from .tango_oracle import StepLabelTrainer

    return _tango(config, progress, trainer_cls=StepLabelTrainer)


def _unified_sft(config, progress):
    from .tango_unified import train_unified_sft

    return train_unified_sft(config, log=click.echo)


def _joint(config, progress):
    from .joint import train_joint

    return train_joint(config, progress=progress, log=click.echo)


def _recompute(config, progress):
    from .recompute import train_recompute

    return train_recompute(config, progress=progress, log=click.echo)


def _register_trainers() -> None:
    from .joint import JointConfig
    from .recompute import RecomputeConfig
    from .rlv import RLVConfig
    from .sft import SFTConfig
    from .tango import TangoConfig
    from .tango_unified import UnifiedSFTConfig

    trainer_command("sft", SFTConfig, _sft, "Supervised training on reference solutions (loss on the solution only).")
    trainer_command(
        "joint",
        JointConfig,
        _joint,
        "One model that solves and checks its own solutions: generation SFT plus the step-by-step "
        "re-derivation check on its fresh samples and on planted errors.",
    )
    trainer_command(
        "recompute",
        RecomputeConfig,
        _recompute,
        "One model that solves and recomputes its own solutions units digit first: generation SFT plus the "
        "recompute check, read teacher-forced, on its fresh samples, reference solutions and planted errors.",
    )
    trainer_command(
        "rlv",
        RLVConfig,
        _rlv,
        "RL^V: GRPO/RLOO on the task reward plus lambda x Yes/No verification on the policy's own rollouts.",
    )
    trainer_command(
        "tango", TangoConfig, _tango, "Co-train a generator and a process verifier (RL Tango) from an SFT checkpoint."
    )
    trainer_command(
        "tango-step-labels",
        TangoConfig,
        _tango_step_labels,
        "Diagnostic beside Tango: the same process verifier trained by SFT with step labels (use --rl-steps 0).",
    )
    trainer_command(
        "unified-sft",
        UnifiedSFTConfig,
        _unified_sft,
        "The one-token (Yes/No) baseline verifier of the Tango comparison, SFT on outcome labels.",
    )


_register_trainers()


@train.command(cls=Command)
@click.argument("model_dir", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--problems",
    "problems_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="JSONL problem set. [the bundled set]",
)
@click.option("-n", "--samples", "n", type=int, default=64, show_default=True, help="Samples per problem.")
@click.option("--per-level", type=int, default=None, help="Only the first PER_LEVEL problems of each level.")
@click.option("--threads", type=int, default=1, show_default=True, help="torch CPU threads.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="Write the report as JSON.")
def evaluate(model_dir, problems_path, n, per_level, threads, out_path) -> None:
    """pass@1, majority / weighted / best-of-N at N=4,16,64 and verifier metrics of a checkpoint
    (tts solve + tts curve on the checkpoint, summarised in two tables)."""
    from tts_engine.problems import load_problems

    from .evaluate import evaluate as run
    from .evaluate import save_report, to_markdown
    from tts_engine.tasks.arith.generator import bundled_problems_path, first_per_level

    problems = load_problems(problems_path or bundled_problems_path())
    if per_level is not None:
        problems = first_per_level(problems, per_level)
    report = run(model_dir, problems, n=n, threads=threads)
    if out_path:
        save_report(report, out_path)
    click.echo(to_markdown(report))


@train.command("make-problems", cls=Command)
@click.option("--out", default=None, help="Output JSONL. [the bundled set's path]")
@click.option("--seed", type=int, default=None, help="Seed of the set.")
@click.option("--per-level", type=int, default=None, help="Problems per level.")
def make_problems(out, seed, per_level) -> None:
    """Write the arithmetic task's evaluation set (the bundled one by default)."""
    from tts_engine.tasks.arith.generator import EVAL_PER_LEVEL, EVAL_SEED, bundled_problems_path, write_problem_set

    click.echo(
        write_problem_set(
            out or bundled_problems_path(),
            EVAL_SEED if seed is None else seed,
            EVAL_PER_LEVEL if per_level is None else per_level,
        )
    )


@train.command("export", cls=Command)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--to", "dest", default=None, help="Destination. [the package's default model]")
def export(run_dir, dest) -> None:
    """Copy a run's serving files (weights, tokenizer, tts_engine.json; no optimizer state) to the default model."""
    from .checkpoint import default_model_path, export_serving

    click.echo(export_serving(run_dir, dest or default_model_path()))
