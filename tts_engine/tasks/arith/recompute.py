"""The recompute verifier: a checkpoint recomputes every step of a solution units digit first, and scores the
solution by its probability of the solution's own numbers.

A step computed the way the solution was written (most significant digit first) fails where the generator
fails: the same model that wrote `87*8=706` believes it when it re-solves. Written units digit first, every
digit of a sum, difference or product by one digit depends only on the digits at its own place and the carry
from the place before, which a small model computes far more reliably. So the check reads the solution
transcribed into that form, teacher-forced, after the problem restated in it (every number padded to three
digits, units first):

    Compute left to right: 28*4-18+80.          the generation prompt (shared by the problem's samples: cached)
    <|endoftext|>Check units first.             the request (`check_suffix`; `{problem}` is the restatement)
    820*400-810+080
    820*400=211                                 28*4=112: each solution line, units digit first
    211-810=390                                 112-18=93 (a wrong result: the model expects 490)
    390+080=371
    answer 371                                  \\boxed{173}

The step score of a line is the checkpoint's probability of that line, the solution score the product of all
(`verifier_recompute`): the probability that a checker recomputing the problem step by step writes exactly this
solution. A wrong result, a wrong operand, a wrong value carried from the line before, a missing or extra line
and a wrong answer copy each get a low probability where they are written; nothing is compared by code.
The solution itself is not in the check's context, so the check cannot copy its numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

from ...answers.extract import extract_answer
from ...inputs.prompts import PromptConfig
from ...verifiers.base import PrefixCachedScorer
from ...verifiers.checking import teacher_forced_reads
from ...verifiers.process import ProcessSampleScore
from ...verifiers.registry import register_score_kind, register_verify_form
from .chain import StepLine, answer_line, is_task_problem, read_step_line, restate, units_first_line
from .thinking import CHECK_REQUEST, THINK_END, final_chain

RECOMPUTE_REQUEST = "<|endoftext|>" + CHECK_REQUEST + "{problem}\n"
"""After the generation prompt: the end token, the request, then the problem restated units digit first."""
SCORE_KIND = "verifier_recompute"


def transcribe_line(line: str) -> str:
    """One solution line in the check's form; a line that is not `left op operand=result` is kept as written."""
    step = read_step_line(line)
    return line.strip() if step is None else units_first_line(step)


@dataclass(frozen=True)
class Transcript:
    """A solution in the check's form: one line per step line (the lines before the boxed answer), then the
    answer line."""

    lines: tuple[str, ...]
    answer_line: str
    steps: tuple[StepLine | None, ...]
    """What each line read off the solution (None: a line kept as written)."""
    answer: str
    """The solution's boxed answer as written."""

    @property
    def pieces(self) -> list[str]:
        """The check's text, one piece per solution step (the answer line last), each with its line break."""
        return [line + "\n" for line in self.lines] + [self.answer_line + "\n"]

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def transcribe(solution: str) -> Transcript | None:
    """`solution` in the check's form; None when it has no boxed answer (nothing to check the steps against). A
    thinker's trace (up to its end marker) is read as the solution its answer comes from (`final_chain`), the other
    solutions left out."""
    answer = extract_answer(solution)
    boxed = solution.rfind("\\boxed")
    if answer is None or boxed < 0:
        return None
    lines = [line for line in solution[:boxed].split("\n") if line.strip()]
    if THINK_END.strip() in solution:
        lines = final_chain(solution) or lines
    steps = tuple(read_step_line(line) for line in lines)
    return Transcript(tuple(transcribe_line(line) for line in lines), answer_line(answer), steps, answer)


def step_pieces(steps: Sequence[str]) -> list[str]:
    """Solution steps (lines) in the check's form, each with its line break; a step that boxes an answer becomes
    the answer line (a search scores partial solutions step by step)."""
    pieces = []
    for step in steps:
        answer = extract_answer(step) if "\\boxed" in step else None
        pieces.append((answer_line(answer) if answer is not None else transcribe_line(step)) + "\n")
    return pieces


def check_query(config: PromptConfig, problem: str, prompt: str) -> str:
    """What the check is read after: the generation prompt, then the request with the problem restated."""
    return prompt + config.check_suffix.replace("{problem}", restate(problem))


def recompute_prompt_config(base: PromptConfig) -> PromptConfig:
    """The serving prompts of a checkpoint trained to recompute its solutions."""
    return replace(base, verify_form="recompute", check_suffix=RECOMPUTE_REQUEST, check_answer_score=False)


