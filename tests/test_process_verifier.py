"""The process verifier's output parser (never raises) and its scores through the Verifier interface."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tts_engine.backends.base import BackendBase, Sample
from tts_engine.inputs.tiny import build_char_tokenizer
from tts_engine.verifiers.process import ProcessVerifier, parse_verification, render_verification, verdict_prefix
from tts_engine.verifiers.steps import reduce_steps


@pytest.mark.parametrize("form", ["compact", "tango"])
def test_round_trip_both_forms(form):
    text = render_verification([True, False, False], False, form)
    parsed = parse_verification(text, 3)
    assert parsed.status == "ok"
    assert parsed.steps == [True, False, False] and parsed.final is False
    assert parsed.first_error == 1
    assert parse_verification(render_verification([True, True], True, form), 2).first_error == -1


@pytest.mark.parametrize("form", ["compact", "tango"])
def test_step_count_mismatch_drops_step_verdicts_but_keeps_final(form):
    parsed = parse_verification(render_verification([True, True], True, form), 3)
    assert parsed.status == "step_count_mismatch"
    assert parsed.steps is None and parsed.first_error is None
    assert parsed.final is True and parsed.num_step_verdicts == 2


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage ~~~ \\boxed{",
        "verdict:",
        "1:+\n2:x\nverdict:Maybe",
        None,
        "<step_verification><step>\\boxed{CORR",
        "<final_verification>\\boxed{}",
    ],
)
def test_garbage_never_raises(text):
    parsed = parse_verification(text, 2)
    assert parsed.steps is None and parsed.final is None
    assert parsed.status in ("unparsable", "step_count_mismatch")


def test_missing_verdict_is_recorded_and_forced():
    text = "1:+\n2:+\n"
    parsed = parse_verification(text, 2)
    assert parsed.status == "no_final_verdict" and parsed.steps == [True, True]
    prefix, forced = verdict_prefix(text, parsed, "compact")
    assert forced and prefix.endswith("\nverdict:")


def test_step_reductions():
    s = [0.9, 0.5, 0.8]
    assert reduce_steps(s, "min") == 0.5
    assert reduce_steps(s, "prod") == pytest.approx(0.36)
    assert reduce_steps(s, "mean") == pytest.approx(2.2 / 3)
    assert reduce_steps(s, "last") == 0.8
    with pytest.raises(ValueError, match="step reduction"):
        reduce_steps(s, "max")


LOG_06, LOG_02 = math.log(0.6), math.log(0.2)


class FakeBackend(BackendBase):
    """Char tokenizer; generate returns fixed texts with each token's probability 0.8; P(Yes) vs P(No) fixed."""

    name = "fake"
    max_model_len = 1024

    def __init__(self, texts, logp_yes=LOG_06, logp_no=LOG_02):
        self.tok = build_char_tokenizer()
        self.texts = list(texts)
        self.logps = (logp_yes, logp_no)
        self.verdict_prompts = []

    def encode(self, text):
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, ids):
        return self.tok.decode(list(ids), skip_special_tokens=True)

    def apply_chat_template(self, messages):
        return None

    def generate(self, prompts, params):
        out = []
        for p in prompts:
            text = self.texts.pop(0)
            ids = self.encode(text)
            out.append([Sample(text, ids, "stop", [math.log(0.8)] * len(ids), len(self.encode(p)))])
        return out

    def yes_no_logprobs(self, prompts, yes_id, no_id):
        self.verdict_prompts.extend(prompts)
        return [self.logps] * len(prompts)


