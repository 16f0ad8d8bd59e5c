"""Adaptive length and adaptive N on a tiny random model: continuation, stopping rules, seeds, resume."""

import pytest

from tts_engine.backends.base import Sample
from tts_engine.engine import Engine
from tts_engine.inputs.problems import Problem
from tts_engine.params import SamplingParams
from tts_engine.pipeline.aggregate import aggregation_keys
from tts_engine.pipeline.build import Pipeline
from tts_engine.pipeline.records import ProblemRecord, SampleRecord, VoteRecord
from tts_engine.running.results import read_results
from tts_engine.strategies import record_kinds
from tts_engine.strategies.adaptive import AdaptiveConfig, check_budgets, confidence_key, parse_budgets
from tts_engine.strategies.rounds import continue_samples, derive_seed, join_continuation, record_confidence


def solve_adaptive_length(engine, problems, *, n=8, budgets=(256, 512, 1024, 2048), **kwargs):
    """adaptive-length through the one entry point, `Engine.solve`."""
    config, rest = _split(kwargs)
    return engine.solve(
        problems, strategy="adaptive-length", n=n, config=AdaptiveConfig(budgets=list(budgets), **config), **rest
    )


def solve_adaptive_n(engine, problems, *, max_new_tokens=256, **kwargs):
    """adaptive-n through the one entry point, `Engine.solve`."""
    config, rest = _split(kwargs)
    return engine.solve(
        problems, strategy="adaptive-n", max_new_tokens=max_new_tokens, config=AdaptiveConfig(**config), **rest
    )


def _split(kwargs):
    fields = {"tau", "stop_on", "confidence_from", "confidence_over", "wave", "min_n", "max_n"}
    return {k: v for k, v in kwargs.items() if k in fields}, {k: v for k, v in kwargs.items() if k not in fields}


PROBLEMS = [Problem(id=f"p{i}", text=f"Compute {i}+{i}.", reference=str(2 * i)) for i in range(4)]


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return Engine(tiny_model_dir)


@pytest.fixture
def calls(engine):
    """Every backend.generate call as (prompts, params), with the real generation behind it."""
    seen = []
    original = engine.backend.generate
    engine.backend.generate = lambda prompts, params: seen.append((list(prompts), params)) or original(prompts, params)
    yield seen
    engine.backend.generate = original


# --- continuation ------------------------------------------------------------------------------------------
def test_continuation_extends_the_existing_samples(hf_backend):
    prompts = ["Compute 1+2.\n", "Compute 30*3.\n"]
    params = SamplingParams(n=3, max_new_tokens=4, seed=7)
    first = hf_backend.generate(prompts, params)  # (2, 3)
    assert any(s.finish_reason == "length" for row in first for s in row)
    sent = []
    original = hf_backend.generate
    hf_backend.generate = lambda p, sp: sent.append((list(p), sp)) or original(p, sp)
    try:
        longer = continue_samples(hf_backend, prompts, first, budget=10, params=params, round_index=1)
    finally:
        hf_backend.generate = original
    assert len(sent) == 1 and sent[0][1].n == 1 and sent[0][1].max_new_tokens == 6
    assert sent[0][1].seed == derive_seed(7, "continue", 1) != 7
    continued = 0
    for i, (old_row, new_row) in enumerate(zip(first, longer)):
        for old, new in zip(old_row, new_row):
            if old.finish_reason != "length":
                assert new is old
                continue
            continued += 1
            assert prompts[i] + old.text in sent[0][0]
            assert new.text.startswith(old.text) and new.num_tokens > old.num_tokens
            assert new.token_ids[:4] == old.token_ids and new.logprobs[:4] == old.logprobs
            assert len(new.logprobs) == new.num_tokens
            assert new.num_tokens == 10 if new.finish_reason == "length" else 4 < new.num_tokens <= 10
            assert new.num_prompt_tokens == old.num_prompt_tokens
    assert continued == len(sent[0][0])
    again = continue_samples(hf_backend, prompts, first, budget=10, params=params, round_index=1)
    assert [[s.token_ids for s in row] for row in again] == [[s.token_ids for s in row] for row in longer]


def test_identical_prefixes_continue_with_distinct_seeds():
    prefix = Sample(text="ab", token_ids=[1, 2], finish_reason="length", logprobs=[-1.0, -1.0])

    class Recorder:
        max_model_len = 100
        seeds = []

        def generate(self, prompts, params):
            self.seeds.append((len(prompts), params.seed))
            return [[Sample(text="c", token_ids=[3], finish_reason="stop", logprobs=[-0.5])] for _ in prompts]

    backend = Recorder()
    out = continue_samples(backend, ["q "], [[prefix, prefix]], budget=5, params=SamplingParams(seed=3), round_index=1)
    assert len(backend.seeds) == 2 and backend.seeds[0][1] != backend.seeds[1][1]
    assert [s.text for s in out[0]] == ["abc", "abc"] and out[0][0].token_ids == [1, 2, 3]


