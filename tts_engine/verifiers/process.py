"""The process verifier (RL Tango): a generative verifier that judges every step, then gives a final verdict.

What it writes, a parser for that which never raises, and `ProcessVerifier`, which serves it behind the
Verifier interface.

Two forms:
- `compact` (the tiny models'): one line per step ending in its mark, then the verdict, each mark a single
  token. A step line is either a bare mark (`1:+`) or a written check of the step ending in the mark (e.g. a
  checking model's re-solve of the step compared with the solution's):

      1:+                          4*28=112 vs 112 +
      2:-                          94+18=113 vs 112 -
      verdict:No                   boxed 174 vs 174 +
                                   verdict:No

- `tango` (RL Tango's, for real models):

      <step_verification><step>... \\boxed{CORRECT}</step><step>... \\boxed{INCORRECT}</step></step_verification>
      <final_verification>\\boxed{INCORRECT}</final_verification>

The parser reads either (it detects the form), checks the number of step verdicts against the solution's
steps and records what went wrong in `status` instead of raising.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ..inputs.prompts import PromptConfig, follow_up_chat
from ..params import SamplingParams
from .base import BatchedScorer, SampleScore, StepScores, check_steps
from .registry import register_score_kind
from .steps import reduce_steps, split_steps

FORMS = ("compact", "tango")
STATUSES = ("ok", "step_count_mismatch", "no_final_verdict", "unparsable")

COMPACT_STEP = re.compile(r"^(?:[ \t]*\d+[ \t]*:|[^\n]*[ \t])[ \t]*([+-])[ \t]*$", re.MULTILINE)
"""A step line: `N:` or a written check followed by whitespace, then the mark."""
COMPACT_VERDICT = re.compile(r"verdict[ \t]*:[ \t]*(Yes|No)\b")
COMPACT_VERDICT_PREFIX = "verdict:"
TANGO_STEP = re.compile(r"<step>(.*?)</step>", re.DOTALL)
TANGO_MARK = re.compile(r"\\boxed\{\s*(CORRECT|INCORRECT)\s*\}")
TANGO_STEPS_BLOCK = re.compile(r"<step_verification>(.*?)(?:</step_verification>|$)", re.DOTALL)
TANGO_FINAL = re.compile(r"<final_verification>.*?\\boxed\{\s*(CORRECT|INCORRECT)\s*\}", re.DOTALL)
TANGO_VERDICT_PREFIX = "<final_verification>\\boxed{"


@dataclass
class ParsedVerification:
    """What could be read from one verifier output."""

    steps: list[bool] | None
    """Verdict per solution step (True = correct); None when missing or not one per step."""
    final: bool | None
    """Final verdict (True = correct); None when absent."""
    status: str
    """ok | step_count_mismatch | no_final_verdict | unparsable (nothing readable)."""
    num_step_verdicts: int = 0
    """Step verdicts found, whatever the solution's step count."""
    mark_offsets: list[int] = field(default_factory=list)
    """Character offset in the output of each step verdict's mark ("+"/"-" or the CORRECT/INCORRECT word)."""
    verdict_offset: int | None = None
    """Character offset of the final verdict word (where its probability is read); None when absent."""
    marks: list[bool] = field(default_factory=list)
    """Every step verdict found, in order (True = correct), whatever the solution's step count."""

    @property
    def first_error(self) -> int | None:
        """0-based index of the first step judged wrong; -1 when every step is judged right; None without steps."""
        if self.steps is None:
            return None
        return next((k for k, ok in enumerate(self.steps) if not ok), -1)


def detect_form(text: str) -> str:
    return "tango" if ("<step_verification>" in text or "<final_verification>" in text) else "compact"


