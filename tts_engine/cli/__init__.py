"""The `tts` command: its groups and commands, their options, and the data-parallel launch."""

from .commands import main

__all__ = ["main"]
