"""One registry of verifiers, keyed by verification form, and one catalogue of the score kinds they write.

A checkpoint names how it verifies in `tts_engine.json` (`verify_form`); a separate verifier is named by
`--verifier-kind` (`process`). Each form is registered by its verifier's module (`register_verify_form`), each
score kind with what it means (`register_score_kind`). Task packs (`tts_engine/tasks/*/`) register their own
forms and kinds; they are loaded the first time a form is looked up. Adding a verifier is one new module
with its class and one `register_verify_form` line: in the package (its module in BUILTIN_VERIFIER_MODULES) or in
any installed package (its module in the entry-point group `tts_engine.verifiers`).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

from ..plugins import load_plugins

BUILTIN_VERIFIER_MODULES = (
    "tts_engine.verifiers.unified",
    "tts_engine.verifiers.checking",
    "tts_engine.verifiers.process",
    "tts_engine.verifiers.steps",  # the step_* kinds a search's beams carry
)
TASKS_PACKAGE = "tts_engine.tasks"
ENTRY_POINT_GROUP = "tts_engine.verifiers"
"""Entry-point group of verifiers from other packages: each entry names a module whose import registers its verify
forms and score kinds (`[project.entry-points."tts_engine.verifiers"] mine = "my_pkg.verifier"`)."""


@dataclass(frozen=True)
class ScoreKind:
    """One score a results line can carry for every sample."""

    name: str
    meaning: str
    written_by: str
    """The verifier (form or kind) that writes it; `every run` for the free baseline."""
    higher_is_better: bool = True


_FORMS: dict[str, Callable[[Any, Any], Any]] = {}
_KINDS: dict[str, ScoreKind] = {}


def register_verify_form(form: str, factory: Callable[[Any, Any], Any]) -> None:
    """`factory(backend, prompt_config) -> verifier` serves checkpoints whose `verify_form` is `form`."""
    if form in _FORMS and _FORMS[form] is not factory:
        raise ValueError(f"verify form {form!r} is already registered")
    _FORMS[form] = factory


def register_score_kind(name: str, meaning: str, written_by: str, higher_is_better: bool = True) -> None:
    _KINDS[name] = ScoreKind(name, meaning, written_by, higher_is_better)


def _load_all() -> None:
    """Import the built-in verifier modules, every task pack and the verifier plug-ins of installed packages
    (`tts_engine.plugins`, group `tts_engine.verifiers`) once: their imports register them."""
    _load_builtins()
    load_plugins(ENTRY_POINT_GROUP)


@functools.cache
def _load_builtins() -> None:
    for module in BUILTIN_VERIFIER_MODULES:
        importlib.import_module(module)
    tasks = importlib.import_module(TASKS_PACKAGE)
    for pack in pkgutil.iter_modules(tasks.__path__):
        importlib.import_module(f"{TASKS_PACKAGE}.{pack.name}")


def verify_forms() -> list[str]:
    """Every registered verification form (built-ins and task packs)."""
    _load_all()
    return sorted(_FORMS)


def make_verifier(backend, prompt_config) -> Any:
    """The verifier of `prompt_config.verify_form`, reading through `backend`."""
    _load_all()
    form = prompt_config.verify_form
    if form not in _FORMS:
        raise ValueError(f"verify_form must be one of {sorted(_FORMS)}, got {form!r}")
    return _FORMS[form](backend, prompt_config)


def judges_steps(form: str) -> bool:
    """Whether the verifier of `form` is a process verifier (judges every step: its class says
    `judges_steps = True`); `--verifier-kind process` serves such a checkpoint by its own form."""
    _load_all()
    return bool(getattr(_FORMS.get(form), "judges_steps", False))


def score_kinds() -> dict[str, ScoreKind]:
    """The catalogue: every score kind any registered verifier writes."""
    _load_all()
    return dict(_KINDS)


register_score_kind("likelihood", "exp(mean token log-prob) of the sample itself: the free baseline", "every run")