def parse_verification(text: str, num_steps: int) -> ParsedVerification:
    """Step verdicts and final verdict of a verifier output (either form); never raises."""
    try:
        if not isinstance(text, str):
            return ParsedVerification(None, None, "unparsable")
        marks, final, verdict_offset = (_read_tango if detect_form(text) == "tango" else _read_compact)(text)
    except Exception:  # a bad sample never crashes a batch
        return ParsedVerification(None, None, "unparsable")
    steps = [ok for ok, _ in marks] if len(marks) == num_steps and num_steps > 0 else None
    if not marks and final is None:
        status = "unparsable"
    elif steps is None:
        status = "step_count_mismatch"
    elif final is None:
        status = "no_final_verdict"
    else:
        status = "ok"
    return ParsedVerification(
        steps, final, status, len(marks), [o for _, o in marks], verdict_offset, [ok for ok, _ in marks]
    )


def _read_compact(text: str):
    marks = [(m.group(1) == "+", m.start(1)) for m in COMPACT_STEP.finditer(text)]
    verdict = COMPACT_VERDICT.search(text)
    if verdict is None:
        return marks, None, None
    return [mk for mk in marks if mk[1] < verdict.start()], verdict.group(1) == "Yes", verdict.start(1)


def _read_tango(text: str):
    block = TANGO_STEPS_BLOCK.search(text)
    marks = []
    if block is not None:
        for step in TANGO_STEP.finditer(text, block.start(1), block.end(1)):
            found = list(TANGO_MARK.finditer(text, step.start(1), step.end(1)))
            if found:
                marks.append((found[-1].group(1) == "CORRECT", found[-1].start(1)))
    final = TANGO_FINAL.search(text)
    if final is None:
        return marks, None, None
    return marks, final.group(1) == "CORRECT", final.start(1)


def render_verification(steps: list[bool], final: bool, form: str = "compact") -> str:
    """The verifier output for given verdicts: the warm start's targets (and tests')."""
    if form == "compact":
        lines = [f"{k + 1}:{'+' if ok else '-'}" for k, ok in enumerate(steps)]
        return "\n".join(lines + [f"{COMPACT_VERDICT_PREFIX}{'Yes' if final else 'No'}"])
    if form == "tango":
        word = lambda ok: "CORRECT" if ok else "INCORRECT"  # noqa: E731
        body = "".join(f"<step>Step {k + 1} is \\boxed{{{word(ok)}}}</step>" for k, ok in enumerate(steps))
        return (
            f"<step_verification>{body}</step_verification>\n"
            f"<final_verification>\\boxed{{{word(final)}}}</final_verification>"
        )
    raise ValueError(f"form must be one of {FORMS}, got {form!r}")


def verdict_prefix(text: str, parsed: ParsedVerification, form: str) -> tuple[str, bool]:
    """The output up to (not including) the final verdict word, and whether the verdict had to be forced.

    Without a verdict in the output, the verdict prompt is appended to the output so a score can still be read.
    """
    if parsed.verdict_offset is not None:
        return text[: parsed.verdict_offset], False
    prefix = COMPACT_VERDICT_PREFIX if form == "compact" else TANGO_VERDICT_PREFIX
    return text.rstrip() + "\n" + prefix, True


# --- serving -----------------------------------------------------------------------------------------------
PROCESS_HEADLINES = ("final", "min", "prod", "mean", "last")
"""What the process verifier's headline score `process` is: its final verdict, or its step verdicts reduced."""
STEP_SCORE_MODES = ("sampled", "exact")
PROCESS_INSTRUCTION = (
    "Verify the solution step by step. For each step, explain and end with \\boxed{CORRECT} or "
    "\\boxed{INCORRECT} inside <step>...</step>, all inside <step_verification>...</step_verification>; "
    "then give <final_verification>\\boxed{CORRECT}</final_verification> or "
    "<final_verification>\\boxed{INCORRECT}</final_verification>."
)


@dataclass
class ProcessSampleScore(SampleScore):
    """A SampleScore with what the process verifier wrote and read."""

    status: str = "ok"
    """Parser status (see STATUSES); with "+forced_verdict" when the verdict had to be asked for."""
    first_error: int | None = None
    """0-based first step judged wrong, -1 for none, None without step verdicts."""
    verdict_logprobs: tuple[float, float] | None = None
    """log P(correct word), log P(incorrect word) at the final verdict, under the full vocabulary."""
    mark_scores: list[float] | None = None
    """P(correct) of every step verdict written, in order, even when they do not match the solution's steps
    (a check of a partial solution marks its steps, then what is missing); sampled step scores only."""


