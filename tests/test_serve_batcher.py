"""The serving layer's parts on their own: the batcher against an engine whose solve calls the test controls
(gathering, keys, cancellation, the bounded queue, a failing request isolated), request validation, and
responses built from records."""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("fastapi")

from tts_engine.config import RunConfig
from tts_engine.params import SamplingParams  # noqa: E402
from tts_engine.serve.batcher import Batcher, Job  # noqa: E402
from tts_engine.serve.responses import problem_choices, usage  # noqa: E402
from tts_engine.serve.schema import ApiError, Defaults, parse_request  # noqa: E402
from tts_engine.strategies.adaptive import AdaptiveConfig  # noqa: E402
from tts_engine.strategies.search import SearchConfig  # noqa: E402


class GatedEngine:
    """An engine whose solve waits for `gate` and records every call; a problem 'boom' makes it raise."""

    def __init__(self):
        self.calls: list[tuple[list[str], dict]] = []
        self.params: list = []
        self.gate = threading.Event()
        self.started = threading.Event()

    def solve(self, problems, params, *, strategy="fixed", on_record=None, **kwargs):
        self.calls.append(([p.text for p in problems], {"n": params.n, "seed": params.seed}))
        self.params.append(params)
        self.started.set()
        self.gate.wait(10)
        if any(p.text == "boom" for p in problems):
            raise ValueError("the engine cannot solve 'boom'")
        records = [_record(p.id, p.text) for p in problems]
        for record in records:
            on_record(record)
        return records


def _record(pid: str, text: str) -> dict:
    samples = [
        {
            "text": f"{text} -> 3",
            "answer": "3",
            "answer_class": 0,
            "finish_reason": "stop",
            "scores": {"likelihood": 0.9},
        },
        {
            "text": f"{text} -> 4",
            "answer": "4",
            "answer_class": 1,
            "finish_reason": "stop",
            "scores": {"likelihood": 0.2},
        },
        {
            "text": f"{text} -> 4!",
            "answer": "4",
            "answer_class": 1,
            "finish_reason": "length",
            "scores": {"likelihood": 0.3},
        },
    ]
    classes = [{"answer": "3", "size": 1}, {"answer": "4", "size": 2}]
    return {
        "id": pid,
        "samples": samples,
        "classes": classes,
        "compute": {"prompt_tokens": 5, "generated_tokens": 30, "verifier_tokens": 7},
    }


def _defaults(**changes) -> Defaults:
    from tts_engine.strategies import strategies

    entries = {name: strategies()[name] for name in ("fixed", "adaptive-n", "beam")}
    values = dict(
        model_name="m",
        run=RunConfig("fixed"),
        params=SamplingParams(n=4, max_new_tokens=32),
        aggregation="weighted",
        score_kind={name: "likelihood" for name in entries},
        score_kinds={name: ("likelihood",) for name in entries},
        return_candidates=False,
        configs={"AdaptiveConfig": AdaptiveConfig(), "SearchConfig": SearchConfig()},
        strategies=entries,
        max_samples=64,
        max_tokens=256,
        max_prompts=8,
    )
    return Defaults(**{**values, **changes})


def _request(text: str = "1+2", **fields):
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **fields}
    return parse_request(body, "chat", _defaults())


async def _result(job: Job):
    while True:
        event = await job.events.get()
        if event["type"] in ("done", "error"):
            return event


def test_requests_with_the_same_settings_share_one_solve_call():
    engine = GatedEngine()

    async def run():
        batcher = Batcher(engine, max_queue=8, max_batch_rows=64, batch_wait_s=0.0, batch_wait_share=0.0)
        loop = asyncio.get_running_loop()
        jobs = [Job(_request(f"p{k}"), loop=loop) for k in range(3)] + [Job(_request("q", seed=7), loop=loop)]
        for job in jobs:
            batcher.submit(job)  # queued before the worker starts: it sees them all at once
        batcher.start()
        engine.gate.set()
        events = [await _result(job) for job in jobs]
        batcher.close()
        return jobs, events

    jobs, events = asyncio.run(run())
    assert [e["type"] for e in events] == ["done"] * 4
    assert [texts for texts, _ in engine.calls] == [["p0", "p1", "p2"], ["q"]]
    assert engine.calls[1][1]["seed"] == 7
    assert [job.records[0]["id"] for job in jobs[:3]] == [f"{job.serial}.0" for job in jobs[:3]]