def test_join_cuts_a_stop_string_that_straddles_the_join():
    old = Sample(text="x=4 </an", token_ids=[1, 2], finish_reason="length", logprobs=[-0.1, -0.2])
    new = Sample(text="swer> more", token_ids=[3], finish_reason="length", logprobs=[-0.3])
    joined = join_continuation(old, new, stop=["</answer>"])
    assert joined.text == "x=4 " and joined.finish_reason == "stop" and joined.token_ids == [1, 2, 3]
    plain = join_continuation(old, new)
    assert plain.text == "x=4 </answer> more" and plain.finish_reason == "length"


# --- adaptive length ---------------------------------------------------------------------------------------
def test_tau_zero_stops_every_problem_after_the_first_budget(engine, calls):
    records = solve_adaptive_length(engine, PROBLEMS, n=3, budgets=[4, 8, 12], tau=0.0, progress=False)
    assert [r["id"] for r in records] == [p.id for p in PROBLEMS]
    assert len(calls) == 1 and len(calls[0][0]) == len(PROBLEMS)
    for record in records:
        block = record["adaptive"]
        assert block["rounds"] == 1 and block["budget_reached"] == 4 and block["stopped_because"] == "confident"
        assert block["confidence_from"] == "weighted:verifier_yes_no"
        assert all(s["num_tokens"] <= 4 for s in record["samples"])


def test_unreachable_tau_runs_to_the_last_budget(engine, calls):
    # The random model writes no answers, so every confidence is 0 < tau = 1.
    records = solve_adaptive_length(engine, PROBLEMS, n=3, budgets=[4, 8, 12], tau=1.0, seed=1, progress=False)
    assert len(calls) == 3 and len(calls[0][0]) == len(PROBLEMS)
    assert [c[1].max_new_tokens for c in calls] == [4, 4, 4]
    assert sum(r["adaptive"]["stopped_because"] == "last_budget" for r in records) >= 1
    for record in records:
        block = record["adaptive"]
        assert block["confidences"] == [0.0] * block["rounds"]
        if block["stopped_because"] == "last_budget":
            assert block["rounds"] == 3 and block["budget_reached"] == 12
        assert block["tokens_spent"] == sum(s["num_tokens"] for s in record["samples"])
        assert record["run"]["adaptive"]["budgets"] == [4, 8, 12] and record["run"]["max_new_tokens"] == 12
    last = [r for r in records if r["adaptive"]["stopped_because"] == "last_budget"]
    cut = [s for r in last for s in r["samples"] if s["finish_reason"] == "length"]
    assert cut and all(s["num_tokens"] == 12 for s in cut)  # cut samples were continued to the last budget


def test_a_problem_whose_samples_all_stopped_is_not_continued(engine, calls):
    original = engine.backend.generate

    def first_problem_stops_early(prompts, params):
        rows = original(prompts, params)
        for prompt, row in zip(prompts, rows):
            if prompt.startswith("Compute 0+0."):
                row[:] = [Sample(s.text, s.token_ids, "stop", s.logprobs, s.num_prompt_tokens) for s in row]
        return rows

    engine.backend.generate = first_problem_stops_early
    try:
        records = solve_adaptive_length(engine, PROBLEMS, n=2, budgets=[4, 8], tau=1.0, progress=False)
    finally:
        engine.backend.generate = original
    first = records[0]["adaptive"]
    assert first["stopped_because"] == "all_finished" and first["rounds"] == 1 and first["budget_reached"] == 4
    assert all(not p.startswith("Compute 0+0.") for p in calls[1][0])
    assert any(r["adaptive"]["rounds"] == 2 for r in records[1:])


def test_confidence_from_is_validated_and_recorded(engine):
    assert confidence_key(engine.parts, None) == "weighted:verifier_yes_no"
    from types import SimpleNamespace

    from tts_engine.engine import headline_kind

    assert headline_kind(SimpleNamespace(headline_kind="verifier_answer"), "yes_no") == "verifier_answer"
    records = solve_adaptive_length(
        engine, PROBLEMS[:1], n=2, budgets=[4], tau=0.5, confidence_from="majority", progress=False
    )
    assert records[0]["adaptive"]["confidence_from"] == "majority"
    assert records[0]["adaptive"]["stopped_because"] == "last_budget"
    with pytest.raises(ValueError, match="confidence_from must be one of .*got 'weighted:oracle'"):
        solve_adaptive_length(engine, PROBLEMS, budgets=[4], confidence_from="weighted:oracle")