def build_process_prompt(
    config: PromptConfig, problem: str, prompt: str, solution: str, form: str, backend=None
) -> str:
    """prompt + solution + the step-checking request (a new user turn for chat models, in Tango's form)."""
    chat = follow_up_chat(config, problem, solution, PROCESS_INSTRUCTION, backend)
    if chat is not None:
        return chat
    if form != "compact":
        return prompt + solution + "\n\n" + PROCESS_INSTRUCTION + "\n"
    return prompt + solution + config.check_suffix.replace("{problem}", problem)


def _verdict_word_ids(backend, form: str, config: PromptConfig) -> tuple[int, int]:
    """Token ids whose probabilities decide the verdict: Yes/No (compact) or the first tokens of CORRECT/INCORRECT."""
    words = (config.yes_token, config.no_token) if form == "compact" else ("CORRECT", "INCORRECT")
    ids = [backend.encode(w) for w in words]
    if form == "compact" and any(len(i) != 1 for i in ids):
        raise ValueError(f"the compact process form needs {words} as single tokens, got {ids}: set yes_token/no_token")
    if not ids[0] or not ids[1] or ids[0][0] == ids[1][0]:
        raise ValueError(f"the verdict words {words} must start with different tokens, got {ids}")
    return ids[0][0], ids[1][0]