def test_row_budget_splits_a_batch():
    engine = GatedEngine()
    engine.gate.set()

    async def run():
        batcher = Batcher(engine, max_queue=8, max_batch_rows=8, batch_wait_s=0.0, batch_wait_share=0.0)
        loop = asyncio.get_running_loop()
        jobs = [Job(_request(f"p{k}"), loop=loop) for k in range(3)]  # 4 rows each
        for job in jobs:
            batcher.submit(job)
        batcher.start()
        for job in jobs:
            await _result(job)
        batcher.close()

    asyncio.run(run())
    assert [texts for texts, _ in engine.calls] == [["p0", "p1"], ["p2"]]


def test_full_queue_refuses_with_429_and_a_cancelled_job_frees_its_place():
    engine = GatedEngine()

    async def run():
        batcher = Batcher(engine, max_queue=2, max_batch_rows=4, batch_wait_s=0.0, batch_wait_share=0.0)
        batcher.start()
        loop = asyncio.get_running_loop()
        running = Job(_request("first"), loop=loop)
        batcher.submit(running)
        await asyncio.to_thread(engine.started.wait, 10)  # the worker holds `first`; the queue is empty
        queued = [Job(_request(f"w{k}", seed=k + 1), loop=loop) for k in range(2)]
        for job in queued:
            batcher.submit(job)
        with pytest.raises(ApiError) as refused:
            batcher.submit(Job(_request("late"), loop=loop))
        batcher.cancel(queued[0])
        batcher.submit(Job(_request("again", seed=9), loop=loop))  # the cancelled job's place
        engine.gate.set()
        await _result(running)
        await _result(queued[1])
        snapshot = batcher.snapshot()
        batcher.close()
        return refused.value, snapshot

    error, snapshot = asyncio.run(run())
    assert error.status == 429 and int(error.headers["Retry-After"]) >= 1
    assert error.body()["error"]["type"] == "rate_limit_error"
    solved = [t for texts, _ in engine.calls for t in texts]
    assert "w0" not in solved and "w1" in solved and "late" not in solved
    assert snapshot["cancelled"] == 1 and snapshot["refused"] == 1


def test_a_request_that_breaks_the_engine_fails_alone():
    engine = GatedEngine()
    engine.gate.set()

    async def run():
        batcher = Batcher(engine, max_queue=8, max_batch_rows=64, batch_wait_s=0.0, batch_wait_share=0.0)
        loop = asyncio.get_running_loop()
        jobs = [Job(_request(t), loop=loop) for t in ("a", "boom", "b")]
        for job in jobs:
            batcher.submit(job)
        batcher.start()
        events = [await _result(job) for job in jobs]
        batcher.close()
        return events

    events = asyncio.run(run())
    assert [e["type"] for e in events] == ["done", "error", "done"]
    assert events[1]["error"].status == 400 and "boom" in events[1]["error"].message
    assert [texts for texts, _ in engine.calls][0] == ["a", "boom", "b"]  # tried together first


def test_stop_strings_and_strategy_settings_are_part_of_the_batch_key():
    plain, stopped = _request(), _request(stop=["\n\n"])
    assert plain.batch_key != stopped.batch_key and stopped.params.stop == ["\n\n"]
    a = parse_request(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "tts": {"strategy": "adaptive-n", "tau": 0.5}},
        "chat",
        _defaults(),
    )
    b = parse_request({"model": "adaptive-n:m", "prompt": "x", "tts": {"tau": 0.9}}, "completion", _defaults())
    assert a.run.strategy == b.run.strategy == "adaptive-n" and a.config.tau == 0.5 and b.config.tau == 0.9
    assert a.batch_key != b.batch_key
    assert a.rows_per_problem == AdaptiveConfig().max_n  # adaptive-n grows to max_n samples


