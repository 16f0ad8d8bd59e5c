"""The unified verifier (RL^V): the reasoner asked "Is this solution correct? Answer Yes or No."."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Sequence

from ..answers.extract import extract_answer
from ..prompts import PromptConfig, build_verify_prompt
from .base import SampleScore
from .process import ProcessSampleScore, ProcessVerifier, build_process_prompt

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
    kinds = ("verifier_vocab", "verifier_yes_no")

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
        cached = getattr(self.backend, "cached_prefix_tokens", lambda texts: [0] * len(texts))(flat)
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


class CheckingVerifier:
    """The unified verifier of a checkpoint that checks its own solutions step by step before its verdict.

    The reasoner writes a check of every step (`verify_form: check`; the compact process form), then
    "verdict:Yes" or "verdict:No". Scores: P(Yes) at the verdict in both normalisations, as the single-token
    unified verifier gives, and the step marks' P(+) aggregated by min, prod and last. The check text and the
    step scores are kept with each sample.
    """

    name = "unified"
    kinds = ("verifier_vocab", "verifier_yes_no", "verifier_min", "verifier_prod", "verifier_last")

    def __init__(self, backend, prompt_config: PromptConfig):
        self.checker = ProcessVerifier(
            backend,
            prompt_config,
            form="compact",
            aggregation="final",
            max_new_tokens=prompt_config.check_max_tokens,
            temperature=prompt_config.check_temperature,
        )

    @property
    def config(self) -> PromptConfig:
        return self.checker.config

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[ProcessSampleScore]]:
        return [[self._rename(s) for s in row] for row in self.checker.score(questions, prompts, outputs)]

    def _rename(self, score: ProcessSampleScore) -> ProcessSampleScore:
        old = score.scores
        if score.verdict_logprobs is None:  # too long to check: no verdict was read
            vocab = 0.0
        else:
            vocab = math.exp(score.verdict_logprobs[0])
        score.scores = {
            "verifier_vocab": vocab,
            "verifier_yes_no": old["process_final"],
            "verifier_min": old["process_min"],
            "verifier_prod": old["process_prod"],
            "verifier_last": old["process_last"],
        }
        return score


RESOLVE_END = "answer"
"""What a re-solve writes after its last line: the check form's answer line (`answer S vs R`)."""
ANSWER_LINE = re.compile(rf"^{RESOLVE_END}\b", re.MULTILINE)


def resolved_prefix(check: str) -> str | None:
    """The check up to the "=" of its last re-solved line (before its `answer` line); None when it has none."""
    found = ANSWER_LINE.search(check)
    at = check.rfind("=", 0, found.start() if found else len(check))
    return None if at < 0 else check[: at + 1]


def solution_path(solution: str) -> str | None:
    """What a re-solve that follows the solution line by line writes: its working up to its last "=" before its
    answer, then the answer, a line break and the word its answer line starts with (so a solution that stops a
    line early does not read as likely as every solution it is a prefix of); None when it has no answer."""
    answer = extract_answer(solution)
    if answer is None:
        return None
    boxed = solution.rfind("\\boxed")
    body = solution if boxed < 0 else solution[:boxed]
    at = body.rfind("=")
    return body[: at + 1] + answer + "\n" + RESOLVE_END


def teacher_forced_reads(backend, pairs: list[tuple[str, str] | None]) -> list[tuple[float, int]]:
    """(P(continuation | query) teacher-forced, tokens computed) of each (query, continuation); (0, 0) for None
    or a pair longer than the context. Tokens computed: query + continuation, less what the prefix cache holds."""
    fits = [
        k
        for k, pair in enumerate(pairs)
        if pair is not None and len(backend.encode(pair[0] + pair[1])) <= backend.max_model_len
    ]
    queries, continuations = [pairs[k][0] for k in fits], [pairs[k][1] for k in fits]
    lookup = getattr(backend, "cached_prefix_tokens", lambda texts: [0] * len(texts))
    cached = lookup(queries) if fits else []
    logps = backend.continuation_logprobs(queries, continuations) if fits else []
    reads = [(0.0, 0)] * len(pairs)
    for k, q, c, hit, logp in zip(fits, queries, continuations, cached, logps):
        reads[k] = (math.exp(logp), len(backend.encode(q)) + len(backend.encode(c)) - hit)
    return reads


def path_reads(backend, check_prompts: list[str], solutions: list[str]) -> list[tuple[float, int]]:
    """(P(the re-solve follows the solution's own path and ends where it ended), tokens computed) of each
    (check prompt, solution)."""
    paths = [solution_path(s) for s in solutions]
    return teacher_forced_reads(backend, [None if path is None else (p, path) for p, path in zip(check_prompts, paths)])


def _needs_continuations(backend) -> None:
    if not hasattr(backend, "continuation_logprobs"):
        raise ValueError(
            f"check_answer_score needs a backend that scores continuations (hf, vllm, openai); got {backend.name}"
        )


