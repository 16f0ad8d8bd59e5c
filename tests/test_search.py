"""Beam search and DVTS: tree growth on a scripted backend and scorer (exact), then end to end on the shipped models."""

from __future__ import annotations

import pytest

from tts_engine.backends.base import BackendBase, Sample
from tts_engine.backends.sampling import row_seed
from tts_engine.engine import Engine
from tts_engine.inputs.problems import Problem
from tts_engine.running.results import read_results
from tts_engine.strategies.search import SearchConfig
from tts_engine.strategies.search.strategies import beam_groups, dvts_groups
from tts_engine.verifiers.base import StepScores
from tts_engine.verifiers.unified import UnifiedStepScorer

PROBLEMS = [Problem(id=f"p{i}", text=f"Problem {i}.", reference="1") for i in range(3)]
DELIM = "\n\n"


class ScriptedBackend(BackendBase):
    """Steps 's<k>v<d>' (d from the row seed) until `depth` steps, then '\\boxed{d % 3}' and end of sequence;
    without a stop string (the last round) it writes the whole rest of the solution."""

    name = "scripted"
    num_parameters = 1
    max_model_len = 100_000

    def __init__(self, depth: int = 3):
        self.depth = depth
        self.calls = []

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids if i)

    def apply_chat_template(self, messages):
        return None

    def generate(self, prompts, params):
        self.calls.append((list(prompts), params))
        return [
            [self._sample(p, row_seed(params.seed or 0, p, j) % 10, bool(params.stop)) for j in range(params.n)]
            for p in prompts
        ]

    def _sample(self, prompt, digit, stop):
        k = prompt.count(DELIM)
        if stop and k < self.depth:
            text = f"s{k}v{digit}"
            return Sample(text, self.encode(text + DELIM), "stop", [-0.1] * (len(text) + 2), len(prompt))
        rest = [f"s{m}v{digit}" for m in range(k, self.depth)] + [f"\\boxed{{{digit % 3}}}"]
        text = DELIM.join(rest)
        return Sample(text, self.encode(text) + [0], "stop", [-0.1] * (len(text) + 1), len(prompt))


class DigitScorer:
    """Step 's<k>v<d>' scores d / 10; an answer step scores 0.5. Records every batch it is asked."""

    name = "digits"
    reduction = "last"

    def __init__(self):
        self.batches = []

    def score_batch(self, problems, steps):
        self.batches.append([list(s) for s in steps])
        return [StepScores([int(s[-1]) / 10 if s.startswith("s") else 0.5 for s in row], 3 * len(row)) for row in steps]

    def score_steps(self, problem, steps):
        return self.score_batch([problem], [steps])[0].scores


@pytest.fixture(scope="module")
def engine():
    return Engine(verifier="none")


@pytest.fixture
def scripted(engine):
    backend = ScriptedBackend()
    original = engine.backend
    engine.backend = backend
    yield backend
    engine.backend = original


def solve_search(engine, problems, strategy="beam", config=None, *, scorer=None, temperature=0.8, **kwargs):
    """beam / dvts through the one entry point, `Engine.solve`."""
    return engine.solve(
        problems, strategy=strategy, config=config, step_scorer=scorer, temperature=temperature, **kwargs
    )


def run(engine, strategy, n=8, scorer=None, **config):
    config.setdefault("step_delimiter", DELIM)
    return solve_search(
        engine, PROBLEMS, strategy, SearchConfig(**config), n=n, scorer=scorer or DigitScorer(), progress=False
    )


def nodes_of(record):
    return {node["id"]: node for node in record["search"]["nodes"]}


def test_plans_follow_search_and_learn():
    (plan,) = beam_groups(16, 4)
    assert (plan.root_children, plan.keep, plan.branch, plan.target) == (16, 4, 4, 16)
    plans = dvts_groups(16, 4)
    assert len(plans) == 4 and all((p.root_children, p.keep, p.branch, p.target) == (4, 1, 4, 4) for p in plans)


