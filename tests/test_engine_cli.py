import json

import orjson
import pytest
from click.testing import CliRunner

from tts_engine.cli import main
from tts_engine.engine import Engine
from tts_engine.inputs.problems import load_problems
from tts_engine.running.results import ResultsWriter, read_results


@pytest.fixture
def problems_file(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [{"id": f"p{i}", "problem": f"Compute {i}+{i}.", "answer": str(2 * i), "level": i % 2} for i in range(5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return Engine(tiny_model_dir)


def test_solve_writes_complete_records(engine, problems_file, tmp_path):
    out = tmp_path / "r.jsonl"
    records = engine.solve(load_problems(problems_file), n=3, max_new_tokens=8, out=out, progress=False)
    assert [r["id"] for r in records] == [f"p{i}" for i in range(5)]
    on_disk = list(read_results(out))
    assert [r["id"] for r in on_disk] == [r["id"] for r in records]
    record = on_disk[0]
    assert record["reference"] == "0" and record["fields"] == {"level": 0}
    assert record["prompt"].startswith("Compute 0+0.")
    assert len(record["samples"]) == 3
    kinds = {"likelihood", "verifier_vocab", "verifier_yes_no", "conf_mean", "conf_lowest_group", "conf_bottom10"}
    kinds |= {"conf_tail"}  # the confidence kinds: top-k log-probs are on by default
    for sample in record["samples"]:
        assert set(sample["scores"]) == kinds
        assert all(0 <= v <= 1 for v in sample["scores"].values())
        assert 0 < sample["verifier_tokens"] < len(engine.backend.encode(record["prompt"] + sample["text"])) + 46
        assert sample["finish_reason"] in ("stop", "length")
    expected = {"majority"} | {f"{s}:{k}" for s in ("weighted", "best_of_n", "filtered10", "filtered90") for k in kinds}
    assert set(record["aggregations"]) == expected
    assert record["run"]["num_parameters"] == engine.backend.num_parameters
    assert record["compute"]["generated_tokens"] == sum(s["num_tokens"] for s in record["samples"])
    # The verification prompt extends prompt + sample, whose keys and values the prefix cache kept: only the
    # question (46 characters) and at most the sample's last token are computed for it.
    assert min(s["verifier_tokens"] for r in on_disk for s in r["samples"]) <= 47
    assert record["judged_pairs"] == 0


def test_each_distinct_sample_is_verified_once(tiny_model_dir, problems_file):
    engine = Engine(tiny_model_dir)
    sent = []
    score = engine.verifier.score
    engine.verifier.score = lambda questions, prompts, outputs: (
        sent.append(outputs) or score(questions, prompts, outputs)
    )
    problems = load_problems(problems_file)[:2]
    greedy = engine.solve(problems, n=4, temperature=0.0, max_new_tokens=8, progress=False)  # 4 equal samples each
    assert [len(outs) for outs in sent[0]] == [1, 1]  # one text per problem reached the verifier
    for record in greedy:
        first, *repeats = record["samples"]
        assert first["verifier_tokens"] > 0 and all(r["verifier_tokens"] == 0 for r in repeats)
        assert all(r["scores"] == first["scores"] for r in repeats)
        assert record["compute"]["verifier_tokens"] == first["verifier_tokens"]


def test_undecided_grades_say_why(engine, tmp_path):
    path = tmp_path / "text.jsonl"
    path.write_text(json.dumps({"id": "t", "problem": "Who wins?", "answer": "Alice wins the game"}) + "\n")
    record = engine.solve(load_problems(path), n=2, max_new_tokens=8, progress=False)[0]
    for entry in record["classes"]:
        assert entry["correct"] is False or entry.get("undecided_because")


def test_resume_generates_only_missing_problems(engine, problems_file, tmp_path):
    out = tmp_path / "r.jsonl"
    problems = load_problems(problems_file)
    engine.solve(problems[:2], n=2, max_new_tokens=6, out=out, progress=False)
    with out.open("ab") as f:  # a run killed mid-write leaves a torn line
        f.write(b'{"id": "p2", "samp')
    calls = []
    original = engine.backend.generate
    engine.backend.generate = lambda prompts, params: calls.append(len(prompts)) or original(prompts, params)
    try:
        records = engine.solve(problems, n=2, max_new_tokens=6, out=out, progress=False)
    finally:
        engine.backend.generate = original
    assert sum(calls) == 3
    assert [r["id"] for r in read_results(out)] == ["p0", "p1", "p2", "p3", "p4"]
    assert [r["id"] for r in records] == ["p0", "p1", "p2", "p3", "p4"]


def test_results_reader_rejects_a_bad_middle_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"id": "a", "samples": []}\nnot json\n{"id": "b", "samples": []}\n')
    with pytest.raises(ValueError, match=r"r\.jsonl:2: invalid results line"):
        list(read_results(path))
    with ResultsWriter(tmp_path / "new" / "x.jsonl") as writer:
        writer.write({"id": "z"})
    assert orjson.loads((tmp_path / "new" / "x.jsonl").read_bytes()) == {"id": "z"}


def test_engine_rejects_bad_options(tiny_model_dir):
    with pytest.raises(ValueError, match="verifier must be one of"):
        Engine(tiny_model_dir, verifier="oracle")
    with pytest.raises(ValueError, match="needs a judge model"):
        Engine(tiny_model_dir, grader="hybrid")
    with pytest.raises(ValueError, match="backend must be one of"):
        Engine(tiny_model_dir, backend="tpu")


def test_cli_solve_end_to_end(tiny_model_dir, problems_file, tmp_path):
    out = tmp_path / "cli.jsonl"
    args = [
        "solve",
        str(problems_file),
        "--model",
        tiny_model_dir,
        "--n",
        "2",
        "--max-new-tokens",
        "6",
        "--limit",
        "3",
        "--out",
        str(out),
        "--quiet",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "weighted:verifier_yes_no" in result.output and "generated tokens / problem" in result.output
    assert len(list(read_results(out))) == 3


def test_cli_help_is_complete():
    runner = CliRunner()
    top = runner.invoke(main, ["--help"])
    assert top.exit_code == 0 and "solve" in top.output
    text = runner.invoke(main, ["solve", "--help"]).output
    for option in (
        "--model",
        "--n",
        "--out",
        "--backend",
        "--temperature",
        "--max-new-tokens",
        "--seed",
        "--verifier",
        "--score-norm",
        "--limit",
    ):
        assert option in text


def test_backend_options_reach_the_backend(tiny_model_dir, problems_file):
    from tts_engine.settings import parse_key_values as parse_backend_options

    assert parse_backend_options(("max_batch_rows=8", "dtype=float32", "x=0.5", "flag=true")) == {
        "max_batch_rows": 8,
        "dtype": "float32",
        "x": 0.5,
        "flag": True,
    }
    runner = CliRunner()
    bad = runner.invoke(main, ["solve", str(problems_file), "--model", tiny_model_dir, "--backend-option", "nokey"])
    assert bad.exit_code != 0 and "expected KEY=VALUE" in bad.output
    unknown = runner.invoke(
        main, ["solve", str(problems_file), "--model", tiny_model_dir, "--backend-option", "warp_speed=9"]
    )
    assert unknown.exit_code != 0 and "warp_speed" in unknown.output
    engine = Engine(tiny_model_dir, backend_options={"max_batch_rows": 8})
    assert engine.backend.max_batch_rows == 8


def test_check_options_override_the_checkpoints_check_settings(problems_file, resolving_checkpoint, tiny_model_dir):
    from tts_engine.verifiers.checking import ResolvingVerifier

    default = Engine(resolving_checkpoint)  # the previous default re-solves once, greedy
    assert default.headline_kind == "verifier_path"  # its votes headline the read of each solution's own path
    assert isinstance(default.verifier, ResolvingVerifier) and default.verifier.config.check_samples == 1
    sampled = Engine(resolving_checkpoint, check_options={"check_samples": 4, "check_temperature": 1.0})
    assert sampled.verifier.config.check_samples == 4 and sampled.verifier.checker.params.temperature == 1.0
    assert default.prompt_config == sampled.prompt_config  # the generation prompts are untouched
    bad = CliRunner().invoke(main, ["solve", str(problems_file), "--check-option", "check_speed=2"])
    assert bad.exit_code != 0 and "unknown check settings ['check_speed']" in bad.output
    invalid = CliRunner().invoke(main, ["solve", str(problems_file), "--check-option", "check_samples=0"])
    assert invalid.exit_code != 0 and "check_samples must be >= 1" in invalid.output
    # a generated-verdict process verifier (no verify_form) takes the same overrides
    process = Engine(verifier="process", verifier_model=tiny_model_dir, check_options={"check_max_tokens": 64})
    assert process.verifier.params.max_new_tokens == 64


@pytest.mark.weights
def test_the_default_recomputes_its_solutions_and_believes_the_right_one_only(default_model_dir):
    from tts_engine.tasks.arith.recompute import RecomputeVerifier

    engine = Engine()  # no model: the embedded default (default_model_dir: checked present, never skipped)
    assert isinstance(engine.verifier, RecomputeVerifier) and engine.headline_kind == "verifier_recompute"
    problem = "Compute left to right: 12*5+19-7."
    lines = ["12*5=60", "60+19=79", "79-7=72"]
    right = "\n".join(lines + ["\\boxed{72}"])
    wrong = {
        "result": "12*5=60\n60+19=89\n89-7=82\n\\boxed{82}",
        "operand": "12*5=60\n60+18=78\n78-7=71\n\\boxed{71}",  # right arithmetic on another operand
        "carried": "12*5=60\n60+19=79\n97-7=90\n\\boxed{90}",  # the value before, miscopied
        "boxed": "\n".join(lines + ["\\boxed{27}"]),
        "early": "\n".join(lines[:2] + ["\\boxed{79}"]),  # one operation left out
        "extra": "\n".join(lines + ["72+7=79", "\\boxed{79}"]),
    }
    [scores] = engine.verifier.score([problem], [problem + "\n"], [[right, *wrong.values()]])
    recomputed = {name: s.scores["verifier_recompute"] for name, s in zip(["right", *wrong], scores)}
    assert recomputed["right"] > 0.9 and max(v for k, v in recomputed.items() if k != "right") < 0.1, recomputed
    assert scores[1].first_error == 1 and scores[0].first_error == -1  # the step the wrong result is on


@pytest.mark.weights
def test_the_re_solving_checkpoint_believes_the_path_of_a_right_solution_only(resolving_checkpoint):
    engine = Engine(resolving_checkpoint)
    problem = "Compute left to right: 12*5+19."
    right, wrong_line, wrong_operand, wrong_box = (
        "12*5=60\n60+19=79\n\\boxed{79}",
        "12*5=60\n60+19=89\n\\boxed{89}",
        "12*5=60\n60+18=78\n\\boxed{78}",  # right arithmetic on an operand the problem does not have
        "12*5=60\n60+19=79\n\\boxed{89}",  # right lines, another answer boxed
    )
    [scores] = engine.verifier.score([problem], [problem + "\n"], [[right, wrong_line, wrong_operand, wrong_box]])
    paths = [s.scores["verifier_path"] for s in scores]
    assert paths[0] > 0.9 and max(paths[1:]) < 0.1
    alone = Engine(resolving_checkpoint, check_options={"check_resolve": False})  # the same read, no re-solve first
    [read_alone] = alone.verifier.score([problem], [problem + "\n"], [[right, wrong_line, wrong_operand, wrong_box]])
    assert [s.scores["verifier_path"] for s in read_alone] == pytest.approx(paths, abs=1e-4)
    assert all(a.tokens < s.tokens for a, s in zip(read_alone, scores))


@pytest.mark.weights
def test_the_path_read_does_not_believe_a_solution_that_stops_early(resolving_checkpoint):
    engine = Engine(resolving_checkpoint, check_options={"check_resolve": False})
    problem = "Compute left to right: 8+41-4-34+7*9*2."
    lines = "8+41=49\n49-4=45\n45-34=11\n11+7=18\n18*9=162\n"
    whole, early = lines + "162*2=324\n\\boxed{324}", lines + "\\boxed{162}"  # early: one operation left out
    [[right, stopped]] = engine.verifier.score([problem], [problem + "\n"], [[whole, early]])
    # every line of `early` is a line of `whole`: only the re-solve's end after 162 tells them apart
    assert right.scores["verifier_path"] > 0.5 > 0.1 > stopped.scores["verifier_path"]


def test_process_verifier_serves_through_the_cli(tmp_path, problems_file, tiny_model_dir):
    generator = verifier = tiny_model_dir  # no verify_form: the generated-verdict process verifier
    out = tmp_path / "p.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "solve",
            str(problems_file),
            "--model",
            generator,
            "--verifier-kind",
            "process",
            "--verifier-model",
            verifier,
            "--process-headline",
            "min",
            "--n",
            "2",
            "--max-new-tokens",
            "24",
            "--limit",
            "2",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    record = next(iter(read_results(out)))
    assert record["run"]["verifier"] == "process:min"
    assert {"process", "process_final", "process_min"} <= set(record["samples"][0]["scores"])
    assert "weighted:process_min" in record["aggregations"]
    with pytest.raises(ValueError, match="needs a process verifier checkpoint"):
        Engine(generator, verifier="process")


@pytest.mark.weights
def test_process_kind_serves_a_step_judging_form_by_its_own_verifier(default_model_dir):
    from tts_engine.verifiers.registry import judges_steps

    assert judges_steps("recompute") and not judges_steps("yes_no") and not judges_steps("resolve")
    engine = Engine(default_model_dir, verifier="process", verifier_model=default_model_dir)
    assert engine.verifier.name == engine.verifier_name == "recompute"  # not the generated-verdict ProcessVerifier
    problem = "Compute left to right: 18+7*3."
    [[right, wrong]] = engine.verifier.score(
        [problem], [problem + "\n"], [["18+7=25\n25*3=75\n\\boxed{75}", "18+7=25\n25*3=65\n\\boxed{65}"]]
    )
    assert right.scores["verifier_recompute"] > 0.5 > wrong.scores["verifier_recompute"]


def test_samples_too_long_to_verify_score_zero_and_never_fail(tiny_model_dir, problems_file):
    engine = Engine(tiny_model_dir)
    limit = engine.backend.max_model_len
    engine.backend.model.config.max_position_embeddings = 40  # a context the verification prompt overflows
    try:
        problems = load_problems(problems_file)[:1]
        record = engine.solve(problems, n=2, max_new_tokens=30, progress=False)[0]
    finally:
        engine.backend.model.config.max_position_embeddings = limit
    assert len(record["samples"]) == 2
    for sample in record["samples"]:
        assert sample["verifier_status"] == "too_long"
        assert sample["scores"]["verifier_yes_no"] == 0.0 and sample["verifier_tokens"] == 0
