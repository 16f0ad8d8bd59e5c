"""Sequential test-time scaling of a thinking model: cap its trace, make it think longer, or probe it and stop early.

A thinking model (R1, Qwen3, the shipped thinker) writes a trace between markers, then its answer (the model's
prompt settings name the markers, `answer_forcing` and `continue_text`). Three strategies spend that axis, each on
N samples per problem, scored, voted and calibrated as every strategy's are:

- `thinking-budget` (s1's cap): a trace still open at `thinking_budget` tokens is cut there and its answer forced
  (`answer_forcing` appended, `answer_tokens` generated). A trace that ends earlier is left alone.
- `budget-forcing` (s1's "Wait"): a trace that ends before `min_thinking` tokens has its end replaced by
  `continue_text` and goes on, at most `max_waits` times; then capped as above.
- `probe` (Dynasor / Certaindex): every `probe_every` thinking tokens each open trace is branched with
  `answer_forcing` and a short answer read greedily (the main trace is not disturbed; on hf the branch reuses the
  trace's cached keys and values). A sample stops once its probed answer has held for `probe_holds` probes, the
  problem once `probe_consensus` of its samples have agreed on one answer for `probe_holds` probes in a row (early
  probes of a computation agree on its first partial results); a stopped sample's answer is its last probe. Probe tokens
  count in the record's generated tokens.

Forced text (the forcing, a "Wait") is part of a sample's text and tokens (log-probability 0): the model reads it
as it reads its own. Records carry a "thinking" block: what each sample's trace did.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator, Sequence

from ..answers.thinking import answer_after_thinking
from ..backends.base import Sample
from ..inputs.problems import Problem
from ..params import SamplingParams
from ..pipeline.records import ProblemRecord, StrategyBlock
from ..settings import check_int, check_probability
from .parts import Parts
from .registry import BlockView, register_strategy
from .rounds import continue_samples, derive_seed, generate, generate_or_skip


@dataclass
class ThinkingConfig:
    """Settings every sequential strategy shares (`thinking-budget`, and the base of the others)."""

    thinking_budget: int = 512
    """Most thinking tokens of a sample; a trace still open there is cut and its answer forced."""
    answer_tokens: int = 32
    """Most tokens of an answer written after the trace."""

    def __post_init__(self) -> None:
        check_int("thinking_budget", self.thinking_budget)
        check_int("answer_tokens", self.answer_tokens)


@dataclass
class ForcingConfig(ThinkingConfig):
    """Making a trace that ends early go on (s1's budget forcing): `budget-forcing`, and `probe` with --max-waits."""

    min_thinking: int = 256
    """A trace that ends before this many tokens is made to go on (its end replaced by the continue text)."""
    max_waits: int = 0
    """Most times a trace is made to go on (0: never)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("min_thinking", self.min_thinking)
        check_int("max_waits", self.max_waits, 0)


@dataclass
class BudgetForcingConfig(ForcingConfig):
    """Settings of `budget-forcing`."""

    max_waits: int = 2
    """Most times a trace is made to go on."""


@dataclass
class ProbeConfig(ForcingConfig):
    """Settings of `probe` (with --max-waits, a trace that ends before --min-thinking tokens goes on as under
    `budget-forcing`, probed all the while)."""

    probe_every: int = 64
    """Thinking tokens between two probes of an open trace."""
    probe_holds: int = 3
    """A sample stops once its probed answer has held for this many probes in a row."""
    probe_consensus: float = 0.75
    """A problem stops once this share of its samples' current answers (probed or final) has agreed on one answer
    for `probe_holds` probes in a row."""
    probe_tokens: int = 16
    """Most tokens of a probe's answer."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("probe_every", self.probe_every)
        check_int("probe_holds", self.probe_holds)
        check_int("probe_tokens", self.probe_tokens)
        self.probe_consensus = check_probability("probe_consensus", self.probe_consensus)


@dataclass
class ThinkingBlock(StrategyBlock):
    """What the traces of a problem's samples did."""

    key = "thinking"
    stopped: dict[str, int] = field(default_factory=dict)
    """How each sample's trace ended: ended (on its own), budget (cut, answer forced), waits (made to go on, then
    ended), settled (its probed answer held), consensus (its problem's answers agreed), context (it filled the
    model's context)."""
    waits: int = 0
    probes: int = 0
    probe_tokens: int = 0


@dataclass
class Trace:
    """One sample in progress: its text so far, tokens, log-probs, how it ended, and its probes."""

    sample: Sample
    ended: str | None = None
    waits: int = 0
    probes: list[str | None] = field(default_factory=list)
    """The answer of every probe so far."""
    last_probe: Sample | None = None
    """The last probe's branch (after the forcing text): a stopped sample's answer."""


# --- the text operations every strategy here shares ---------------------------------------------------------------
def appended(parts: Parts, sample: Sample, text: str) -> Sample:
    """`sample` with `text` the strategy wrote appended (its tokens counted, log-probability 0)."""
    ids = parts.backend.encode(text)
    return replace(
        sample,
        text=sample.text + text,
        token_ids=[*sample.token_ids, *ids],
        logprobs=[*sample.logprobs, *[0.0] * len(ids)],
        confidences=[*sample.confidences, *[0.0] * len(ids)] if sample.confidences else sample.confidences,
    )


def extend(parts: Parts, prompts: list[str], traces: list[Trace], params: SamplingParams, max_tokens: int, stream: str):
    """Each trace continued by at most `max_tokens` generated tokens (one generate call; seeded by `stream`). A trace
    that fills the model's context is left as it is, ended "context" (it can be neither continued nor answered)."""
    if not traces:
        return
    step = replace(params, n=1, max_new_tokens=max_tokens, seed=derive_seed(params.seed, stream, 0))
    rows = generate_or_skip(parts.backend, [p + t.sample.text for p, t in zip(prompts, traces)], step)
    for t, new in zip(traces, rows):
        if new is None:
            t.ended = t.ended or "context"
            continue
        t.sample = replace(
            t.sample,
            text=t.sample.text + new.text,
            token_ids=[*t.sample.token_ids, *new.token_ids],
            logprobs=[*t.sample.logprobs, *new.logprobs],
            confidences=[*t.sample.confidences, *new.confidences] if t.sample.confidences else t.sample.confidences,
            finish_reason=new.finish_reason,
        )


def force_answers(parts: Parts, prompts: list[str], traces: list[Trace], params: SamplingParams, config, reason: str):
    """The traces cut where they are: the answer forced (`answer_forcing`, then `answer_tokens` generated), ended
    `reason`. A trace with no room left for its answer is left as it was, ended "context"."""
    cut = [t.sample for t in traces]
    for t in traces:
        t.sample = appended(parts, t.sample, parts.prompts.config.answer_forcing)
    extend(parts, prompts, traces, replace(params, stop=[]), config.answer_tokens, f"answer-{reason}")
    for t, before in zip(traces, cut):
        if t.ended == "context":
            t.sample = before
        else:
            t.ended = reason


def held_for(answers: list[str | None], holds: int) -> bool:
    """The last `holds` answers are one and the same answer."""
    return len(answers) >= holds and len(set(answers[-holds:])) == 1 and answers[-1] is not None


def stopping_at_end(parts: Parts, params: SamplingParams) -> SamplingParams:
    """`params` that stop a sample at its trace's end marker (a trace that ends can then be made to go on)."""
    return replace(params, stop=[*params.stop, parts.prompts.config.think_end])


def at_end(parts: Parts, prompt: str, t: Trace) -> bool:
    """The trace stopped at its end marker (a stop string: not in the text), and nothing else stopped it."""
    return t.sample.finish_reason == "stop" and thinks(parts, prompt, t.sample) and t.ended is None


def ends_early(parts: Parts, prompt: str, t: Trace, config: ForcingConfig) -> bool:
    """The trace ended before `min_thinking` tokens and may still be made to go on."""
    return at_end(parts, prompt, t) and t.sample.num_tokens < config.min_thinking and t.waits < config.max_waits


def make_wait(parts: Parts, t: Trace) -> None:
    """The continue text written where the trace ended: it goes on thinking."""
    t.sample, t.waits = appended(parts, t.sample, parts.prompts.config.continue_text), t.waits + 1


def close_ended(parts: Parts, prompts: list[str], traces: list[list[Trace]], params: SamplingParams, config) -> None:
    """Traces that stopped at their end marker: the marker (removed as a stop string) written back, then the answer."""
    closing = [(prompts[i], t) for i, row in enumerate(traces) for t in row if at_end(parts, prompts[i], t)]
    for _, t in closing:
        t.sample, t.ended = appended(parts, t.sample, parts.prompts.config.think_end), "waits" if t.waits else None
    answer = replace(params, stop=[])
    extend(parts, [p for p, _ in closing], [t for _, t in closing], answer, config.answer_tokens, "answer")


def trace_open(parts: Parts, sample: Sample) -> bool:
    """The sample is still inside its trace (the end marker not yet written)."""
    return parts.prompts.config.think_end not in sample.text


def thinks(parts: Parts, prompt: str, sample: Sample) -> bool:
    """The prompt or the sample opened a trace that is still open: a model that writes no markers never thinks,
    and its samples are never made to go on. An empty start marker: every sample opens a trace at its start."""
    config = parts.prompts.config
    if not config.think_start:
        return bool(config.think_end) and config.think_end not in sample.text
    written = prompt + sample.text
    start = written.rfind(config.think_start)
    return start >= 0 and config.think_end not in written[start:]


def run_block(parts: Parts, params: SamplingParams, name: str, config) -> dict[str, Any]:
    budget = config.thinking_budget + config.answer_tokens
    return {**parts.run_info(replace(params, max_new_tokens=budget)), "thinking": {"strategy": name, **asdict(config)}}


def records(parts: Parts, problems, prompts, traces: list[list[Trace]], params, started: float, probe_tokens=None):
    """The pipeline's records of finished traces, with their thinking block; their wall time counts from `started`
    (the traces' first tokens)."""
    samples = [[t.sample for t in row] for row in traces]
    built = parts.pipeline.records(
        problems, prompts, samples, params, verifier=parts.verifier, started=started, extra_tokens=probe_tokens
    )
    for k, (record, row) in enumerate(zip(built, traces)):
        record.block = ThinkingBlock(
            stopped=dict(Counter(t.ended or "ended" for t in row)),
            waits=sum(t.waits for t in row),
            probes=sum(len(t.probes) for t in row),
            probe_tokens=probe_tokens[k] if probe_tokens is not None else 0,
        )
    return built


# --- thinking-budget -------------------------------------------------------------------------------------------
VIEW = BlockView("thinking", "facts", "Thinking")


@register_strategy(
    "thinking-budget",
    config_type=ThinkingConfig,
    help="Cap each trace at --thinking-budget tokens, then force its answer (s1's cap).",
    view=VIEW,
)
class ThinkingBudgetPlan:
    """N samples per problem, each trace capped at the budget and its answer forced there."""

    name = "thinking-budget"

    def __init__(self, parts: Parts, params: SamplingParams, config: ThinkingConfig):
        self.parts, self.config = parts, config
        self.params = replace(params, max_new_tokens=config.thinking_budget)
        self.rows_per_problem = params.n
        self.run_block = run_block(parts, params, self.name, config)

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        parts, params, started = self.parts, self.params, time.perf_counter()
        prompts = parts.prompts.build(problems)
        traces = [[Trace(s) for s in row] for row in generate(parts, problems, prompts, params)]  # (P, N)
        self.finish(prompts, traces)
        yield from records(parts, problems, prompts, traces, params, started)

    def finish(self, prompts: list[str], traces: list[list[Trace]]) -> None:
        """Traces cut by the budget: still open, forced; closed, their answer written to its end."""
        cut = [
            (prompts[i], t)
            for i, row in enumerate(traces)
            for t in row
            if t.sample.finish_reason == "length" and t.ended != "context"
        ]
        still = [(p, t) for p, t in cut if trace_open(self.parts, t.sample)]
        closed = [(p, t) for p, t in cut if not trace_open(self.parts, t.sample)]
        force_answers(self.parts, [p for p, _ in still], [t for _, t in still], self.params, self.config, "budget")
        answer = replace(self.params, stop=[])
        extend(self.parts, [p for p, _ in closed], [t for _, t in closed], answer, self.config.answer_tokens, "answer")


# --- budget-forcing --------------------------------------------------------------------------------------------
@register_strategy(
    "budget-forcing",
    config_type=BudgetForcingConfig,
    help="Make a trace that ends before --min-thinking tokens go on ('Wait'), then cap it (s1's budget forcing).",
    view=VIEW,
)
class BudgetForcingPlan(ThinkingBudgetPlan):
    """N samples per problem; a trace ending too early goes on after the continue text, at most max_waits times."""

    name = "budget-forcing"

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        parts, config, started = self.parts, self.config, time.perf_counter()
        prompts = parts.prompts.build(problems)
        params = stopping_at_end(parts, self.params)
        traces = [[Trace(s) for s in row] for row in generate(parts, problems, prompts, params)]  # (P, N)
        for round_index in range(config.max_waits + 1):
            stopped = [
                (prompts[i], t) for i, row in enumerate(traces) for t in row if ends_early(parts, prompts[i], t, config)
            ]
            if not stopped:
                break
            for _, t in stopped:
                make_wait(parts, t)
            room = config.thinking_budget - min(t.sample.num_tokens for _, t in stopped)
            extend(parts, [p for p, _ in stopped], [t for _, t in stopped], params, max(1, room), f"wait-{round_index}")
        close_ended(parts, prompts, traces, self.params, config)
        self.finish(prompts, traces)
        yield from records(parts, problems, prompts, traces, self.params, started)


# --- probe -----------------------------------------------------------------------------------------------------
@register_strategy(
    "probe",
    config_type=ProbeConfig,
    help="Probe each trace every --probe-every tokens for its answer; stop once it holds or the samples agree.",
    view=VIEW,
)
class ProbePlan(ThinkingBudgetPlan):
    """N samples per problem, thinking in steps of probe_every tokens, each open trace probed after each step."""

    name = "probe"

    def solve(self, problems: Sequence[Problem]) -> Iterator[ProblemRecord]:
        parts, config, started = self.parts, self.config, time.perf_counter()
        prompts = parts.prompts.build(problems)
        params = stopping_at_end(parts, self.params) if config.max_waits else self.params
        step = replace(params, max_new_tokens=min(config.probe_every, config.thinking_budget))
        traces = [[Trace(s) for s in row] for row in generate(parts, problems, prompts, step)]  # (P, N)
        self._wait(prompts, traces)
        probe_tokens = [0] * len(problems)
        budget = step.max_new_tokens
        leaders: list[list[str | None]] = [[] for _ in problems]  # each problem's agreed answer after every probe
        while True:
            open_ = [(i, t) for i, row in enumerate(traces) for t in row if self._thinking(t)]
            if not open_:
                break
            for i, tokens in self._probe([prompts[i] for i, _ in open_], [t for _, t in open_], [i for i, _ in open_]):
                probe_tokens[i] += tokens
            self._settle(traces, leaders)
            budget = min(budget + config.probe_every, config.thinking_budget)
            going = [(i, t) for i, row in enumerate(traces) for t in row if self._thinking(t)]
            if not going or all(t.sample.num_tokens >= config.thinking_budget for _, t in going):
                break
            rows = continue_samples(
                parts.backend,
                [prompts[i] for i, _ in going],
                [[t.sample] for _, t in going],
                budget=budget,
                params=params,
                round_index=budget // config.probe_every,
            )
            for (_, t), [sample] in zip(going, rows):
                t.sample = sample
            self._wait(prompts, traces)
        if config.max_waits:  # traces stopped at their end marker (a stop string only then): closed and answered
            close_ended(parts, prompts, traces, self.params, config)
        self.finish(prompts, traces)
        yield from records(parts, problems, prompts, traces, self.params, started, probe_tokens)

    def _wait(self, prompts: list[str], traces: list[list[Trace]]) -> None:
        """Traces that ended early (with --max-waits) go on after the continue text, thinking as if cut."""
        for prompt, row in zip(prompts, traces):
            for t in row:
                if ends_early(self.parts, prompt, t, self.config):
                    make_wait(self.parts, t)
                    t.sample = replace(t.sample, finish_reason="length")

    def _thinking(self, t: Trace) -> bool:
        """Still inside its trace and not stopped (cut by the last step: more to think)."""
        return t.ended is None and t.sample.finish_reason == "length" and trace_open(self.parts, t.sample)

    def _probe(self, prompts: list[str], traces: list[Trace], owners: list[int]) -> list[tuple[int, int]]:
        """Each trace's answer now: a greedy branch after the forcing text (the trace itself is not changed);
        (problem, tokens) of each probe. A trace with no room left for the branch ends there ("context")."""
        forcing = self.parts.prompts.config.answer_forcing
        params = replace(self.params, n=1, temperature=0.0, max_new_tokens=self.config.probe_tokens, stop=[])
        probes = generate_or_skip(
            self.parts.backend, [p + t.sample.text + forcing for p, t in zip(prompts, traces)], params
        )
        spent = []
        for i, t, probe in zip(owners, traces, probes):
            if probe is None:  # no room left for the forcing text: it can be neither probed, continued nor answered
                t.ended = "context"
                continue
            t.probes.append(answer_after_thinking(forcing + probe.text, self.parts.prompts.config.markers))
            t.last_probe = probe
            spent.append((i, probe.num_tokens))
        return spent

    def _settle(self, traces: list[list[Trace]], leaders: list[list[str | None]]) -> None:
        """Stop the samples whose probed answer held, and every open sample of a problem whose samples have agreed
        on one answer for `probe_holds` probes (`leaders`: each problem's agreed answer after every probe, or None):
        each stopped sample's answer is its last probe."""
        holds, need, markers = self.config.probe_holds, self.config.probe_consensus, self.parts.prompts.config.markers
        for row, leader in zip(traces, leaders):
            current = [
                (t.probes[-1] if t.probes else None)
                if self._thinking(t)
                else answer_after_thinking(t.sample.text, markers)
                for t in row
            ]
            counts = Counter(a for a in current if a is not None)
            top = counts.most_common(1)[0] if counts else (None, 0)
            leader.append(top[0] if top[1] >= need * len(row) and len(row) > 1 else None)
            agreed = held_for(leader, holds)
            for t in row:
                if not self._thinking(t) or not t.probes:
                    continue
                held = held_for(t.probes, holds)
                if held or agreed:
                    forcing = self.parts.prompts.config.answer_forcing
                    t.sample = replace(
                        appended(self.parts, t.sample, forcing + t.last_probe.text), finish_reason="stop"
                    )
                    t.ended = "settled" if held else "consensus"