class ProcessVerifier:
    """Generates a step-by-step verification of each solution and scores it.

    Score kinds: process_final (P(correct) of the final verdict, correct vs incorrect token at the verdict
    position), process_min / _prod / _mean / _last (step scores reduced), and `process`, the headline
    chosen by `headline`. Samples whose step verdicts do not match their steps have no step scores; their
    reductions fall back to process_final (status says so), so every sample has every kind.
    """

    name = "process"
    scores_by_text = True  # a score belongs to a text: each distinct text is scored once
    kinds = ("process", "process_final", "process_min", "process_prod", "process_mean", "process_last")
    headline_kind = "process"
    """The score headline votes and adaptive confidence use: the one `headline` chose."""

    def step_scorer(self, prompt_for: Callable[[str], str], delimiter: str, score_norm: str) -> "ProcessStepScorer":
        """Its step verdicts on the solution so far."""
        return ProcessStepScorer(self, prompt_for, delimiter)

    def __init__(
        self,
        backend,
        prompt_config: PromptConfig | None = None,
        *,
        form: str = "compact",
        headline: str = "final",
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        seed: int | None = 0,
        step_scores: str = "sampled",
    ):
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        if headline not in PROCESS_HEADLINES:
            raise ValueError(f"process headline must be one of {PROCESS_HEADLINES}, got {headline!r}")
        if step_scores not in STEP_SCORE_MODES:
            raise ValueError(f"step_scores must be one of {STEP_SCORE_MODES}, got {step_scores!r}")
        self.backend = backend
        self.config = prompt_config or PromptConfig()
        self.form = form
        self.headline = headline
        self.step_score_mode = step_scores
        longest = self.config.check_max_tokens if max_new_tokens is None else max_new_tokens
        self.params = SamplingParams(n=1, temperature=temperature, max_new_tokens=longest, seed=seed)
        self.yes_id, self.no_id = _verdict_word_ids(backend, form, self.config)
        marks = ("+", "-") if form == "compact" else ("CORRECT", "INCORRECT")
        self.mark_ids = tuple(backend.encode(m)[0] for m in marks)

    def prompts(self, questions, prompts, outputs) -> list[str]:
        return [
            build_process_prompt(self.config, q, p, o, self.form, self.backend)
            for q, p, outs in zip(questions, prompts, outputs)
            for o in outs
        ]

    def score(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]]
    ) -> list[list[SampleScore]]:
        return [[checks[0] for checks in row] for row in self.score_checks(questions, prompts, outputs, 1)]

    def score_checks(
        self, questions: Sequence[str], prompts: Sequence[str], outputs: Sequence[Sequence[str]], n: int
    ) -> list[list[list[ProcessSampleScore]]]:
        """`n` verifications of every solution, sampled together from one prompt, `# (P, N, n)`. The prompt is
        computed once: only the first of a solution's `n` verifications counts its tokens."""
        flat_prompts = self.prompts(questions, prompts, outputs)
        solutions = [o for outs in outputs for o in outs]
        # A verification prompt that leaves no room for the verdict scores 0 ("too_long"), never fails the batch.
        room = self.backend.max_model_len - self.params.max_new_tokens
        fits = [k for k, fp in enumerate(flat_prompts) if len(self.backend.encode(fp)) < room]
        params = replace(self.params, n=n)
        generated = self.backend.generate([flat_prompts[k] for k in fits], params) if fits else []  # (F, n)
        scored = self.score_generated(
            [flat_prompts[k] for k in fits for _ in range(n)],
            [solutions[k] for k in fits for _ in range(n)],
            [g for row in generated for g in row],
        )
        done = {}
        for index, (k, row) in enumerate(zip(fits, generated)):
            done[k] = scored[index * n : (index + 1) * n]
            for again, sample in zip(done[k][1:], row[1:]):
                again.tokens -= sample.num_prompt_tokens - sample.num_cached_tokens
        result, start = [], 0
        for outs in outputs:
            result.append(
                [
                    done.get(k) or [ProcessSampleScore({kind: 0.0 for kind in self.kinds}, 0, "too_long")] * n
                    for k in range(start, start + len(outs))
                ]
            )
            start += len(outs)
        return result

    def score_generated(self, flat_prompts: list[str], solutions: list[str], generated) -> list[ProcessSampleScore]:
        """Scores of already generated verifications (backend Samples), one per (prompt, solution)."""
        parsed = [parse_verification(g.text, len(split_steps(s))) for g, s in zip(generated, solutions)]
        prefixes = [verdict_prefix(g.text, p, self.form) for g, p in zip(generated, parsed)]
        final = (
            self.backend.yes_no_logprobs(
                [fp + pre for fp, (pre, _) in zip(flat_prompts, prefixes)], self.yes_id, self.no_id
            )
            if flat_prompts
            else []
        )
        steps = self._step_scores(flat_prompts, generated, parsed)
        out = []
        for k, (g, p) in enumerate(zip(generated, parsed)):
            ly, ln = final[k]
            p_final = _sigmoid(ly - ln)
            scores = {"process_final": p_final}
            for how in PROCESS_HEADLINES[1:]:
                scores[f"process_{how}"] = reduce_steps(steps[k], how) if steps[k] else p_final
            scores["process"] = scores[f"process_{self.headline}"]
            status = p.status + ("+forced_verdict" if prefixes[k][1] else "")
            tokens = g.num_prompt_tokens - g.num_cached_tokens + g.num_tokens  # what was computed to check
            marks = self._sampled_step_scores(g, p.marks, p.mark_offsets) if self.step_score_mode == "sampled" else None
            out.append(
                ProcessSampleScore(
                    scores,
                    tokens,
                    status,
                    step_scores=steps[k],
                    text=g.text,
                    first_error=p.first_error,
                    verdict_logprobs=(ly, ln),
                    mark_scores=marks,
                )
            )
        return out

    def _step_scores(self, flat_prompts, generated, parsed) -> list[list[float] | None]:
        """P(step correct) per step: from each mark token's own log-prob (sampled) or re-read as +/- (exact)."""
        if self.step_score_mode == "exact":
            queries = [
                (k, flat_prompts[k] + g.text[:o])
                for k, (g, p) in enumerate(zip(generated, parsed))
                if p.steps is not None
                for o in p.mark_offsets
            ]
            logps = self.backend.yes_no_logprobs([q for _, q in queries], *self.mark_ids) if queries else []
            result: list[list[float] | None] = [[] if p.steps is not None else None for p in parsed]
            for (k, _), (lp, lm) in zip(queries, logps):
                result[k].append(_sigmoid(lp - lm))
            return result
        return [
            None if p.steps is None else self._sampled_step_scores(g, p.steps, p.mark_offsets)
            for g, p in zip(generated, parsed)
        ]

    def _sampled_step_scores(self, sample, marks: list[bool], offsets: list[int]) -> list[float]:
        """P(correct) of each step from the sampled mark's probability: p if it said correct, else 1 - p."""
        texts = [self.backend.decode([t]) for t in sample.token_ids]
        ends, offset = [], 0
        for t in texts:
            offset += len(t)
            ends.append(offset)
        scores = []
        for ok, char in zip(marks, offsets):
            index = next((i for i, e in enumerate(ends) if e > char), None)
            if index is None or index >= len(sample.logprobs):
                scores.append(1.0 if ok else 0.0)
                continue
            prob = min(1.0, math.exp(sample.logprobs[index]))
            scores.append(prob if ok else 1.0 - prob)
        return scores


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