def test_scores_of_every_kind_and_status():
    solutions = [["1+2=3\n\\boxed{3}", "1+2=4\n\\boxed{4}"], ["5-1=4\n4*2=8\n\\boxed{8}"]]
    outputs = ["1:+\n2:+\nverdict:Yes", "1:-\n2:-\nverdict:No", "nonsense"]
    backend = FakeBackend(outputs)
    verifier = ProcessVerifier(backend, headline="min")
    scored = verifier.score(["q1", "q2"], ["q1\n", "q2\n"], solutions)
    assert [len(r) for r in scored] == [2, 1]
    a, b, c = scored[0][0], scored[0][1], scored[1][0]
    assert set(a.scores) == set(ProcessVerifier.kinds)
    assert a.scores["process_final"] == pytest.approx(0.75)  # 0.6 / (0.6 + 0.2)
    assert a.step_scores == pytest.approx([0.8, 0.8]) and a.first_error == -1
    assert b.step_scores == pytest.approx([0.2, 0.2]) and b.first_error == 0
    assert b.scores["process"] == b.scores["process_min"] == pytest.approx(0.2)
    assert b.scores["process_prod"] == pytest.approx(0.04)
    assert c.status == "unparsable+forced_verdict" and c.step_scores is None
    assert c.scores["process_min"] == c.scores["process_final"]  # falls back
    assert backend.verdict_prompts[0].endswith("1:+\n2:+\nverdict:")
    assert a.tokens == len(backend.encode(verifier.prompts(["q1"], ["q1\n"], [[solutions[0][0]]])[0])) + len(
        backend.encode(outputs[0])
    )


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="headline"):
        ProcessVerifier(FakeBackend([]), headline="max")
    with pytest.raises(ValueError, match="form"):
        ProcessVerifier(FakeBackend([]), form="long")


def test_runs_on_a_real_tiny_model(hf_backend):
    verifier = ProcessVerifier(hf_backend, max_new_tokens=8, step_scores="exact")
    scored = verifier.score(
        ["Compute left to right: 1+2."], ["Compute left to right: 1+2.\n"], [["1+2=3\n\\boxed{3}", "zzz"]]
    )
    for s in scored[0]:
        assert all(0.0 <= v <= 1.0 for v in s.scores.values())
        assert s.tokens > 0 and s.status


def test_checking_verifier_reads_a_written_check_as_the_unified_verifier():
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.verifiers import make_verifier
    from tts_engine.verifiers.checking import CheckingVerifier

    config = PromptConfig(use_chat_template=False, verify_form="check", check_suffix="<|endoftext|>Check.\n")
    check = "4*28=112 vs 112 +\n94+18=113 vs 112 -\nboxed 94 vs 94 +\nverdict:No"
    backend = FakeBackend([check])
    verifier = make_verifier(backend, config)
    assert isinstance(verifier, CheckingVerifier)
    [[score]] = verifier.score(["q"], ["q\n"], [["28*4=112\n112-18=93\n\\boxed{94}"]])
    assert set(score.scores) == set(CheckingVerifier.kinds)
    assert score.scores["verifier_yes_no"] == pytest.approx(0.75)
    assert score.scores["verifier_vocab"] == pytest.approx(0.6)
    assert score.step_scores == pytest.approx([0.8, 0.2, 0.8]) and score.first_error == 1
    assert score.scores["verifier_min"] == pytest.approx(0.2)
    assert score.scores["verifier_last"] == pytest.approx(0.8)
    assert score.text == check
    assert backend.verdict_prompts[0] == "q\n28*4=112\n112-18=93\n\\boxed{94}<|endoftext|>Check.\n" + check[:-2]
    assert type(make_verifier(FakeBackend([]), PromptConfig())).__name__ == "UnifiedVerifier"


def test_an_unknown_verify_form_fails_naming_the_registered_ones():
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.verifiers import make_verifier

    with pytest.raises(ValueError, match=r"verify_form must be one of \[.*'recompute'.*'yes_no'\], got 'maybe'"):
        make_verifier(FakeBackend([]), PromptConfig(verify_form="maybe"))


