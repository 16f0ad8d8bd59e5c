"""Reward of a solution: 1.0 when its final \\boxed{} answer equals the reference, else 0.0.

Uses the engine's answer extraction and equivalence (`tts_engine.answers`) when they are available, so the
reward and the engine's answer classes agree; otherwise an exact integer compare on the last \\boxed{}.
"""

from __future__ import annotations

import re

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_INTEGER = re.compile(r"-?[0-9]+")


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (no nested braces), or None."""
    found = _BOXED.findall(text)
    return found[-1].strip() if found else None


def _shared():
    try:
        from tts_engine.answers import extract_answer, is_equivalent
    except ImportError:
        return None
    return extract_answer, is_equivalent


def extract(text: str) -> str | None:
    """The final answer of a solution (the engine's extractor when present)."""
    shared = _shared()
    if shared is not None:
        try:
            return shared[0](text)
        except Exception:  # a bad sample never kills a batch
            return None
    return last_boxed(text)


def answer_key(answer: str | None) -> str | None:
    """Canonical class key of an extracted answer: integers compare by value, other text as written."""
    if answer is None:
        return None
    text = answer.strip().replace(",", "")
    if _INTEGER.fullmatch(text):
        return str(int(text))
    return text or None


def reward(text: str, reference: str) -> float:
    """1.0 if the solution's final answer matches `reference`, else 0.0."""
    answer = extract(text)
    if answer is None:
        return 0.0
    key, ref_key = answer_key(answer), answer_key(reference)
    if key == ref_key:
        return 1.0
    if _is_int(key) and _is_int(ref_key):  # two different integers: no equivalence check needed
        return 0.0
    shared = _shared()
    if shared is not None:
        try:
            return float(bool(shared[1](reference, answer)))
        except Exception:
            return 0.0
    return 0.0


def _is_int(key: str | None) -> bool:
    return key is not None and _INTEGER.fullmatch(key) is not None
