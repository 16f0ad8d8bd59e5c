"""Choosing an engine's verifier: the kind a user names (`--verifier-kind`), checked, and the verifier built from
the generator's backend or a separate verifier checkpoint's. `Engine` asks here and holds what comes back."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..inputs.prompts import PromptConfig
from .registry import judges_steps, make_verifier

log = logging.getLogger(__name__)

VERIFIERS = ("own", "process", "prm", "none")
"""Verifier kinds: the checkpoint's own check (its `verify_form`: yes/no, recompute, resolve, ...), a process
verifier, a discriminative PRM, or none (likelihood only)."""
RENAMED_VERIFIERS = {"unified": "own"}
"""Earlier names of verifier kinds, still accepted with a warning."""


def verifier_kind(kind: str, verifier_model: str | Path | None) -> str:
    """The kind a user named, in today's words, checked against what it needs (a checkpoint for process and prm)."""
    if kind in RENAMED_VERIFIERS:
        log.warning("verifier kind %r is now called %r", kind, RENAMED_VERIFIERS[kind])
        kind = RENAMED_VERIFIERS[kind]
    if kind not in VERIFIERS:
        raise ValueError(f"verifier must be one of {VERIFIERS}, got {kind!r}")
    if kind == "process" and verifier_model is None:
        raise ValueError(
            "verifier 'process' needs a process verifier checkpoint: pass verifier_model "
            "(--verifier-model PATH; the shipped one is tts_engine/assets/tango/verifier)"
        )
    if kind == "prm" and verifier_model is None:
        raise ValueError("verifier kind 'prm' needs a PRM checkpoint: pass verifier_model (--verifier-model PATH)")
    return kind


def build_verifier(
    kind: str,
    backend,
    prompt_config: PromptConfig,
    *,
    verifier_model: str | Path | None,
    make_backend: Callable[[str], Any],
    check_options: dict[str, Any] | None = None,
    process_headline: str = "final",
):
    """(verifier or None, its name for results) of a checked `kind`: the checkpoint's own check or a process
    verifier, on `backend` or on `make_backend(verifier_model)`; none for `prm` (it scores steps only, loaded by
    the search) and `none`."""
    if kind not in ("own", "process"):
        return None, kind
    scorer = make_backend(str(verifier_model)) if verifier_model is not None else backend
    config = PromptConfig.load(verifier_model) if verifier_model is not None else prompt_config
    config = config.with_check_options(check_options or {})
    if kind == "process" and not judges_steps(config.verify_form):  # the generated-verdict form
        from .process import ProcessVerifier

        verifier = ProcessVerifier(scorer, config, headline=process_headline, temperature=config.check_temperature)
    else:
        verifier = make_verifier(scorer, config)
    return verifier, (f"process:{process_headline}" if verifier.name == "process" else verifier.name)


@dataclass
class StepScoring:
    """What scores the steps of a search: the PRM checkpoint (verifier kind `prm`), else the engine's own verifier's
    step scorer (each verifier declares its own)."""

    kind: str
    verifier: Any
    verifier_model: str | Path | None
    prompts: Any
    """The generator's `Prompts` (a step scorer reads a problem's prompt)."""
    score_norm: str
    device: str | None = None
    """Where a PRM loads (the generation backend's device)."""

    def scorer(self, delimiter: str, *, prm_format: str | None = None):
        if self.kind == "prm":
            from .prm import load_prm

            return load_prm(self.verifier_model, prm_format, device=self.device)
        if self.verifier is None:
            raise ValueError(
                "step-level search needs a step scorer: use the unified or process verifier, or "
                "--verifier-kind prm --verifier-model PATH"
            )
        return self.verifier.step_scorer(self.prompts.of_text, delimiter, self.score_norm)

    def default_reduction(self) -> str:
        """How the step scorer ranks a partial solution by default (prod for a checkpoint's own step checks, last
        for a PRM or where there is no step scorer); read without loading a PRM."""
        if self.kind == "prm" or self.verifier is None:
            return "last"
        try:
            scorer = self.scorer(self.prompts.config.step_delimiter)
        except ValueError:  # a verifier that cannot score steps
            return "last"
        return scorer.reduction