def test_check_step_scorer_reads_the_marks_of_a_partial_solution():
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.verifiers.checking import CheckingVerifier, CheckStepScorer

    config = PromptConfig(use_chat_template=False, verify_form="check")
    partial = "4*28=112 vs 112 +\n94+18=113 vs 112 -\nboxed ? -\nverdict:No"  # 2 steps written, no answer yet
    backend = FakeBackend([partial, "? -\nverdict:No"])
    scorer = CheckStepScorer(CheckingVerifier(backend, config), lambda p: p + "\n")
    [two, one] = scorer.score_batch(["q", "r"], [["28*4=112", "112-18=93"], ["garbled"]])
    assert two.scores == pytest.approx([0.8, 0.2]) and two.status == "ok"
    assert one.scores == pytest.approx([0.2])  # its one mark ("? -") is the first step's score
    assert two.tokens > 0


def test_resolved_prefix_ends_at_the_last_re_solved_line():
    from tts_engine.verifiers.checking import resolved_prefix

    check = "28*4=112\n112-18=94\n94+80=174\nanswer 173 vs 174 -\nverdict:No"
    assert resolved_prefix(check) == "28*4=112\n112-18=94\n94+80="
    assert resolved_prefix("94+80=174") == "94+80="  # a check cut before its answer line
    assert resolved_prefix("answer 1 vs 2 -\nx=3") is None and resolved_prefix("nonsense") is None


def test_solution_path_is_the_working_then_the_answer():
    from tts_engine.verifiers.checking import solution_path

    assert solution_path("28*4=112\n112-18=94\n\\boxed{94}") == "28*4=112\n112-18=94\nanswer"  # then it ends
    assert solution_path("28*4=112\n112-18=93\n\\boxed{94}") == "28*4=112\n112-18=94\nanswer"  # its answer, not 93
    assert solution_path("\\boxed{7}") == "7\nanswer"  # no working: the answer alone
    assert solution_path("28*4=112\n112-18=") is None  # no answer


class ContinuationBackend(FakeBackend):
    """FakeBackend that also scores continuations: log P = -0.1 for `favoured` (one or a tuple), -1 per character
    for any other."""

    def __init__(self, texts, favoured):
        super().__init__(texts)
        self.favoured = favoured if isinstance(favoured, tuple) else (favoured,)
        self.continuation_queries = []

    def continuation_logprobs(self, prompts, continuations):
        self.continuation_queries.extend(zip(prompts, continuations))
        return [-0.1 if c in self.favoured else -float(len(c)) for p, c in zip(prompts, continuations)]


def resolving_config(**overrides):
    """A re-solving checkpoint's prompt settings (plain template, "Again." request), with `overrides`."""
    from tts_engine.inputs.prompts import PromptConfig

    settings = dict(use_chat_template=False, verify_form="check", check_suffix="<|endoftext|>Again.\n")
    return PromptConfig(**settings, check_answer_score=True, **overrides)


def test_resolving_verifier_scores_the_solutions_answer_after_the_re_solve():
    from tts_engine.verifiers import make_verifier
    from tts_engine.verifiers.checking import ResolvingVerifier

    config = resolving_config()
    check = "28*4=112\n112-18=94\n94+80=174\nanswer 173 vs 174 +\nverdict:Yes"
    backend = ContinuationBackend([check, check, "no lines at all"], favoured=("174\n", "174\nanswer"))
    verifier = make_verifier(backend, config)
    assert isinstance(verifier, ResolvingVerifier)
    right, wrong, unread = "\\boxed{174}", "\\boxed{173}", "\\boxed{174}"
    [[a, b, c]] = verifier.score(["q"], ["q\n"], [[right, wrong, unread]])
    assert set(a.scores) == set(ResolvingVerifier.kinds)
    assert a.scores["verifier_answer"] == pytest.approx(math.exp(-0.1))
    assert b.scores["verifier_answer"] == pytest.approx(math.exp(-4.0))  # "173\n" is not what the re-solve favours
    assert c.scores["verifier_answer"] == 0.0  # no re-solved line to score after
    prompt, continuation = backend.continuation_queries[0]
    assert prompt == "q\n" + right + "<|endoftext|>Again.\n28*4=112\n112-18=94\n94+80=" and continuation == "174\n"
    assert len(backend.continuation_queries) == 2 + 3  # two answer reads (c has no re-solved line), three paths
    # the path read: the solution's working and answer, then the word the re-solve's answer line starts with
    assert backend.continuation_queries[2] == ("q\n" + right + "<|endoftext|>Again.\n", "174\nanswer")
    assert a.scores["verifier_path"] == pytest.approx(math.exp(-0.1))
    assert b.scores["verifier_path"] == pytest.approx(math.exp(-10.0))  # a path to 173 the model does not favour
    assert c.scores["verifier_path"] == pytest.approx(math.exp(-0.1))  # read though its check was not
    read = len(backend.encode(prompt)) + len(backend.encode(continuation))  # no prefix cache: all of it computed
    read += len(backend.encode("q\n" + right + "<|endoftext|>Again.\n")) + len(backend.encode("174\nanswer"))
    plain = dataclasses.replace(config, verify_form="check", check_answer_score=False)
    [[checked, *_]] = make_verifier(ContinuationBackend([check], "174\n"), plain).score(["q"], ["q\n"], [[right]])
    assert a.tokens == checked.tokens + read  # the answer read counts as verifier compute


