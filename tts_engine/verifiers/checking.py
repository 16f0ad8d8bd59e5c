"""Checkpoints that check their own solutions step by step before a verdict (`verify_form: check`), and those
whose check solves the problem again (`verify_form: resolve`), with their step scorers."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Callable, Sequence

from ..answers.extract import extract_answer
from ..inputs.prompts import PromptConfig
from .base import PrefixCachedScorer, SampleScore, StepScores, common_prefix
from .process import ProcessSampleScore, ProcessStepScorer, ProcessVerifier, build_process_prompt
from .registry import register_score_kind, register_verify_form


class CheckingVerifier:
    """The unified verifier of a checkpoint that checks its own solutions step by step before its verdict.

    The reasoner writes a check of every step (`verify_form: check`; the compact process form), then
    "verdict:Yes" or "verdict:No". Scores: P(Yes) at the verdict in both normalisations, as the single-token
    unified verifier gives, and the step marks' P(+) aggregated by min, prod and last. The check text and the
    step scores are kept with each sample.
    """

    name = "check"
    scores_by_text = True  # a score belongs to a text: each distinct text is scored once
    kinds = ("verifier_vocab", "verifier_yes_no", "verifier_min", "verifier_prod", "verifier_last")
    headline_kind = None  # verifier_<score_norm>

    def __init__(self, backend, prompt_config: PromptConfig):
        self.checker = ProcessVerifier(
            backend,
            prompt_config,
            form="compact",
            headline="final",
            max_new_tokens=prompt_config.check_max_tokens,
            temperature=prompt_config.check_temperature,
        )

    @property
    def config(self) -> PromptConfig:
        return self.checker.config

    def step_scorer(self, prompt_for: Callable[[str], str], delimiter: str, score_norm: str) -> "CheckStepScorer":
        """The P(+) of each step's mark in its check of the solution so far."""
        return CheckStepScorer(self, prompt_for, delimiter)

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


def teacher_forced_reads(
    backend, pairs: list[tuple[str, str] | None], *, remember: bool = False
) -> list[tuple[float, int]]:
    """(P(continuation | query) teacher-forced, tokens computed) of each (query, continuation); (0, 0) for None
    or a pair longer than the context. Tokens computed: query + continuation, less what the prefix cache holds.
    `remember`: a later read extends these (a step scorer's next step): backends that can keep them cached do."""
    fits = [
        k
        for k, pair in enumerate(pairs)
        if pair is not None and len(backend.encode(pair[0] + pair[1])) <= backend.max_model_len
    ]
    queries, continuations = [pairs[k][0] for k in fits], [pairs[k][1] for k in fits]
    cached = backend.cached_prefix_tokens(queries) if fits else []
    keep = {"remember": True} if remember and backend.remembers_reads else {}
    logps = backend.continuation_logprobs(queries, continuations, **keep) if fits else []
    reads = [(0.0, 0)] * len(pairs)
    for k, q, c, hit, logp in zip(fits, queries, continuations, cached, logps):
        reads[k] = (math.exp(logp), len(backend.encode(q)) + len(backend.encode(c)) - hit)
    return reads


def path_reads(backend, check_prompts: list[str], solutions: list[str]) -> list[tuple[float, int]]:
    """(P(the re-solve follows the solution's own path and ends where it ended), tokens computed) of each
    (check prompt, solution)."""
    paths = [solution_path(s) for s in solutions]
    return teacher_forced_reads(backend, [None if path is None else (p, path) for p, path in zip(check_prompts, paths)])


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

    name = "resolve"
    kinds = CheckingVerifier.kinds + ("verifier_answer", "verifier_path")
    headline_kind = "verifier_path"
    """The score headline votes and adaptive confidence use by default: the path read, which a re-solve's slip
    does not decide for every sample of a problem at once (the written verdict is weaker than both reads)."""

    def __init__(self, backend, prompt_config: PromptConfig):
        super().__init__(backend, prompt_config)

    def step_scorer(self, prompt_for: Callable[[str], str], delimiter: str, score_norm: str) -> "PathStepScorer":
        """Its belief in each step, read teacher-forced (the step by step `verifier_path`)."""
        return PathStepScorer(self, prompt_for, delimiter)

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

    name = "path"
    scores_by_text = True  # a score belongs to a text: each distinct text is scored once
    kinds = ("verifier_path",)
    headline_kind = "verifier_path"

    def __init__(self, backend, prompt_config: PromptConfig):
        self.backend = backend
        self.config = prompt_config

    def step_scorer(self, prompt_for: Callable[[str], str], delimiter: str, score_norm: str):
        raise ValueError(
            "step-level search needs step scores, and check_resolve=false writes no check to read them from: "
            "drop --check-option check_resolve=false"
        )

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


class CheckStepScorer(ProcessStepScorer):
    """A model that checks its own solutions step by step (`verify_form: check`) as a step scorer.

    Its check of a partial solution marks every written step and then what is missing, so step k's score is
    the P(+) of the k-th mark it wrote; with fewer marks than steps, every step gets the verdict's score.
    """

    name = "check"

    def __init__(self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n"):
        super().__init__(verifier.checker, prompt_for, delimiter)

    def _step_scores(self, verdict, num_steps: int) -> StepScores:
        marks = verdict.mark_scores or []
        if len(marks) >= num_steps:
            return StepScores(list(marks[:num_steps]), verdict.tokens, "ok")
        return StepScores([verdict.scores.get("process_final", 0.0)] * num_steps, verdict.tokens, "too_few_marks")


class PathStepScorer(PrefixCachedScorer):
    """A re-solving checkpoint's path read (`verifier_path`) as a step scorer.

    Step k's score is read when the solution has k steps: the checkpoint's probability, re-solving after reading
    them with steps 1..k-1 teacher-forced, of writing step k next; for a step that only boxes the answer, of that
    answer as the last line's result and of the re-solve ending there (`solution_path`), so that a beam boxing its
    answer before the problem's last operation scores low. One teacher-forced read per beam per round.
    """

    name = "path"
    reduction = "prod"
    """Search ranks by the product of the step scores unless told otherwise: the step by step `verifier_path`."""

    def _read(self, keys):
        checker = self.verifier.checker
        pairs = []
        for problem, row in keys:
            [check] = checker.prompts([problem], [self.prompt_for(problem)], [[self.delimiter.join(row)]])
            before, now = self._path(row[:-1]), self._path(row)
            common = common_prefix(before, now)
            pairs.append(None if common == now else (check + common, now[len(common) :]))
        reads = teacher_forced_reads(checker.backend, pairs, remember=True)
        return [(1.0, 0) if pair is None else read for pair, read in zip(pairs, reads)]

    def _path(self, row: Sequence[str]) -> str:
        return solution_path(self.delimiter.join(row)) or "".join(step + "\n" for step in row)


def make_resolving_verifier(backend, prompt_config: PromptConfig):
    """The `resolve` form: the re-solve and both reads, or the path read alone with `check_resolve: false`."""
    if not prompt_config.check_resolve:
        return PathVerifier(backend, prompt_config)
    return ResolvingVerifier(backend, prompt_config)


register_verify_form("check", CheckingVerifier)
register_verify_form("resolve", make_resolving_verifier)
for _how in ("min", "prod", "last"):
    register_score_kind(f"verifier_{_how}", f"the check's step marks' P(+), reduced by {_how}", "check, resolve")
register_score_kind(
    "verifier_answer", "P(the solution's answer) right after the re-solve's last '=' (mean over re-solves)", "resolve"
)
register_score_kind("verifier_path", "P(re-solving exactly the solution's path), read teacher-forced", "resolve, path")
