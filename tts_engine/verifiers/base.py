"""The verifier interface: every verifier scores the N solutions of each problem in one batched call."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, Sequence


@dataclass
class SampleScore:
    """What a verifier says of one solution."""

    scores: dict[str, float]
    """Score kind -> score in [0, 1] (e.g. verifier_vocab, verifier_yes_no)."""
    tokens: int = 0
    """Tokens the verifier read or wrote for this solution (its compute)."""
    status: str = "ok"
    """"ok", or why the score is a fallback (e.g. "too_long": the verification prompt exceeds the context)."""


class Verifier(Protocol):
    """score(questions, prompts, outputs) -> one SampleScore per solution, in input order."""

    name: str
    kinds: tuple[str, ...]
    """The score kinds this verifier produces (keys of SampleScore.scores)."""

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[SampleScore]]: ...


def score_each_text_once(
    verifier: Verifier, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
) -> list[list[SampleScore]]:
    """`verifier.score`, with each distinct text of a problem scored once: a repeat gets a copy of that score that
    computed nothing (tokens 0). For verifiers whose prompts are seeded by their text, so that a repeat would
    have been scored the same."""
    distinct = [list(dict.fromkeys(row)) for row in outputs]
    scored = verifier.score(questions, prompts, distinct)
    result = []
    for row, texts, scores in zip(outputs, distinct, scored):
        first, seen, row_scores = dict(zip(texts, scores)), set(), []
        for text in row:
            row_scores.append(first[text] if text not in seen else replace(first[text], tokens=0))
            seen.add(text)
        result.append(row_scores)
    return result