def test_path_verifier_reads_the_path_alone_without_a_re_solve():
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.verifiers import make_verifier
    from tts_engine.verifiers.checking import PathVerifier

    config = resolving_config(check_resolve=False)
    backend = ContinuationBackend([], favoured="1+2=3\nanswer")  # no text to generate: a generate call would fail
    verifier = make_verifier(backend, config)
    assert isinstance(verifier, PathVerifier) and verifier.headline_kind == "verifier_path"
    [[right, wrong, unanswered]] = verifier.score(["q"], ["q\n"], [["1+2=3\n\\boxed{3}", "1+2=4\n\\boxed{4}", "1+2="]])
    assert right.scores == {"verifier_path": pytest.approx(math.exp(-0.1))} and right.status == "ok"
    assert wrong.scores["verifier_path"] == pytest.approx(math.exp(-12.0))  # "1+2=4\nanswer" is not favoured
    assert (unanswered.scores["verifier_path"], unanswered.tokens, unanswered.status) == (0.0, 0, "no_answer")
    prompt = "q\n1+2=3\n\\boxed{3}<|endoftext|>Again.\n"
    assert backend.continuation_queries[0] == (prompt, "1+2=3\nanswer")
    assert right.tokens == len(backend.encode(prompt)) + len(backend.encode("1+2=3\nanswer"))
    with pytest.raises(ValueError, match="needs a re-solving checkpoint"):
        PromptConfig(verify_form="check", check_resolve=False)


def test_path_step_scorer_reads_each_new_step_once():
    from tts_engine.verifiers import make_verifier
    from tts_engine.verifiers.checking import PathStepScorer

    check = "28*4=112\nanswer 112 vs 112 +\nverdict:Yes"
    backend = ContinuationBackend([check], favoured=("112-18=94\n", "answer"))  # "answer": the re-solve ends
    scorer = PathStepScorer(make_verifier(backend, resolving_config()), lambda p: p + "\n")
    [two] = scorer.score_batch(["q"], [["28*4=112", "112-18=94"]])
    one, two_steps = "q\n28*4=112<|endoftext|>Again.\n", "q\n28*4=112\n112-18=94<|endoftext|>Again.\n"
    # each step is read after the solution as it stood when that step was new
    assert backend.continuation_queries == [(one, "28*4=112\n"), (two_steps + "28*4=112\n", "112-18=94\n")]
    assert two.scores == pytest.approx([math.exp(-9.0), math.exp(-0.1)]) and two.tokens > 0
    [three, again] = scorer.score_batch(["q", "q"], [["28*4=112", "112-18=94", "\\boxed{95}"]] * 2)
    # the boxed answer, read as the last line's result, then the re-solve's end
    assert backend.continuation_queries[-1][1] == "95\nanswer"
    assert three.scores[:2] == two.scores and three.scores[2] == pytest.approx(math.exp(-9.0))
    assert three.tokens > 0 and again.tokens == 0 and len(backend.continuation_queries) == 3  # read once
    [boxed] = scorer.score_batch(["q"], [["28*4=112", "112-18=94", "\\boxed{94}"]])
    boxed_check = "q\n28*4=112\n112-18=94\n\\boxed{94}<|endoftext|>Again.\n"
    assert backend.continuation_queries[-1] == (boxed_check + "28*4=112\n112-18=94\n", "answer")
    assert boxed.scores[2] == pytest.approx(math.exp(-0.1))  # agrees: only whether the re-solve ends there is read


