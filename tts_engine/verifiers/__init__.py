"""Verifiers behind one interface: score(questions, prompts, outputs) -> scores per solution.

`make_verifier(backend, prompt_config)` builds the one a checkpoint's `verify_form` names (the registry,
`tts_engine.verifiers.registry`); `score_kinds()` is the catalogue of what they write.
"""

from .base import SampleScore, Verifier, score_each_text_once
from .likelihood import likelihood_score
from .process import ProcessSampleScore, ProcessVerifier, parse_verification
from .registry import make_verifier, register_score_kind, register_verify_form, score_kinds, verify_forms
from .unified import SCORE_NORMS, UnifiedVerifier, yes_no_scores

__all__ = [
    "SampleScore",
    "Verifier",
    "score_each_text_once",
    "UnifiedVerifier",
    "make_verifier",
    "register_verify_form",
    "register_score_kind",
    "score_kinds",
    "verify_forms",
    "ProcessVerifier",
    "ProcessSampleScore",
    "parse_verification",
    "likelihood_score",
    "yes_no_scores",
    "SCORE_NORMS",
]
