"""The unified verifier (RL^V): the reasoner asked "Is this solution correct? Answer Yes or No."."""

from __future__ import annotations

import math
from typing import Callable, Sequence

from ..inputs.prompts import PromptConfig, build_verify_prompt
from .base import PrefixCachedScorer, SampleScore
from .registry import register_score_kind, register_verify_form

SCORE_NORMS = ("vocab", "yes_no")


def single_token_id(backend, word: str, setting: str) -> int:
    """The id of `word` as one token; a clear error when the tokenizer splits it."""
    ids = backend.encode(word)
    if len(ids) != 1:
        raise ValueError(
            f"the tokenizer encodes the verifier token {word!r} as {len(ids)} tokens {ids}; the unified "
            f"verifier needs a single token: set {setting} to a word the tokenizer keeps whole"
        )
    return ids[0]


def yes_no_scores(logp_yes: float, logp_no: float) -> dict[str, float]:
    """Both normalisations: `vocab` = P(Yes) over the vocabulary, `yes_no` = P(Yes) / (P(Yes) + P(No))."""
    diff = logp_yes - logp_no
    yes_no = 1.0 / (1.0 + math.exp(-diff)) if diff >= 0 else math.exp(diff) / (1.0 + math.exp(diff))
    return {"verifier_vocab": math.exp(logp_yes), "verifier_yes_no": yes_no}


class UnifiedVerifier:
    """Scores (problem, solution) pairs by P("Yes") at the next token after the verification prompt."""

    name = "unified"
    scores_by_text = True  # a score belongs to a text: each distinct text is scored once
    kinds = ("verifier_vocab", "verifier_yes_no")
    headline_kind = None  # verifier_<score_norm>

    def __init__(self, backend, prompt_config: PromptConfig | None = None):
        self.backend = backend
        self.config = prompt_config or PromptConfig()
        self.yes_id = single_token_id(backend, self.config.yes_token, "yes_token")
        self.no_id = single_token_id(backend, self.config.no_token, "no_token")

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[SampleScore]]:
        """Scores in input order; a verification prompt longer than the context scores 0 ("too_long")."""
        flat = [
            build_verify_prompt(self.config, q, p, o, self.backend)
            for q, p, outs in zip(questions, prompts, outputs)
            for o in outs
        ]
        tokens = [len(self.backend.encode(text)) for text in flat]
        cached = self.backend.cached_prefix_tokens(flat)
        fits = [i for i, t in enumerate(tokens) if t < self.backend.max_model_len]
        logprobs = dict(zip(fits, self.backend.yes_no_logprobs([flat[i] for i in fits], self.yes_id, self.no_id)))
        scored = [
            SampleScore(yes_no_scores(*logprobs[i]), tokens[i] - cached[i])
            if i in logprobs
            else SampleScore({kind: 0.0 for kind in self.kinds}, 0, status="too_long")
            for i in range(len(flat))
        ]
        result, start = [], 0
        for outs in outputs:
            result.append(scored[start : start + len(outs)])
            start += len(outs)
        return result

    def step_scorer(self, prompt_for: Callable[[str], str], delimiter: str, score_norm: str) -> "UnifiedStepScorer":
        """Its verdict on each step prefix, in the run's normalisation."""
        return UnifiedStepScorer(self, prompt_for, delimiter, kind=f"verifier_{score_norm}")


class UnifiedStepScorer(PrefixCachedScorer):
    """The unified verifier (RL^V) as a step scorer: step k's score is its Yes/No verdict on steps 1..k.

    `kind` picks the normalisation (verifier_yes_no or verifier_vocab).
    """

    name = "unified"

    def __init__(
        self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n", kind: str = "verifier_yes_no"
    ):
        if kind not in verifier.kinds:
            raise ValueError(f"kind must be one of {verifier.kinds}, got {kind!r}")
        super().__init__(verifier, prompt_for, delimiter)
        self.kind = kind

    def _read(self, keys):
        texts: dict[str, list[str]] = {}
        for problem, row in keys:
            texts.setdefault(problem, []).append(self.delimiter.join(row))
        problems = list(texts)
        scored = self.verifier.score(problems, [self.prompt_for(p) for p in problems], [texts[p] for p in problems])
        found = {
            (problem, text): (verdict.scores[self.kind], verdict.tokens)
            for problem, row in zip(problems, scored)
            for text, verdict in zip(texts[problem], row)
        }
        return [found[(problem, self.delimiter.join(row))] for problem, row in keys]


register_verify_form("yes_no", UnifiedVerifier)
register_score_kind("verifier_vocab", "P(Yes) after the verification question, softmax over the vocabulary", "unified")
register_score_kind("verifier_yes_no", "P(Yes) / (P(Yes) + P(No)) after the verification question", "unified")
