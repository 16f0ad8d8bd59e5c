"""One plug-in mechanism for strategies, verifiers and backends (and task packs' check forms, through the
verifiers' group): another installed package names a module in one of the entry-point groups below, and the
registry of that kind imports it the first time it is asked what it holds. The module's import registers what it
adds (`register_strategy`, `register_verify_form`, `register_backend`), exactly as a built-in module does; nothing
in the core names it.

    [project.entry-points."tts_engine.verifiers"]
    my-form = "my_package.my_verifier"

A plug-in that fails to import is logged, naming it and its package, and left out: it never stops the built-ins.
One whose registration collides with a name already taken (a ValueError) does stop the run: it would change what
an existing name means.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

log = logging.getLogger(__name__)

GROUPS = ("tts_engine.strategies", "tts_engine.verifiers", "tts_engine.backends")
"""The entry-point groups, one per kind of plug-in."""

_loaded: set[str] = set()


def load_plugins(group: str) -> None:
    """Import each module of entry-point `group` once (see the module docstring for failures)."""
    if group not in GROUPS:
        raise ValueError(f"plug-in group must be one of {GROUPS}, got {group!r}")
    if group in _loaded:
        return
    _loaded.add(group)
    for point in entry_points(group=group):
        package = point.dist.name if point.dist is not None else "?"
        try:
            point.load()
        except ValueError as err:
            raise ValueError(f"{group} plug-in {point.name!r} (package {package}): {err}") from None
        except Exception as err:  # a broken plug-in: say which, go on
            log.warning(
                "%s plug-in %r (%s, package %s) failed to load: %s", group, point.name, point.value, package, err
            )


def forget(group: str) -> None:
    """Load `group` again on its next lookup (tests install a package mid-run)."""
    _loaded.discard(group)
