"""The `tts` command group: every command loads only when it runs, so `tts --help` imports nothing heavy."""

from __future__ import annotations

import importlib
import logging

import click

from ..settings import OneLineErrors

LAZY_COMMANDS = {
    "solve": ("tts_engine.cli.solve", "solve", "Solve problems with N samples, verifier scores and voting."),
    "train": ("tts_engine.training.cli", "train", "Train the shipped checkpoints: SFT, joint, recompute, Tango."),
    "calibrate": (
        "tts_engine.eval.calibrate",
        "calibrate",
        "Fit p_correct (how likely an answer is right) on labelled results.",
    ),
    "curve": ("tts_engine.eval.cli", "curve", "Compute-vs-accuracy curves, efficiency ratio and plots from results."),
    "bench": ("tts_engine.eval.cli", "bench", "Generate and draw curves in one command."),
    "merge": ("tts_engine.cli.parallel", "merge", "Merge shard results files into one, in problem order."),
    "launch": ("tts_engine.cli.parallel", "launch", "Run one problem set over several GPUs or local workers."),
    "serve": ("tts_engine.serve.cli", "serve", "Serve test-time scaling behind an OpenAI-compatible API."),
    "view": ("tts_engine.eval.view", "view", "One page to browse runs: summary, curves, problems, samples, trees."),
}


class LazyGroup(OneLineErrors, click.Group):
    """Subcommands load only when called (the group's help lists them from LAZY_COMMANDS), so `tts --help` and
    `tts solve` start fast; a bad setting in any of them is a one-line error."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS:
            module, attr, _ = LAZY_COMMANDS[name]
            try:
                return getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as err:
                return _unavailable(name, err)
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter):
        """The commands and their one-line help, read from LAZY_COMMANDS without importing a command."""
        rows = [(name, LAZY_COMMANDS[name][2]) for name in sorted(LAZY_COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _unavailable(name: str, err: Exception) -> click.Command:
    @click.command(name=name, help=f"{LAZY_COMMANDS[name][2]} (unavailable: {err})")
    def command():
        raise click.ClickException(f"`tts {name}` is not available in this installation: {err}")

    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log progress details.")
def main(verbose: bool) -> None:
    """tts: test-time scaling for reasoning models.

    Sample N solutions per problem, score each with a verifier, aggregate by majority, verifier-weighted
    voting and best-of-N, and measure what each unit of compute bought.
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # weight-loading bars would drown the solve progress bar