def test_beam_search_keeps_the_best_n_over_m_and_batches_every_problem_per_round(engine, scripted):
    scorer = DigitScorer()
    records = run(engine, "beam", n=8, scorer=scorer, beam_width=4)
    # rounds: 3 step rounds + the answer round; one generate call and one scoring call each, for all problems
    assert len(scripted.calls) == 4 and len(scorer.batches) == 4
    assert all(len(prompts) == len(PROBLEMS) for prompts, _ in scripted.calls[:1])
    assert [params.n for _, params in scripted.calls] == [8, 4, 4, 4]
    for record in records:
        nodes = nodes_of(record)
        first = [n for n in nodes.values() if n["round"] == 0]
        assert len(first) == 8
        kept = [n["id"] for n in first if n["kept"]]
        ranked, seen = [], set()
        for node in sorted(first, key=lambda n: (-n["score"], n["id"])):
            if node["step"] not in seen:  # duplicates filtered: the best of each text
                seen.add(node["step"])
                ranked.append(node["id"])
        assert sorted(kept) == sorted(ranked[:2])
        children = [n for n in nodes.values() if n["round"] == 1]
        assert {n["parent"] for n in children} == set(kept)  # only kept beams were extended
        assert len(record["samples"]) == 8
        for sample in record["samples"]:
            leaf = nodes[sample["node"]]
            assert leaf["finished"] and sample["finish_reason"] == "stop" and sample["answer"] is not None
            path, node = [], leaf
            while node["parent"] is not None:
                path.append(node["step"])
                node = nodes[node["parent"]]
            assert path[::-1] == sample["steps"] and DELIM.join(path[::-1]) == sample["text"]
            assert sample["scores"]["step_last"] == pytest.approx(sample["step_scores"][-1])
            assert sample["scores"]["step_min"] == pytest.approx(min(sample["step_scores"]))
        assert record["compute"]["generated_tokens"] == sum(
            n["num_tokens"] for n in nodes.values() if n["parent"] == 0
        ) + sum(
            n["num_tokens"] - nodes[n["parent"]]["num_tokens"] for n in nodes.values() if n["parent"] not in (None, 0)
        )
        assert record["compute"]["verifier_tokens"] == sum(
            3 * len(n["step_scores"]) for n in nodes.values() if n["parent"] is not None
        )
        assert "weighted:step_last" in record["aggregations"] and record["run"]["strategy"] == "beam"


def test_dvts_subtrees_are_independent_greedy_searches(engine, scripted):
    records = run(engine, "dvts", n=8, beam_width=4)
    assert scripted.calls[0][1].n == 8  # the shared root is one request, so the subtrees' first steps differ
    for record in records:
        nodes = nodes_of(record)
        assert sorted({n["group"] for n in nodes.values() if n["parent"] is not None}) == [0, 1]
        for group in (0, 1):
            mine = [n for n in nodes.values() if n["group"] == group]
            for round_index in range(3):
                this_round = [n for n in mine if n["round"] == round_index]
                assert len(this_round) == 4
                kept = [n for n in this_round if n["kept"]]
                assert len(kept) == 1 and kept[0]["score"] == max(n["score"] for n in this_round)
            assert all(nodes[n["parent"]]["group"] in (group, -1) for n in mine)
        assert len(record["samples"]) == 8


def test_the_last_round_finishes_every_beam(engine, scripted):
    records = run(engine, "beam", n=4, beam_width=2, max_steps=2)
    assert not scripted.calls[-1][1].stop and scripted.calls[0][1].stop == [DELIM]
    for record in records:
        assert record["search"]["rounds"] == 2
        for sample in record["samples"]:
            assert sample["text"].endswith("}") and sample["answer"] is not None and len(sample["steps"]) == 4


def test_lookahead_scores_with_greedy_steps_it_does_not_keep(engine, scripted):
    scorer = DigitScorer()
    records = run(engine, "beam", n=4, scorer=scorer, beam_width=2, lookahead=1)
    greedy = [params for _, params in scripted.calls if params.temperature == 0]
    assert greedy and all(p.n == 1 and p.stop == [DELIM] for p in greedy)
    first_batch = scorer.batches[0]
    assert all(len(steps) == 2 for steps in first_batch)  # the step + one lookahead step
    for record in records:
        looked = [n for n in record["search"]["nodes"] if n.get("lookahead")]
        assert looked and all(len(n["step_scores"]) == n["round"] + 1 for n in looked)
        assert all(len(s["steps"]) == 4 for s in record["samples"])