@pytest.mark.parametrize(
    "body, param, named",
    [
        ({"tts": {"strategy": "beam", "n": 6}}, "tts.n", "beam_width"),
        ({"tts": {"strategy": "adaptive-n", "budgets": "256"}}, "tts.budgets", "'256'"),
        ({"tts": {"strategy": "adaptive-n", "max_n": 1000}}, "tts.max_n", "1000"),
        ({"tts": {"return_candidates": "yes"}}, "tts.return_candidates", "yes"),
        ({"tts": {"strategy": "adaptive-n", "wobble": 1}}, "tts.wobble", "wobble"),
        ({"model": "beam:m", "tts": {"strategy": "adaptive-n"}}, "tts.strategy", "contradicts"),
        ({"seed": 1.5}, "seed", "1.5"),
        ({"stop": ["a", ""]}, "stop", "stop"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content", "image_url"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages", "robot"),
        ({"stream_options": {"include_usage": 1}}, "stream_options.include_usage", "1"),
    ],
)
def test_validation_names_the_field_and_the_value(body, param, named):
    full = {"model": "m", "messages": [{"role": "user", "content": "x"}], **body}
    with pytest.raises(ApiError) as error:
        parse_request(full, "chat", _defaults())
    assert error.value.param == param and named in error.value.message


def test_choices_rank_classes_and_pick_the_best_sample():
    record = _record("1.0", "p")
    request = _request(n=2, tts={"aggregation": "weighted", "return_candidates": True})
    choices = problem_choices(record, request)
    # weighted by likelihood: class 0 has 0.9, class 1 has 0.5
    assert [c["answer"] for c in choices] == ["3", "4"]
    assert [c["confidence"] for c in choices] == [
        pytest.approx(0.9 / 1.4, abs=1e-6),
        pytest.approx(0.5 / 1.4, abs=1e-6),
    ]
    assert choices[1]["text"] == "p -> 4!" and choices[1]["finish_reason"] == "length"  # its best-scored sample
    assert len(choices[0]["candidates"]) == 3
    majority = problem_choices(record, _request(tts={"aggregation": "majority"}))
    assert majority[0]["answer"] == "4" and majority[0]["votes"] == 2
    assert usage([record, record]) == {
        "prompt_tokens": 10,
        "completion_tokens": 60,
        "total_tokens": 84,
        "completion_tokens_details": {"verifier_tokens": 14},
    }


def test_a_lone_client_does_not_wait_for_company():
    batcher = Batcher(GatedEngine(), batch_wait_s=0.01, batch_wait_share=0.05)
    loop = asyncio.new_event_loop()
    batcher._pending.append(Job(_request(), loop=loop))
    assert batcher._gathering_window() == 0.0  # the last batch held one request, one is queued
    batcher._last_batch_jobs, batcher._batch_seconds = 8, 2.0
    assert batcher._gathering_window() == pytest.approx(0.1)  # 5% of a 2 s batch
    batcher._batch_seconds = 100.0
    assert batcher._gathering_window() == pytest.approx(0.5)  # capped
    loop.close()


def test_null_fields_take_the_defaults():
    request = _request(
        seed=None, temperature=None, n=None, tts={"n": None, "strategy": None, "return_candidates": None}
    )
    params = request.params
    assert (params.seed, params.temperature, request.answers, params.n, request.run.strategy) == (0, 1.0, 1, 4, "fixed")


def test_server_wide_solve_settings_reach_every_engine_call():
    engine = GatedEngine()
    engine.gate.set()
    server_params = SamplingParams(n=4, max_new_tokens=32, top_logprobs=0, confidence_window=4)
    body = {"model": "m", "messages": [{"role": "user", "content": "p"}]}

    async def run():
        batcher = Batcher(engine, max_queue=8, batch_wait_s=0.0, batch_wait_share=0.0)
        batcher.start()
        job = Job(parse_request(body, "chat", _defaults(params=server_params)), loop=asyncio.get_running_loop())
        batcher.submit(job)
        await _result(job)
        batcher.close()

    asyncio.run(run())
    assert engine.params and all(p.top_logprobs == 0 and p.confidence_window == 4 for p in engine.params)
