"""`tts train`: the trainers of what ships (sft, joint, recompute, tango), the bundled problem set, export.

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
    """Train the tiny reasoner-verifier the engine serves by default (and the Tango pair)."""


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


def _tango(config, progress):
    from .tango import train_tango

    out = train_tango(config, progress=progress, log=click.echo)
    return f"generator: {out / 'generator'}\nverifier: {out / 'verifier'}"


def _joint(config, progress):
    from .joint import train_joint

    return train_joint(config, progress=progress, log=click.echo)


def _recompute(config, progress):
    from .recompute import train_recompute

    return train_recompute(config, progress=progress, log=click.echo)


def _thinker_chains(config, progress):
    from .thinker.data import sample_chains

    return sample_chains(config, log=click.echo)


def _thinker(config, progress):
    from .thinker.trainer import train_thinker

    return train_thinker(config, progress=progress, log=click.echo)


def _register_trainers() -> None:
    from .joint import JointConfig
    from .recompute import RecomputeConfig
    from .sft import SFTConfig
    from .tango import TangoConfig
    from .thinker.data import ChainsConfig
    from .thinker.trainer import ThinkerConfig

    trainer_command("sft", SFTConfig, _sft, "Supervised training on reference solutions (loss on the solution only).")
    trainer_command(
        "joint",
        JointConfig,
        _joint,
        "One model that solves and checks its own solutions: generation SFT plus the re-solve check (or the Yes/No "
        "verdict) on its fresh samples and on planted errors.",
    )
    trainer_command(
        "recompute",
        RecomputeConfig,
        _recompute,
        "One model that solves and recomputes its own solutions units digit first: generation SFT plus the "
        "recompute check, read teacher-forced, on its fresh samples, reference solutions and planted errors.",
    )
    trainer_command(
        "tango", TangoConfig, _tango, "Co-train a generator and a process verifier (RL Tango) from an SFT checkpoint."
    )
    trainer_command(
        "thinker-chains",
        ChainsConfig,
        _thinker_chains,
        "Sample the chains the thinker's traces are built from: a checkpoint's own solutions, each wrong one fixed at "
        "its first wrong line and continued by the checkpoint again, until right.",
    )
    trainer_command(
        "thinker",
        ThinkerConfig,
        _thinker,
        "Train the thinker: traces that solve (the default's own sampled solutions), check the problem and every "
        "step units digit first, and answer with the check; plus the recompute check.",
    )


_register_trainers()


@train.command("make-problems", cls=Command)
@click.option("--out", default=None, help="Output JSONL. [the bundled set's path]")
@click.option("--seed", type=int, default=None, help="Seed of the set.")
@click.option("--per-level", type=int, default=None, help="Problems per level.")
@click.option("--levels", default=None, help="Levels, e.g. 1-8 (default) or 6-8 (more operations, values to 9999).")
@click.option(
    "--max-value", type=click.IntRange(min=9), default=None, help="Largest running value, every level. [by level]"
)
def make_problems(out, seed, per_level, levels, max_value) -> None:
    """Write the arithmetic task's evaluation set (the bundled one by default)."""
    from tts_engine.tasks.arith.generator import (
        EVAL_PER_LEVEL,
        EVAL_SEED,
        LEVELS,
        bundled_problems_path,
        parse_levels,
        write_problem_set,
    )

    click.echo(
        write_problem_set(
            out or bundled_problems_path(),
            EVAL_SEED if seed is None else seed,
            EVAL_PER_LEVEL if per_level is None else per_level,
            LEVELS if levels is None else parse_levels(levels),
            max_value,
        )
    )


@train.command("export", cls=Command)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--to", "dest", default=None, help="Destination. [the package's default model]")
@click.option(
    "--dtype",
    type=click.Choice(["float32", "float16", "bfloat16"]),
    default="float32",
    show_default=True,
    help="Precision the weights are stored at (the engine computes in float32).",
)
def export(run_dir, dest, dtype) -> None:
    """Copy a run's serving files (weights, tokenizer, tts_engine.json; no optimizer state) to the default model."""
    from .checkpoint import default_model_path, export_serving

    click.echo(export_serving(run_dir, dest or default_model_path(), dtype))