class ResolveBackend(ContinuationBackend):
    """ContinuationBackend that writes `params.n` texts per prompt, and whose favoured answer is the value the
    re-solve reached (the prompt ends at its last "="); a prompt that ends elsewhere favours nothing."""

    def __init__(self, texts, favoured_after):
        super().__init__(texts, favoured=None)
        self.favoured_after = favoured_after  # last re-solved line before "=" -> the answer it leads to
        self.generate_params = []

    def generate(self, prompts, params):
        self.generate_params.append(params)
        written = super().generate([p for p in prompts for _ in range(params.n)], params)
        return [[row[0] for row in written[i * params.n : (i + 1) * params.n]] for i in range(len(prompts))]

    def continuation_logprobs(self, prompts, continuations):
        favoured = [next((a for line, a in self.favoured_after.items() if p.endswith(line)), None) for p in prompts]
        return [-0.1 if c == f else -float(len(c)) for c, f in zip(continuations, favoured)]


def test_several_sampled_re_solves_average_the_answer_score():
    from tts_engine.verifiers import make_verifier

    config = resolving_config(check_temperature=1.0, check_samples=2)
    right_resolve = "28*4=112\n112-18=94\n94+80=174\nanswer 174 vs 174 +\nverdict:Yes"
    slip_resolve = "28*4=112\n112-18=93\n93+80=173\nanswer 174 vs 173 -\nverdict:No"
    favoured = {"94+80=": "174\n", "93+80=": "173\n"}
    backend = ResolveBackend([right_resolve, slip_resolve], favoured)
    [[score]] = make_verifier(backend, config).score(["q"], ["q\n"], [["\\boxed{174}"]])
    assert score.scores["verifier_answer"] == pytest.approx((math.exp(-0.1) + math.exp(-4.0)) / 2)
    [params] = backend.generate_params  # both re-solves sampled in one call
    assert (params.n, params.temperature) == (2, 1.0)
    assert score.text == right_resolve  # the first re-solve is the one kept

    single = dataclasses.replace(config, check_samples=1)
    [[first]] = make_verifier(ResolveBackend([right_resolve], favoured), single).score(
        ["q"], ["q\n"], [["\\boxed{174}"]]
    )
    [[second]] = make_verifier(ResolveBackend([slip_resolve], favoured), single).score(
        ["q"], ["q\n"], [["\\boxed{174}"]]
    )
    prompt_tokens = len(backend.encode("q\n\\boxed{174}<|endoftext|>Again.\n"))
    # the solution's own path is read once, not per re-solve
    path_read = prompt_tokens + len(backend.encode("174\nanswer"))
    assert score.tokens == first.tokens + second.tokens - prompt_tokens - path_read  # the prompt is computed once


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"check_samples": 2}, "needs check_temperature > 0"),
        ({"check_samples": 0, "check_temperature": 1.0}, "check_samples must be >= 1"),
        ({"check_temperature": 2.5}, r"check_temperature must be in \[0, 2\]"),
    ],
)
def test_re_solve_settings_are_validated(settings, message):
    from tts_engine.inputs.prompts import PromptConfig

    with pytest.raises(ValueError, match=message):
        PromptConfig(verify_form="check", check_answer_score=True, **settings)
