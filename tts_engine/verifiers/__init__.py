"""Verifiers behind one interface: score(questions, prompts, outputs) -> scores per solution."""

from .base import SampleScore, Verifier, score_each_text_once
from .likelihood import likelihood_score
from .process import ProcessSampleScore, ProcessVerifier, parse_verification
from .unified import (
    SCORE_NORMS,
    CheckingVerifier,
    ResolvingVerifier,
    UnifiedVerifier,
    make_unified_verifier,
    yes_no_scores,
)

__all__ = [
    "SampleScore",
    "Verifier",
    "score_each_text_once",
    "UnifiedVerifier",
    "CheckingVerifier",
    "ResolvingVerifier",
    "make_unified_verifier",
    "ProcessVerifier",
    "ProcessSampleScore",
    "parse_verification",
    "likelihood_score",
    "yes_no_scores",
    "SCORE_NORMS",
]
