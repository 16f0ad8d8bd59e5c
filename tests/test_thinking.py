"""Thinking models: answers are read after the trace, records count thinking tokens apart, and the three sequential
strategies (thinking-budget, budget-forcing, probe) cap, extend or probe a trace as they say, on a scripted thinking
model (its traces known token by token) and end to end on a real tiny checkpoint."""

from __future__ import annotations

import time

import pytest

from tts_engine import Engine
from tts_engine.answers.thinking import ThinkingMarkers, answer_after_thinking, split_thinking
from tts_engine.backends.base import BackendBase, PromptTooLongError, Sample
from tts_engine.inputs.problems import Problem
from tts_engine.inputs.prompts import PromptConfig
from tts_engine.strategies.registry import strategy_entry
from tts_engine.strategies.thinking import BudgetForcingConfig, ProbeConfig, ThinkingConfig

MARKERS = ThinkingMarkers()


def test_answers_are_read_after_the_trace_and_a_cut_trace_holds_none():
    assert answer_after_thinking("<think>... maybe \\boxed{9}. Hmm, wait, let me recompute", MARKERS) is None
    assert answer_after_thinking("<think>so the answer is 12. hmm, but", MARKERS) is None
    assert answer_after_thinking("<think>maybe \\boxed{5}? wait, no</think>The answer is 7.", MARKERS) == "7"
    assert answer_after_thinking("reasoning opened by the template</think>\\boxed{4}", MARKERS) == "4"
    assert answer_after_thinking("no markers at all: \\boxed{3}", MARKERS) == "3"  # as before thinking models
    assert split_thinking("<think>a</think>b", MARKERS) == ("<think>a</think>", "b")
    from_first_token = ThinkingMarkers(start="", end="</think>")  # a model that thinks from its first token
    assert answer_after_thinking("so far \\boxed{12}, wait", from_first_token) is None
    assert answer_after_thinking("so far 12</think>\\boxed{4}", from_first_token) == "4"
    assert answer_after_thinking("a plain \\boxed{3}", ThinkingMarkers(start="", end="")) == "3"  # no thinking


class ThinkingScript(BackendBase):
    """A thinking model whose every sample writes TRACE (one character a token), then `</think>\\boxed{12}`; after
    a forced answer it answers 7 (a cut trace's answer); after "Wait" it thinks WAITED more characters."""

    name, num_parameters, max_model_len = "script", 1, 100_000
    TRACE = "<think>" + "x" * 40
    WAITED = 30

    def __init__(self):
        self.calls = []

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(map(chr, ids))

    def generate(self, prompts, params):
        self.calls.append((list(prompts), params))
        return [[self._sample(p, params) for _ in range(params.n)] for p in prompts]

    def _sample(self, prompt, params):
        written = prompt.split("Q\n", 1)[1]
        if written.endswith("\\boxed{"):  # a forced answer or a probe
            full = "7}"
        elif written.endswith("</think>"):
            full = "\\boxed{12}"
        else:
            story = self.TRACE + ("Wait" + "y" * self.WAITED if "Wait" in written else "") + "</think>\\boxed{12}"
            full = story[len(written) :] if story.startswith(written) else "</think>\\boxed{12}"
        cuts = [full.index(stop) for stop in params.stop if stop in full]
        if cuts and min(cuts) <= params.max_new_tokens:  # a stop string within the tokens allowed
            text = full[: min(cuts)]
            return Sample(text, self.encode(text), "stop", [-0.1] * len(text), len(prompt))
        text = full[: params.max_new_tokens]
        reason = "length" if len(full) > params.max_new_tokens else "stop"
        return Sample(text, self.encode(text), reason, [-0.1] * len(text), len(prompt))


@pytest.fixture
def engine(tiny_model_dir):
    config = PromptConfig(template="{problem}\n", use_chat_template=False, answer_forcing="\n</think>\\boxed{")
    engine = Engine(tiny_model_dir, verifier="none", prompt_config=config)
    engine.backend = ThinkingScript()
    return engine


PROBLEMS = [Problem("p", "Q", "12")]


def solve(engine, strategy, config, n=2):
    [record] = engine.solve(PROBLEMS, strategy=strategy, config=config, n=n, progress=False)
    return record