class ResolvingVerifier(CheckingVerifier):
    """A checking verifier whose check solves the problem again. Beside its verdict, two teacher-forced reads
    that need no comparison written by the model:

    - `verifier_answer`: the checkpoint's probability of writing the solution's answer (then a line break) right
      after the re-solve's last "="; 0 when the solution has no answer, the check has no re-solved line, or the
      check was too long to write.
    - `verifier_path`: its probability of re-solving exactly as the solution did, every line and the answer
      (`solution_path`), from the check request on. A slip the re-solve would make lowers this score only as much
      as the model believes the slip, instead of deciding it; 0 when the solution has no answer or the read does
      not fit the context.
    """

    kinds = CheckingVerifier.kinds + ("verifier_answer", "verifier_path")
    headline_kind = "verifier_path"
    """The score headline votes and adaptive confidence use by default: the path read, which a re-solve's slip
    does not decide for every sample of a problem at once (the written verdict is weaker than both reads)."""

    def __init__(self, backend, prompt_config: PromptConfig):
        super().__init__(backend, prompt_config)
        _needs_continuations(backend)

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[ProcessSampleScore]]:
        """`check_samples` re-solves of every solution, sampled together; `verifier_answer` is their mean: the
        model's own chance of reaching the solution's answer. The other kinds and the text are the first's."""
        checks = self.checker.score_checks(questions, prompts, outputs, self.config.check_samples)  # (P, N, n)
        flat_prompts = self.checker.prompts(questions, prompts, outputs)
        solutions = [o for outs in outputs for o in outs]
        per_solution = [row_checks for row in checks for row_checks in row]
        reads = iter(
            self._answer_reads(
                [(fp, s, c) for fp, s, row_checks in zip(flat_prompts, solutions, per_solution) for c in row_checks]
            )
        )
        paths = path_reads(self.checker.backend, flat_prompts, solutions)
        merged = []
        for row_checks, (path, path_tokens) in zip(per_solution, paths):
            mine = [next(reads) for _ in row_checks]
            first = self._rename(replace(row_checks[0]))
            first.scores["verifier_answer"] = sum(p for p, _ in mine) / len(mine)
            first.scores["verifier_path"] = path
            first.tokens = sum(c.tokens for c in row_checks) + sum(t for _, t in mine) + path_tokens
            merged.append(first)
        return _per_problem(merged, outputs)

    def _answer_reads(self, checks: list[tuple[str, str, ProcessSampleScore]]) -> list[tuple[float, int]]:
        """(P(solution's answer after the re-solve's last "="), tokens computed) of each (prompt, solution, check)."""
        pairs = []
        for prompt, solution, check in checks:
            prefix, answer = resolved_prefix(check.text), extract_answer(solution)
            usable = prefix is not None and answer is not None and check.status != "too_long"
            pairs.append((prompt + prefix, answer + "\n") if usable else None)
        return teacher_forced_reads(self.checker.backend, pairs)


class PathVerifier:
    """A re-solving checkpoint's `verifier_path` alone (`check_resolve: false`): no re-solve is written, so no
    verdict, marks, `verifier_answer` or check text; one teacher-forced read per distinct solution."""

    name = "unified"
    kinds = ("verifier_path",)
    headline_kind = "verifier_path"

    def __init__(self, backend, prompt_config: PromptConfig):
        _needs_continuations(backend)
        self.backend = backend
        self.config = prompt_config

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[SampleScore]]:
        check_prompts = [
            build_process_prompt(self.config, q, p, o, "compact", self.backend)
            for q, p, outs in zip(questions, prompts, outputs)
            for o in outs
        ]
        solutions = [o for outs in outputs for o in outs]
        scored = [
            SampleScore({"verifier_path": path}, tokens, status=_read_status(tokens, solution))
            for (path, tokens), solution in zip(path_reads(self.backend, check_prompts, solutions), solutions)
        ]
        return _per_problem(scored, outputs)


def _read_status(tokens: int, solution: str) -> str:
    if tokens:
        return "ok"
    return "no_answer" if solution_path(solution) is None else "too_long"


def _per_problem(flat: list, outputs: Sequence[Sequence[str]]) -> list[list]:
    """Flat per-solution scores regrouped as the (P, N) outputs they came from."""
    result, start = [], 0
    for outs in outputs:
        result.append(flat[start : start + len(outs)])
        start += len(outs)
    return result


def make_unified_verifier(backend, prompt_config: PromptConfig):
    """The unified verifier the checkpoint was trained for (its `verify_form`)."""
    if prompt_config.verify_form == "recompute":
        from .recompute import RecomputeVerifier

        return RecomputeVerifier(backend, prompt_config)
    if prompt_config.verify_form == "check":
        if prompt_config.check_answer_score and not prompt_config.check_resolve:
            return PathVerifier(backend, prompt_config)
        if prompt_config.check_answer_score:
            return ResolvingVerifier(backend, prompt_config)
        return CheckingVerifier(backend, prompt_config)
    return UnifiedVerifier(backend, prompt_config)
