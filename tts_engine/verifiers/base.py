"""The verifier interface: every verifier scores the N solutions of each problem in one batched call."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Protocol, Sequence


@dataclass
class SampleScore:
    """What a verifier says of one solution."""

    scores: dict[str, float]
    """Score kind -> score in [0, 1] (e.g. verifier_vocab, verifier_yes_no)."""
    tokens: int = 0
    """Tokens the verifier read or wrote for this solution (its compute)."""
    status: str = "ok"
    """"ok", or why the score is a fallback (e.g. "too_long": the verification prompt exceeds the context)."""
    step_scores: list[float] | None = None
    """P(step correct) per solution step (generative verifiers); None when it has none."""
    text: str = ""
    """What a generative verifier wrote of the solution ("" for one that writes nothing)."""


class Verifier(Protocol):
    """score(questions, prompts, outputs) -> one SampleScore per solution, in input order."""

    name: str
    """What results' `run.verifier` calls it (its verification form: unified, check, resolve, recompute, ...)."""
    kinds: tuple[str, ...]
    """The score kinds this verifier produces (keys of SampleScore.scores; `tts_engine.verifiers.kinds`)."""
    headline_kind: str | None
    """The kind headline votes and adaptive confidence use; None: `verifier_<score_norm>`."""
    scores_by_text: bool
    """True: a score belongs to a text (the pipeline scores each distinct text of a problem once); False: to a sample
    (a search's beams keep their own step scores)."""

    def step_scorer(self, prompt_for: Callable[[str], str], delimiter: str, score_norm: str) -> "StepScorer":
        """This verifier as a step scorer for step-level search (ValueError where it cannot score steps)."""
        ...

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


# --- step scores: what step-level search reads -------------------------------------------------------------
@dataclass
class StepScores:
    """What a step scorer says of one partial or complete solution."""

    scores: list[float]
    """P(step correct) for each step, in [0, 1], one per step given."""
    tokens: int = 0
    """Tokens the scorer read or wrote for this call (its compute)."""
    status: str = "ok"
    """"ok", or why some scores are a fallback (e.g. the process verifier's verdicts did not match the steps)."""


class StepScorer(Protocol):
    """score_steps(problem, steps) -> per-step scores; score_batch does many in one call."""

    name: str
    reduction: str
    """How a search ranks a partial solution by its step scores unless told otherwise (last, min, prod, mean)."""

    def score_steps(self, problem: str, steps: Sequence[str]) -> list[float]: ...

    def score_batch(self, problems: Sequence[str], steps: Sequence[Sequence[str]]) -> list[StepScores]: ...


class BatchedScorer:
    """`score_steps` from `score_batch`: subclasses implement the batched call only."""

    name = "scorer"
    reduction = "last"

    def score_steps(self, problem: str, steps: Sequence[str]) -> list[float]:
        return self.score_batch([problem], [steps])[0].scores

    def score_batch(self, problems: Sequence[str], steps: Sequence[Sequence[str]]) -> list[StepScores]:
        raise NotImplementedError


def check_steps(steps: Sequence[str]) -> None:
    if not steps:
        raise ValueError("steps must hold at least one step, got []")


class PrefixCachedScorer(BatchedScorer):
    """A step scorer whose step k is read from steps 1..k alone: each (problem, steps 1..k) is read once and
    cached (a search extends its beams a step at a time, so a round reads only the new last steps), and its
    tokens are charged once, to its first asker. Subclasses say how to read keys (`_read`)."""

    def __init__(self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n"):
        self.verifier, self.prompt_for, self.delimiter = verifier, prompt_for, delimiter
        self.cache: dict[tuple[str, tuple[str, ...]], tuple[float, int]] = {}

    def score_batch(self, problems, steps):
        for row in steps:
            check_steps(row)
        keys = [(problem, tuple(row[:k])) for problem, row in zip(problems, steps) for k in range(1, len(row) + 1)]
        todo = list(dict.fromkeys(key for key in keys if key not in self.cache))
        if todo:
            self.cache.update(zip(todo, self._read(todo)))
        uncharged, result, start = set(todo), [], 0
        for row in steps:
            mine = keys[start : start + len(row)]
            start += len(row)
            fresh = [key for key in mine if key in uncharged]
            uncharged.difference_update(fresh)
            result.append(StepScores([self.cache[key][0] for key in mine], sum(self.cache[key][1] for key in fresh)))
        return result

    def _read(self, keys: list[tuple[str, tuple[str, ...]]]) -> list[tuple[float, int]]:
        """(step score of the last step, tokens computed) of each (problem, steps 1..k)."""
        raise NotImplementedError


def common_prefix(a: str, b: str) -> str:
    """The longest common prefix of a and b, cut back to end at a line break or "=" (never inside a number)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    if n == len(a) == len(b):
        return a
    return a[: max(a.rfind("\n", 0, n), a.rfind("=", 0, n)) + 1]