def test_results_are_written_per_problem_and_a_rerun_resumes(engine, scripted, tmp_path):
    out = tmp_path / "beam.jsonl"
    first = solve_search(
        engine,
        PROBLEMS[:2],
        "beam",
        SearchConfig(step_delimiter=DELIM, beam_width=2),
        n=4,
        scorer=DigitScorer(),
        out=out,
        progress=False,
    )
    assert [r["id"] for r in read_results(out)] == ["p0", "p1"]
    calls = len(scripted.calls)
    again = solve_search(
        engine,
        PROBLEMS,
        "beam",
        SearchConfig(step_delimiter=DELIM, beam_width=2),
        n=4,
        scorer=DigitScorer(),
        out=out,
        progress=False,
    )
    assert [r["id"] for r in again] == ["p0", "p1", "p2"] and again[:2] == first
    prompt = engine.parts.prompts.build(PROBLEMS[2:])[0]
    assert all(p.startswith(prompt) for prompts, _ in scripted.calls[calls:] for p in prompts)
    assert all(len(prompts) <= 2 for prompts, _ in scripted.calls[calls:])  # only p2 was searched
    assert [r["id"] for r in read_results(out)] == ["p0", "p1", "p2"]


def test_unified_step_scorer_scores_each_prefix_once():
    seen = []

    class Verifier:
        name, kinds = "unified", ("verifier_vocab", "verifier_yes_no")

        def score(self, questions, prompts, outputs):
            seen.extend(o for outs in outputs for o in outs)
            from tts_engine.verifiers.base import SampleScore

            return [
                [SampleScore({"verifier_vocab": 0.1, "verifier_yes_no": len(o) / 100}, len(o)) for o in outs]
                for outs in outputs
            ]

    scorer = UnifiedStepScorer(Verifier(), lambda p: p + "\n", "\n")
    first = scorer.score_batch(["q", "q"], [["a"], ["b"]])
    assert [r.scores for r in first] == [[0.01], [0.01]] and seen == ["a", "b"]
    second = scorer.score_batch(["q", "q"], [["a", "bb"], ["a", "bb"]])
    assert seen == ["a", "b", "a\nbb"]  # the prefix "a" came from the cache; the new one is scored once
    assert second[0].scores == [0.01, 0.04] and second[0].tokens == 4 and second[1].tokens == 0


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(beam_width=0), "beam_width must be an integer >= 1"),
        (dict(lookahead=-1), "lookahead must be an integer >= 0"),
        (dict(step_reduction="max"), "step_reduction must be one of"),
        (dict(step_delimiter=""), "step_delimiter must be a non-empty string"),
        (dict(prm_format="foo"), "prm_format must be one of"),
    ],
)
def test_bad_settings_fail_with_the_setting_named(bad, message):
    with pytest.raises(ValueError, match=message):
        SearchConfig(**bad)


def test_n_must_split_into_groups_and_a_scorer_is_needed(engine):
    with pytest.raises(ValueError, match="n must be a multiple of beam_width, got n=6, beam_width=4"):
        solve_search(engine, PROBLEMS, "beam", SearchConfig(), n=6, scorer=DigitScorer())
    with pytest.raises(ValueError, match="strategy must be one of"):
        solve_search(engine, PROBLEMS, "mcts", n=4, scorer=DigitScorer())
    with pytest.raises(ValueError, match="needs a step scorer"):
        solve_search(engine, PROBLEMS, "beam", n=4)