def test_process_verifier_headlines_its_aggregation(tiny_model_dir):
    """With a process verifier and no confidence_from, adaptive stops on the process score it votes with."""
    process = Engine(tiny_model_dir, verifier="process", verifier_model=tiny_model_dir, process_headline="min")
    key = confidence_key(process.parts, None)
    assert key == "weighted:process" and key in aggregation_keys(record_kinds(process.parts, "adaptive-n", None, 20))
    records = solve_adaptive_n(process, PROBLEMS[:1], wave=2, min_n=2, max_n=2, max_new_tokens=8, progress=False)
    assert records[0]["adaptive"]["confidence_from"] == "weighted:process"
    assert "weighted:process" in records[0]["aggregations"]


@pytest.mark.parametrize(
    "budgets, message",
    [
        ([], "at least one"),
        ([8, 8], "strictly increasing"),
        ([4, 2], "strictly increasing"),
        ([0, 4], "positive integers"),
        ([4.5], "positive integers"),
    ],
)
def test_bad_budgets_are_rejected(budgets, message):
    with pytest.raises(ValueError, match=message):
        check_budgets(budgets)


def test_parse_budgets():
    assert parse_budgets("256,512, 1024") == [256, 512, 1024]
    with pytest.raises(ValueError, match="comma-separated integers"):
        parse_budgets("256,lots")


def test_bad_adaptive_settings_are_rejected(engine):
    with pytest.raises(ValueError, match=r"tau must be in \[0, 1\], got 1.5"):
        solve_adaptive_length(engine, PROBLEMS, budgets=[4], tau=1.5)
    with pytest.raises(ValueError, match="max_n must be >= min_n, got max_n=2, min_n=4"):
        solve_adaptive_n(engine, PROBLEMS, wave=2, min_n=4, max_n=2)
    with pytest.raises(ValueError, match="wave must be an integer >= 1, got 0"):
        solve_adaptive_n(engine, PROBLEMS, wave=0)


# --- adaptive N --------------------------------------------------------------------------------------------
def test_adaptive_n_stops_at_min_n_when_confident(engine, calls):
    records = solve_adaptive_n(engine, PROBLEMS, wave=2, min_n=4, max_n=8, tau=0.0, max_new_tokens=6, progress=False)
    assert len(calls) == 2 and all(len(c[0]) == len(PROBLEMS) and c[1].n == 2 for c in calls)
    for record in records:
        assert record["adaptive"]["n_used"] == 4 and len(record["samples"]) == 4
        assert record["adaptive"]["waves"] == 2 and record["adaptive"]["stopped_because"] == "confident"


def test_adaptive_n_runs_to_max_n_when_unsure(engine, calls, monkeypatch):
    scored = []  # (problem id, sample text, verifier tokens) of every sample of every wave
    original = Pipeline.records

    def records(self, problems, *args, **kwargs):
        built = original(self, problems, *args, **kwargs)
        scored.extend((p.id, s.text, s.verifier_tokens) for p, r in zip(problems, built) for s in r.samples)
        return built

    monkeypatch.setattr(Pipeline, "records", records)
    records = solve_adaptive_n(engine, PROBLEMS, wave=3, min_n=1, max_n=7, tau=1.0, max_new_tokens=6, progress=False)
    assert [c[1].n for c in calls] == [3, 3, 1]
    assert len({c[1].seed for c in calls}) == 3
    for record in records:
        block = record["adaptive"]
        assert block["n_used"] == 7 == len(record["samples"]) and block["stopped_because"] == "max_n"
        # Every wave records all samples so far (3, then 6, then 7); each distinct text is scored (and counted) once.
        mine = [(text, tokens) for pid, text, tokens in scored if pid == record["id"]]
        assert len(mine) == 3 + 6 + 7
        counted = [text for text, tokens in mine if tokens > 0]
        assert sorted(counted) == sorted(set(s["text"] for s in record["samples"]))
        assert block["verifier_tokens_spent"] == sum(tokens for _, tokens in mine)
        # ... and the record's compute says so, not only what the last wave's scoring cost
        assert record["compute"]["verifier_tokens"] == block["verifier_tokens_spent"]


def test_waves_draw_new_samples_and_the_first_wave_matches_a_fixed_run(engine):
    records = solve_adaptive_n(
        engine, PROBLEMS[:2], wave=2, min_n=4, max_n=4, tau=1.0, max_new_tokens=8, seed=5, progress=False
    )
    fixed = engine.solve(PROBLEMS[:2], n=2, max_new_tokens=8, seed=5, progress=False)
    for record, reference in zip(records, fixed):
        texts = [s["text"] for s in record["samples"]]
        assert texts[:2] == [s["text"] for s in reference["samples"]]
        assert texts[2:] != texts[:2]