def test_a_trace_past_the_budget_is_cut_and_its_answer_forced(engine):
    record = solve(engine, "thinking-budget", ThinkingConfig(thinking_budget=20, answer_tokens=4))
    sample = record["samples"][0]
    assert sample["text"] == ThinkingScript.TRACE[:20] + "\n</think>\\boxed{7}"
    assert sample["answer"] == "7" and record["thinking"]["stopped"] == {"budget": 2}
    assert sample["thinking_tokens"] == len(ThinkingScript.TRACE[:20] + "\n</think>")


def test_a_trace_within_the_budget_is_left_alone(engine):
    record = solve(engine, "thinking-budget", ThinkingConfig(thinking_budget=200))
    assert [s["answer"] for s in record["samples"]] == ["12", "12"]
    assert record["thinking"]["stopped"] == {"ended": 2} and record["aggregations"]["majority"]["correct"]


def test_budget_forcing_makes_a_short_trace_go_on_then_caps_it(engine):
    config = BudgetForcingConfig(thinking_budget=200, min_thinking=60, max_waits=2, answer_tokens=12)
    sample = solve(engine, "budget-forcing", config, n=1)["samples"][0]
    assert sample["text"] == ThinkingScript.TRACE + "Wait" + "y" * ThinkingScript.WAITED + "</think>\\boxed{12}"
    assert sample["answer"] == "12"
    capped = solve(engine, "budget-forcing", BudgetForcingConfig(thinking_budget=50, min_thinking=60), n=1)
    assert capped["thinking"]["waits"] == 1 and capped["thinking"]["stopped"] == {"budget": 1}
    assert capped["samples"][0]["answer"] == "7"


class TightScript(ThinkingScript):
    """The script in a context of 52 tokens, refusing (as the hf backend does) a prompt that leaves no room."""

    max_model_len = 52

    def generate(self, prompts, params):
        for index, prompt in enumerate(prompts):
            if len(self.encode(prompt)) + 1 > self.max_model_len:
                raise PromptTooLongError(index, len(self.encode(prompt)), self.max_model_len)
        return super().generate(prompts, params)


def test_a_trace_that_fills_the_context_ends_there_and_the_run_goes_on(engine):
    engine.backend = TightScript()
    config = BudgetForcingConfig(thinking_budget=200, min_thinking=60, max_waits=2, answer_tokens=12)
    record = solve(engine, "budget-forcing", config, n=1)  # "Q\n" + the trace + "Wait": no room to go on
    assert record["thinking"]["stopped"] == {"context": 1} and record["status"] == "ok"
    assert record["samples"][0]["text"] == ThinkingScript.TRACE + "Wait" and record["samples"][0]["answer"] is None


def test_a_trace_with_no_room_left_for_its_probe_ends_there_and_the_run_goes_on(engine):
    engine.backend = TightScript()
    config = ProbeConfig(thinking_budget=200, probe_every=8, probe_holds=99, probe_tokens=4)
    record = solve(engine, "probe", config, n=1)  # "Q\n" + 40 tokens of trace + the forcing: past 52 tokens
    assert record["thinking"]["stopped"] == {"context": 1} and record["status"] == "ok"
    sample = record["samples"][0]
    assert sample["text"] == ThinkingScript.TRACE[:40] and sample["answer"] is None  # left as it was, never forced
    assert record["thinking"]["probes"] == 4  # after 8, 16, 24 and 32 tokens; none fits after 40


def test_a_cut_trace_with_no_room_left_for_its_forced_answer_ends_there_unforced(engine):
    engine.backend = TightScript()
    record = solve(engine, "thinking-budget", ThinkingConfig(thinking_budget=40, answer_tokens=4), n=1)
    assert record["thinking"]["stopped"] == {"context": 1} and record["status"] == "ok"  # "Q\n" + 40 + the forcing
    sample = record["samples"][0]
    assert sample["text"] == ThinkingScript.TRACE[:40] and sample["answer"] is None  # left as it was, never forced


class OpenScript(ThinkingScript):
    """A model that thinks from its first token: no start marker, only the end."""

    TRACE = "x" * 40


def test_a_model_that_thinks_from_its_first_token_is_capped_and_made_to_go_on(tiny_model_dir):
    config = PromptConfig(
        template="{problem}\n", use_chat_template=False, think_start="", answer_forcing="\n</think>\\boxed{"
    )
    engine = Engine(tiny_model_dir, verifier="none", prompt_config=config)
    engine.backend = OpenScript()
    cut = solve(engine, "thinking-budget", ThinkingConfig(thinking_budget=20, answer_tokens=4), n=1)["samples"][0]
    assert cut["text"] == "x" * 20 + "\n</think>\\boxed{7}" and cut["answer"] == "7"
    config = BudgetForcingConfig(thinking_budget=200, min_thinking=60, max_waits=2, answer_tokens=12)
    waited = solve(engine, "budget-forcing", config, n=1)["samples"][0]
    assert waited["text"] == "x" * 40 + "Wait" + "y" * OpenScript.WAITED + "</think>\\boxed{12}"