# --- the shipped models, end to end ------------------------------------------------------------------------
def bundled(count):
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems

    return load_problems(default_problems_path())[:: 200 // count]


@pytest.mark.weights
@pytest.mark.parametrize("strategy", ["beam", "dvts"])
def test_shipped_model_with_its_unified_verifier(strategy, tmp_path, default_model_dir):
    engine = Engine(default_model_dir)  # the embedded default, its own verifier
    records = solve_search(
        engine,
        bundled(2),
        strategy,
        n=4,
        max_new_tokens=96,
        out=tmp_path / "r.jsonl",
        progress=False,
        config=SearchConfig(beam_width=2),
    )
    assert len(records) == 2 and records[0]["run"]["search"]["step_delimiter"] == "\n"
    assert records[0]["run"]["search"]["step_reduction"] == "prod"  # the recompute scorer's own, none given
    assert all(0 < r["verify_time_s"] < r["time_s"] for r in records)  # step scoring is part of the search's time
    for record in records:
        assert len(record["samples"]) == 4
        for sample in record["samples"]:
            assert sample["steps"] == [line.strip() for line in sample["text"].split("\n") if line.strip()]
            assert len(sample["step_scores"]) == len(sample["steps"])
        assert record["compute"]["verifier_tokens"] > 0 and record["aggregations"]["majority"]["correct"] is not None


def test_step_reduction_defaults_to_the_scorers_own():
    class Plain:
        reduction = "last"

    class Path:
        reduction = "prod"

    unset = SearchConfig()
    assert unset.for_scorer(Path()).step_reduction == "prod" and unset.for_scorer(Plain()).step_reduction == "last"
    assert SearchConfig(step_reduction="min").for_scorer(Path()).step_reduction == "min"  # given: kept
    assert unset.step_reduction is None  # for_scorer returns new settings
    with pytest.raises(ValueError, match="for_scorer"):
        unset.rank([0.5])
    assert SearchConfig(step_reduction="prod").rank([0.5, 0.5]) == pytest.approx(0.25)


def test_search_refuses_the_path_read_alone_with_a_clear_error(resolving_checkpoint):

    engine = Engine(
        resolving_checkpoint, check_options={"check_resolve": False}
    )  # reads verifier_path only: no step scores
    with pytest.raises(ValueError, match="drop --check-option check_resolve=false"):
        engine.parts.steps.scorer("\n")


def test_shipped_tango_pair_with_the_process_verifier(tango_pair):
    generator, verifier = tango_pair
    engine = Engine(str(generator), verifier="process", verifier_model=str(verifier))
    (record,) = solve_search(
        engine,
        bundled(1),
        "beam",
        SearchConfig(beam_width=2, step_reduction="min"),
        n=4,
        max_new_tokens=96,
        progress=False,
    )
    assert record["run"]["verifier"] == "recompute" and len(record["samples"]) == 4  # the pair's verify form
    assert record["run"]["search"]["step_reduction"] == "min"  # as given
    assert all(len(s["step_scores"]) == len(s["steps"]) for s in record["samples"])
    assert all(0 <= x <= 1 for s in record["samples"] for x in s["step_scores"])


def test_math500_prompts_with_a_tiny_long_context_model(shared_data, tmp_path):
    from tts_engine.inputs.problems import load_problems
    from tts_engine.inputs.tiny import TinyModelConfig, save_tiny_checkpoint

    path = save_tiny_checkpoint(
        tmp_path / "long",
        TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=4096),
    )
    problems = load_problems(shared_data("math500.jsonl"), limit=3)
    engine = Engine(str(path))
    for strategy in ("beam", "dvts"):
        records = solve_search(
            engine,
            problems,
            strategy,
            SearchConfig(beam_width=2, max_steps=3),
            n=4,
            max_new_tokens=24,
            out=tmp_path / f"{strategy}.jsonl",
            progress=False,
        )
        assert [r["id"] for r in records] == [p.id for p in problems]
        assert records[0]["run"]["search"]["step_delimiter"] == "\n\n"
        for record in records:
            assert len(record["samples"]) == 4 and record["reference"] is not None
            assert all(s["finish_reason"] in ("stop", "length") and s["num_tokens"] <= 24 for s in record["samples"])
        assert len(list(read_results(tmp_path / f"{strategy}.jsonl"))) == 3