# --- resume ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["length", "n"])
def test_resume_generates_only_the_missing_problems(engine, calls, tmp_path, strategy):
    out = tmp_path / "adaptive.jsonl"

    def run(problems):
        if strategy == "length":
            return solve_adaptive_length(engine, problems, n=2, budgets=[4, 8], tau=1.0, out=out, progress=False)
        return solve_adaptive_n(
            engine, problems, wave=2, min_n=2, max_n=4, tau=1.0, max_new_tokens=4, out=out, progress=False
        )

    run(PROBLEMS[:2])
    with out.open("ab") as f:  # a run killed mid-write leaves a torn line
        f.write(b'{"id": "p2", "samp')
    calls.clear()
    records = run(PROBLEMS)
    prompts = {p for c in calls for p in c[0]}
    assert all(p.startswith(("Compute 2+2.", "Compute 3+3.")) for p in prompts)
    assert len(calls[0][0]) == 2
    assert [r["id"] for r in records] == [p.id for p in PROBLEMS]
    assert [r["id"] for r in read_results(out)] == [p.id for p in PROBLEMS]
    assert all("adaptive" in r for r in read_results(out))


def test_first_round_draws_the_samples_of_a_fixed_run(engine):
    records = solve_adaptive_length(engine, PROBLEMS[:2], n=3, budgets=[6, 12], tau=0.0, seed=4, progress=False)
    fixed = engine.solve(PROBLEMS[:2], n=3, max_new_tokens=6, seed=4, progress=False)
    for record, reference in zip(records, fixed):
        assert [s["text"] for s in record["samples"]] == [s["text"] for s in reference["samples"]]
        assert record["aggregations"] == reference["aggregations"]
        assert record["time_s"] > 0


def scored(answer_class: int, kind: str, score: float) -> SampleRecord:
    return SampleRecord("", None, answer_class, "ok", None, 1, "stop", {kind: score})


def voted(samples: list[SampleRecord], *keys: str) -> ProblemRecord:
    """A record whose votes `keys` each give its one class a share of 1."""
    votes = {key: VoteRecord("1", 0, 1.0, None) for key in keys}
    return ProblemRecord(Problem("p", "?"), samples=samples, aggregations=votes)


def test_confidence_over_all_samples_counts_the_unanswered_ones():
    kind = "verifier_yes_no"
    samples = [scored(0, kind, 0.9), scored(-1, kind, 0.3), scored(0, kind, 0.6), scored(-1, kind, 0.2)]
    record = voted(samples, "majority", "weighted:verifier_yes_no")
    assert record_confidence(record, "majority") == 1.0
    assert record_confidence(record, "majority", "all") == 0.5
    assert record_confidence(record, "weighted:verifier_yes_no", "all") == pytest.approx(1.5 / 2.0)
    assert record_confidence(record, "weighted:verifier_yes_no", "samples") == pytest.approx(1.5 / 4)
    assert record_confidence(record, "majority", "samples") == 0.5  # majority: the same as "all"


def test_confidence_over_samples_counts_a_verifiers_doubt():
    doubted = [scored(0, "verifier_answer", 0.05)] * 2  # two samples, same answer, rejected
    record = voted(doubted, "weighted:verifier_answer")
    assert record_confidence(record, "weighted:verifier_answer") == 1.0  # a share among themselves: would stop
    assert record_confidence(record, "weighted:verifier_answer", "samples") == pytest.approx(0.05)


@pytest.mark.parametrize("over, rounds", [("answered", 1), ("all", 2)])
def test_confidence_over_all_keeps_a_problem_with_cut_samples_open(engine, over, rounds):
    original = engine.backend.generate

    def one_answer_one_cut(prompts, params):
        if params.n == 1:  # continuations: the real model
            return original(prompts, params)
        made = [("2\\boxed{2}", "stop"), ("1+1=", "length")]
        return [
            [
                Sample(text, engine.backend.encode(text), reason, [-1.0] * len(engine.backend.encode(text)))
                for text, reason in made
            ]
            for _ in prompts
        ]

    engine.backend.generate = one_answer_one_cut
    try:
        records = solve_adaptive_length(
            engine,
            PROBLEMS[1:2],
            n=2,
            budgets=[4, 8],
            tau=0.9,
            confidence_from="majority",
            confidence_over=over,
            stop_on="share",
            progress=False,
        )
    finally:
        engine.backend.generate = original
    block = records[0]["adaptive"]
    assert block["confidences"][0] == (1.0 if over == "answered" else 0.5)
    assert (
        block["rounds"] == rounds
        and block["confidence_over"] == over == records[0]["run"]["adaptive"]["confidence_over"]
    )
    assert records[0]["samples"][1]["text"].startswith("1+1=")
    with pytest.raises(ValueError, match="confidence_over must be one of"):
        solve_adaptive_n(engine, PROBLEMS, confidence_over="some")