class ProcessStepScorer(BatchedScorer):
    """The generative process verifier (Tango form) as a step scorer: its step verdicts on the solution so far.

    `prompt_for(problem)` is the generation prompt the verifier sees before the solution (the engine's).
    When its verdicts do not match the steps (or the prompt is too long), every step gets the final-verdict
    score and `status` says why.
    """

    name = "process"

    def __init__(self, verifier, prompt_for: Callable[[str], str], delimiter: str = "\n"):
        self.verifier, self.prompt_for, self.delimiter = verifier, prompt_for, delimiter
        params = getattr(verifier, "params", None)
        self.cache: dict[tuple[str, tuple[str, ...]], StepScores] | None = (
            {} if params is not None and params.greedy else None
        )
        """With a greedy verifier a (problem, steps) pair always gets the same verdicts: each is scored once
        (a search meets the same partial solution many times); a cached answer costs no tokens."""

    def score_batch(self, problems, steps):
        keys = [(problem, tuple(row)) for problem, row in zip(problems, steps)]
        for row in steps:
            check_steps(row)
        known = self.cache if self.cache is not None else {}
        todo = list(dict.fromkeys(k for k in keys if k not in known)) if self.cache is not None else keys
        fresh = self._verify(todo)
        if self.cache is None:
            return fresh
        self.cache.update(zip(todo, fresh))
        uncharged, result = set(todo), []
        for key in keys:  # the tokens of a fresh verification are charged once, to its first asker
            scores = self.cache[key]
            result.append(scores if key in uncharged else StepScores(scores.scores, 0, scores.status))
            uncharged.discard(key)
        return result

    def _verify(self, keys: list[tuple[str, tuple[str, ...]]]) -> list[StepScores]:
        if not keys:
            return []
        problems = [p for p, _ in keys]
        scored = self.verifier.score(
            problems, [self.prompt_for(p) for p in problems], [[self.delimiter.join(row)] for _, row in keys]
        )
        return [self._step_scores(verdict, len(row)) for (_, row), (verdict,) in zip(keys, scored)]

    def _step_scores(self, verdict, num_steps: int) -> StepScores:
        """One verification's score per step; the final verdict's score for every step when they do not match."""
        step_scores = getattr(verdict, "step_scores", None)
        if step_scores is not None and len(step_scores) == num_steps:
            return StepScores(list(step_scores), verdict.tokens, verdict.status)
        final = verdict.scores.get("process_final", 0.0)
        status = verdict.status if verdict.status != "ok" else "step_count_mismatch"
        return StepScores([final] * num_steps, verdict.tokens, status)


register_score_kind(
    "process", "the process verifier's headline: its final verdict or a reduction of its steps", "process"
)
register_score_kind("process_final", "P(correct) at the process verifier's final verdict", "process")
for _how in ("min", "prod", "mean", "last"):
    register_score_kind(f"process_{_how}", f"the process verifier's step verdicts reduced by {_how}", "process")