class SlowScript(ThinkingScript):
    """The script, taking a tenth of a second for every call."""

    def generate(self, prompts, params):
        time.sleep(0.1)
        return super().generate(prompts, params)


@pytest.mark.parametrize("strategy", ["thinking-budget", "budget-forcing", "probe"])
def test_a_records_time_counts_its_traces_generation(engine, strategy):
    engine.backend = SlowScript()
    config = strategy_entry(strategy).config_type(thinking_budget=20)
    record = solve(engine, strategy, config, n=1)
    assert record["time_s"] >= 0.1 * len(engine.backend.calls) > 0


class PlainScript(ThinkingScript):
    """A model that writes no markers: a short solution, then its end token."""

    def _sample(self, prompt, params):
        text = "1+1=2\\boxed{12}"
        return Sample(text, self.encode(text), "stop", [-0.1] * len(text), len(prompt))


def test_budget_forcing_leaves_a_model_that_never_thinks_alone(engine):
    engine.backend = PlainScript()
    record = solve(engine, "budget-forcing", BudgetForcingConfig(thinking_budget=200, min_thinking=60), n=1)
    assert record["samples"][0]["text"] == "1+1=2\\boxed{12}" and record["samples"][0]["answer"] == "12"
    assert record["thinking"]["waits"] == 0 and len(engine.backend.calls) == 1  # no wait, no forced answer


def test_probe_stops_a_trace_whose_answer_held_and_counts_its_tokens(engine):
    config = ProbeConfig(thinking_budget=200, probe_every=8, probe_holds=2, probe_tokens=4, probe_consensus=1.0)
    record = solve(engine, "probe", config, n=1)
    block, sample = record["thinking"], record["samples"][0]
    assert block["stopped"] == {"settled": 1} and block["probes"] == 2  # 7 after 8 tokens and after 16: held
    assert sample["answer"] == "7" and sample["text"] == ThinkingScript.TRACE[:16] + "\n</think>\\boxed{7}"
    assert (
        record["compute"]["generated_tokens"]
        == sample["num_tokens"] + block["probe_tokens"]
        == len(sample["text"]) + 2 * len("7}")
    )
    alone = solve(engine, "probe", ProbeConfig(thinking_budget=200, probe_every=8, probe_holds=99), n=1)
    assert alone["thinking"]["stopped"] == {"ended": 1} and alone["samples"][0]["answer"] == "12"


def test_probe_with_waits_makes_a_short_trace_go_on_and_probes_it_all_the_while(engine):
    config = ProbeConfig(thinking_budget=200, probe_every=10, probe_holds=99, min_thinking=60, max_waits=1)
    record = solve(engine, "probe", config, n=1)
    sample = record["samples"][0]
    assert sample["text"] == ThinkingScript.TRACE + "Wait" + "y" * ThinkingScript.WAITED + "</think>\\boxed{12}"
    assert record["thinking"]["waits"] == 1 and record["thinking"]["stopped"] == {"waits": 1}
    assert record["thinking"]["probes"] == 8  # every 10 tokens of the 47 before the wait and the 34 after it
    settles = ProbeConfig(thinking_budget=200, probe_every=10, probe_holds=5, min_thinking=60, max_waits=1)
    settled = solve(engine, "probe", settles, n=1)  # its probed answer holds after the wait: it stops there
    assert settled["thinking"]["stopped"] == {"settled": 1} and settled["thinking"]["waits"] == 1
    assert settled["samples"][0]["text"].startswith(ThinkingScript.TRACE + "Wait")


class RunningScript(ThinkingScript):
    """A trace whose partial result moves as it goes (a computation's running value): a probe answers how far the
    trace has come, the same for every sample."""

    def _sample(self, prompt, params):
        written = prompt.split("Q\n", 1)[1]
        if not written.endswith("\\boxed{"):
            return super()._sample(prompt, params)
        text = f"{len(written)}}}"
        return Sample(text, self.encode(text), "stop", [-0.1] * len(text), len(prompt))