class RecomputeVerifier:
    """Scores a solution of the arithmetic task by the checkpoint's probability of its numbers, every step
    recomputed units digit first (`verify_form: recompute`); one teacher-forced read per distinct solution and
    no generation. Step scores: the probability of each step's line (the boxed answer's is the last)."""

    name = "recompute"
    scores_by_text = True  # a score belongs to a text: each distinct text is scored once
    kinds = (SCORE_KIND,)
    headline_kind = SCORE_KIND
    judges_steps = True
    """A process verifier: `--verifier-kind process` serves a checkpoint of this form with this class."""

    def step_scorer(self, prompt_for, delimiter: str, score_norm: str) -> "RecomputeStepScorer":
        """Each step recomputed units digit first, teacher-forced (the step by step `verifier_recompute`)."""
        return RecomputeStepScorer(self, prompt_for, delimiter)

    def __init__(self, backend, prompt_config: PromptConfig):
        written = {"check_samples": 1, "check_temperature": 0.0, "check_resolve": True}
        changed = sorted(k for k, v in written.items() if getattr(prompt_config, k) != v)
        if changed:
            raise ValueError(
                f"the recompute verifier reads each solution once and writes nothing: {changed} do not apply to it"
            )
        self.backend = backend
        self.config = prompt_config

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[ProcessSampleScore]]:
        flat = [(q, p, o) for q, p, outs in zip(questions, prompts, outputs) for o in outs]
        reads = self.read_steps([(q, p, o) for q, p, o in flat])
        result, start = [], 0
        for outs in outputs:
            result.append(reads[start : start + len(outs)])
            start += len(outs)
        return result

    def read_steps(self, items: list[tuple[str, str, str]]) -> list[ProcessSampleScore]:
        """One score per (problem, prompt, solution): its step scores read teacher-forced in one batched call."""
        pending, scores = [], []
        for k, (problem, prompt, solution) in enumerate(items):
            transcript = transcribe(solution)
            status = "ok" if transcript else "no_answer"
            if transcript and not is_task_problem(problem):
                status = "not_a_task_problem"
            scores.append(ProcessSampleScore({SCORE_KIND: 0.0}, 0, status=status))
            if status == "ok":
                query = check_query(self.config, problem, prompt)
                if len(self.backend.encode(query + transcript.text)) > self.backend.max_model_len:
                    scores[k].status = "too_long"
                    continue
                scores[k].text = transcript.text
                pending.append((k, query, transcript))
        if not pending:
            return scores
        queries = [query for _, query, _ in pending]
        cached = self.backend.cached_prefix_tokens(queries)
        per_token = self.backend.continuation_token_logprobs(queries, [t.text for _, _, t in pending])
        for (k, query, transcript), hit, logps in zip(pending, cached, per_token):
            steps = self._step_logprobs(transcript, logps)
            score = scores[k]
            score.step_scores = [math.exp(s) for s in steps]
            score.scores = {SCORE_KIND: math.exp(sum(logps))}
            score.first_error = next((i for i, p in enumerate(score.step_scores) if p < 0.5), -1)
            score.tokens = len(self.backend.encode(query)) + len(logps) - hit
        return scores

    def _step_logprobs(self, transcript: Transcript, logps: list[float]) -> list[float]:
        """log P of each piece of the transcript (its tokens' sum); one piece for all if tokens straddle pieces."""
        counts = [len(self.backend.encode(piece)) for piece in transcript.pieces]
        if sum(counts) != len(logps):
            return [sum(logps)]
        out, at = [], 0
        for n in counts:
            out.append(sum(logps[at : at + n]))
            at += n
        return out


class RecomputeStepScorer(PrefixCachedScorer):
    """A recompute checkpoint's check as a step scorer: step k's score is its probability of step k's line
    recomputed units digit first, after steps 1..k-1 (this module's `check_query`); a step that boxes the
    answer is read as the check's answer line. One teacher-forced read per beam per round."""

    name = "recompute"
    reduction = "prod"
    """Search ranks by the product of the step scores unless told otherwise: the step by step `verifier_recompute`."""

    def _read(self, keys):
        pairs = []
        for problem, row in keys:
            if not is_task_problem(problem):
                pairs.append(None)
                continue
            pieces = step_pieces(row)
            query = check_query(self.verifier.config, problem, self.prompt_for(problem))
            pairs.append((query + "".join(pieces[:-1]), pieces[-1]))
        return teacher_forced_reads(self.verifier.backend, pairs, remember=True)


register_verify_form("recompute", RecomputeVerifier)
register_score_kind(SCORE_KIND, "P(the solution's numbers), every step recomputed units digit first", "recompute")