def test_samples_that_agree_on_a_moving_partial_result_do_not_stop_the_problem(engine):
    engine.backend = RunningScript()
    config = ProbeConfig(thinking_budget=32, probe_every=8, probe_holds=2, probe_tokens=4, probe_consensus=1.0)
    record = solve(engine, "probe", config, n=2)
    assert record["thinking"]["stopped"] == {"budget": 2} and record["thinking"]["probes"] == 2 * 4
    engine.backend = ThinkingScript()  # agreeing on one answer probe after probe: the problem stops there
    assert solve(engine, "probe", config, n=2)["thinking"]["stopped"] == {"settled": 2}


def test_every_sequential_strategy_runs_end_to_end_on_a_real_checkpoint(tiny_model_dir):
    engine = Engine(tiny_model_dir, verifier="none")
    settings = {
        "thinking-budget": ThinkingConfig(thinking_budget=12, answer_tokens=4),
        "budget-forcing": BudgetForcingConfig(thinking_budget=12, min_thinking=8, answer_tokens=4),
        "probe": ProbeConfig(thinking_budget=12, probe_every=4, answer_tokens=4, probe_tokens=4),
    }
    for name, config in settings.items():
        records = engine.solve(PROBLEMS, strategy=name, config=config, n=2, progress=False)
        assert records[0]["run"]["strategy"] == name and "thinking" in records[0], name


def test_a_checkpoint_of_a_thinking_models_shape_runs_every_sequential_strategy(thinking_model_dir):
    engine = Engine(thinking_model_dir, verifier="none")
    assert len(engine.backend.encode("</think>")) == 1  # one token, as Qwen3 and R1 store it
    budget, forcing = 12, len(engine.backend.encode(engine.prompt_config.answer_forcing))
    waits = 2 * len(engine.backend.encode(engine.prompt_config.continue_text))  # budget forcing's, at most 2
    settings = {
        "thinking-budget": ThinkingConfig(thinking_budget=budget, answer_tokens=4),
        "budget-forcing": BudgetForcingConfig(thinking_budget=budget, min_thinking=8, answer_tokens=4),
        "probe": ProbeConfig(thinking_budget=budget, probe_every=4, answer_tokens=4, probe_tokens=4),
    }
    for name, config in settings.items():
        [record] = engine.solve(PROBLEMS, strategy=name, config=config, n=2, progress=False)
        assert record["prompt"].endswith("<think>\n"), name  # the chat template opened the trace
        assert sum(record["thinking"]["stopped"].values()) == 2, (name, record["thinking"])
        for sample in record["samples"]:
            assert "</think>" in sample["text"], (name, sample["text"])  # decoding kept the marker
            assert 0 < sample["thinking_tokens"] <= budget + forcing + waits, (name, sample)


def test_the_joint_frontier_is_compared_with_each_axis_alone_at_equal_tokens():
    from tts_engine.eval.axes import axes_view, format_axes

    def curve(label, budget, accuracy):  # majority accuracy at k = 1, 2, 4
        run = {"thinking": {"thinking_budget": budget}} if budget else {}
        return {"label": label, "run": run, "k": [1, 2, 4], "aggregations": {"majority": {"accuracy": accuracy}}}

    def records(cost):  # one problem, one sample of `cost` tokens
        return [{"samples": [{}], "compute": {"generated_tokens": cost, "verifier_tokens": 0}}]

    curves = [
        curve("free", None, [0.5, 0.6, 0.7]),
        curve("b128", 128, [0.4, 0.5, 0.6]),
        curve("b512", 512, [0.6, 0.7, 0.8]),
    ]
    view = axes_view(curves, [records(300), records(100), records(400)])
    assert [(p["label"], p["k"]) for p in view["frontiers"]["sequential"]] == [("b128", 1), ("b512", 1)]
    assert [(p["label"], p["k"]) for p in view["frontiers"]["parallel"]] == [("free", 1), ("free", 2), ("free", 4)]
    joint = {(p["label"], p["k"]): p["accuracy"] for p in view["frontiers"]["joint"]}
    assert joint == {("b128", 1): 0.4, ("b128", 2): 0.5, ("b128", 4): 0.6, ("b512", 2): 0.7, ("b512", 4): 0.8}
    at_800 = next(g for g in view["gains"] if g["tokens"] == 800)  # b512 at k=2 against what each axis buys for 800
    assert at_800 == {"tokens": 800, "joint": 0.7, "at": "b512 k=2", "parallel": 0.6, "sequential": 0.6}
    assert "joint frontier point" in format_axes(view)[1]
    assert axes_view(curves[:1], [records(300)]) is None  # one run: nothing to compare
