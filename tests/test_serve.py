"""`tts serve` end to end: a real uvicorn process on loopback serving the embedded default model, called by the
official `openai` client (sync and async, streaming and not) and by raw HTTP for the malformed requests.

One server for the module (small n and token budget, so the whole module stays fast); answers are compared
with `Engine.solve` on the same problems at the same seed.
"""

from __future__ import annotations

import asyncio
import json

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tts_engine import Engine  # noqa: E402
from tts_engine.inputs.models import default_problems_path  # noqa: E402
from tts_engine.inputs.problems import load_problems  # noqa: E402
from tts_engine.serve.process import ServerProcess  # noqa: E402

KEY = "test-key"
N, MAX_TOKENS, SEED = 4, 48, 0
MAX_QUEUE = 40


@pytest.fixture(scope="module")
def server():
    """Base URL of a `tts serve` process on 127.0.0.1 (embedded default, n=4, 48 tokens); stopped at teardown."""
    args = ["--n", str(N), "--max-new-tokens", str(MAX_TOKENS), "--seed", str(SEED), "--api-key", KEY]
    with ServerProcess([*args, "--max-queue", str(MAX_QUEUE), "--batch-wait-ms", "20"]) as process:
        yield process.url


@pytest.fixture(scope="module")
def problems():
    return load_problems(default_problems_path())[:32]  # level 1: short, fast


@pytest.fixture(scope="module")
def expected(problems):
    """Engine.solve's record of each problem at the server's settings, by problem text."""
    records = Engine().solve(problems, n=N, max_new_tokens=MAX_TOKENS, seed=SEED, progress=False)
    return {p.text: r for p, r in zip(problems, records)}


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0)


def _chat(problem: str) -> list[dict]:
    return [{"role": "user", "content": problem}]


def _headline(record: dict) -> dict:
    kinds = [k for k in record["aggregations"] if k.startswith("weighted:verifier")]
    return record["aggregations"][kinds[0]]


# --- answers ---------------------------------------------------------------------------------------------
def test_chat_answer_with_candidates_equals_engine_solve(client, problems, expected):
    problem = problems[2].text
    reply = client.chat.completions.create(
        model="tts-default", messages=_chat(problem), extra_body={"tts": {"return_candidates": True}}
    )
    record = expected[problem]
    choice = reply.choices[0]
    assert choice.answer == _headline(record)["answer"]
    assert choice.confidence == pytest.approx(_headline(record)["confidence"], abs=1e-6)
    assert [c["text"] for c in choice.candidates] == [s["text"] for s in record["samples"]]
    assert [c["answer_class"] for c in choice.candidates] == [s["answer_class"] for s in record["samples"]]
    assert choice.candidates[0]["scores"] == pytest.approx(record["samples"][0]["scores"])
    chosen = record["samples"][choice.sample_index]
    assert choice.message.content == chosen["text"] and chosen["answer_class"] == choice.answer_class
    assert choice.finish_reason == chosen["finish_reason"]
    compute = record["compute"]
    assert reply.usage.prompt_tokens == compute["prompt_tokens"]
    assert reply.usage.completion_tokens == compute["generated_tokens"]
    assert reply.usage.completion_tokens_details.verifier_tokens == compute["verifier_tokens"]


def test_every_choice_carries_p_correct_and_abstains_below_the_requests_threshold(client, problems, expected):
    problem = problems[4].text
    reply = client.chat.completions.create(
        model="tts-default", messages=_chat(problem), n=2, extra_body={"tts": {"abstain_below": 0.5}}
    )
    classes = expected[problem]["classes"]
    for choice in reply.choices:
        assert choice.p_correct == pytest.approx(classes[choice.answer_class]["p_correct"], abs=1e-6)
        assert choice.abstained == (choice.p_correct < 0.5)
    assert not hasattr(
        client.chat.completions.create(model="tts-default", messages=_chat(problem)).choices[0], "abstained"
    )


THREE_PROMPTS = {  # the prompts a new user tried: right answers by left-to-right arithmetic
    "Compute left to right: 3+4.": "7",
    "Compute left to right: 347*6-918+52.": "1216",
    "Compute left to right: 28*4-18+80.": "174",
}


def test_wrong_answers_get_a_low_p_correct_and_are_abstained_right_ones_a_high_one(client):
    """At n = 8 with 160 tokens the default answers 3+4 and 347*6-918+52 wrongly, and 28*4-18+80 rightly: the
    share (`confidence`) is near 1 for all three, p_correct tells them apart."""
    seen = {}
    for prompt, right in THREE_PROMPTS.items():
        reply = client.chat.completions.create(
            model="tts-default",
            messages=_chat(prompt),
            max_tokens=160,
            extra_body={"tts": {"n": 8, "abstain_below": 0.5}},
        )
        choice = reply.choices[0]
        seen[prompt] = choice.answer == right
        if choice.answer == right:
            assert choice.p_correct >= 0.8 and not choice.abstained
        else:
            assert choice.p_correct <= 0.1 and choice.abstained and choice.answer is not None
    assert list(seen.values()) == [False, False, True]


def test_answers_are_the_top_classes_by_vote(client, problems):
    reply = client.chat.completions.create(
        model="tts-default",
        messages=_chat(problems[0].text),
        n=3,
        temperature=2.0,
        extra_body={"tts": {"n": 8, "aggregation": "majority", "return_candidates": True}},
    )
    samples = reply.choices[0].candidates
    votes = [sum(s["answer_class"] == c.answer_class for s in samples) for c in reply.choices]
    assert [c.votes for c in reply.choices] == votes
    assert votes == sorted(votes, reverse=True) and sum(c.confidence for c in reply.choices) <= 1 + 1e-9
    assert 1 <= len(reply.choices) <= 3 and len({c.answer for c in reply.choices}) == len(reply.choices)
    assert reply.tts["aggregation"] == "majority" and reply.tts["n"] == 8


def test_completions_take_several_prompts(client, problems, expected):
    texts = [problems[5].text, problems[6].text]
    reply = client.completions.create(model="tts-default", prompt=texts, max_tokens=MAX_TOKENS)
    assert [c.index for c in reply.choices] == [0, 1]
    assert [c.answer for c in reply.choices] == [_headline(expected[t])["answer"] for t in texts]
    assert reply.usage.completion_tokens == sum(expected[t]["compute"]["generated_tokens"] for t in texts)


def test_model_name_prefix_chooses_the_strategy(client, problems):
    names = [m.id for m in client.models.list().data]
    assert "tts-default" in names and "adaptive-n:tts-default" in names
    reply = client.chat.completions.create(
        model="adaptive-n:tts-default", messages=_chat(problems[1].text), extra_body={"tts": {"max_n": 8}}
    )
    assert reply.tts["strategy"] == "adaptive-n" and reply.choices[0].answer is not None


def test_stream_sends_progress_then_the_answer(client, problems, expected):
    problem = problems[3].text
    chunks = list(
        client.chat.completions.create(
            model="tts-default", messages=_chat(problem), stream=True, stream_options={"include_usage": True}
        )
    )
    stages = [c.tts["stage"] for c in chunks if getattr(c, "tts", None) and c.tts.get("event") == "progress"]
    assert stages[0] == "queued" and "generating" in stages and stages[-1] == "answered"
    answered = [c.tts for c in chunks if getattr(c, "tts", None) and c.tts.get("stage") == "answered"][0]
    assert answered["leader"] == _headline(expected[problem])["answer"] and answered["samples_done"] == N
    content = [c.choices[0] for c in chunks if c.choices]
    assert len(content) == 1 and content[0].answer == answered["leader"]
    assert content[0].delta.content in [s["text"] for s in expected[problem]["samples"]]
    assert chunks[-1].usage.completion_tokens == expected[problem]["compute"]["generated_tokens"]


def test_async_client_stream_and_plain(server, problems, expected):
    async def run():
        client = openai.AsyncOpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0)
        plain = await client.chat.completions.create(model="tts-default", messages=_chat(problems[4].text))
        stream = await client.completions.create(model="tts-default", prompt=problems[4].text, stream=True)
        texts = [c.choices[0].text async for c in stream if c.choices]
        await client.close()
        return plain, texts

    plain, texts = asyncio.run(run())
    assert plain.choices[0].answer == _headline(expected[problems[4].text])["answer"]
    assert texts == [plain.choices[0].message.content]


def test_concurrent_clients_each_get_their_own_answer(server, problems, expected):
    """32 clients at once: each answer equals Engine.solve's on that problem, and the server batched them."""
    before = httpx.get(f"{server}/health").json()

    async def run():
        client = openai.AsyncOpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0, timeout=600)
        calls = [
            client.chat.completions.create(
                model="tts-default", messages=_chat(p.text), extra_body={"tts": {"return_candidates": True}}
            )
            for p in problems
        ]
        replies = await asyncio.gather(*calls)
        await client.close()
        return replies

    replies = asyncio.run(run())
    for problem, reply in zip(problems, replies):
        record = expected[problem.text]
        assert reply.choices[0].answer == _headline(record)["answer"], problem.text
        assert [c["text"] for c in reply.choices[0].candidates] == [s["text"] for s in record["samples"]]
    after = httpx.get(f"{server}/health").json()
    assert after["requests"] - before["requests"] == len(problems)
    assert after["batches"] - before["batches"] < len(problems)  # gathered into shared solve calls


# --- errors ----------------------------------------------------------------------------------------------
def _post(server: str, path: str, body, *, key: str | None = KEY, raw: bytes | None = None) -> httpx.Response:
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(f"{server}{path}", content=content, headers=headers, timeout=120)


def _chat_body(**fields) -> dict:
    return {"model": "tts-default", "messages": _chat("Compute left to right: 7-5-1."), **fields}


BAD_REQUESTS = [
    ("unknown strategy", _chat_body(tts={"strategy": "monte-carlo"}), 400, "tts.strategy", "'monte-carlo'"),
    ("samples out of range", _chat_body(tts={"n": 1000}), 400, "tts.n", "1000"),
    ("samples not an integer", _chat_body(tts={"n": "many"}), 400, "tts.n", "many"),
    ("answers over samples", _chat_body(n=9, tts={"n": 8}), 400, "n", "9"),
    ("temperature a string", _chat_body(temperature="hot"), 400, "temperature", "hot"),
    ("top_p out of range", _chat_body(top_p=1.5), 400, "top_p", "1.5"),
    ("max_tokens over the cap", _chat_body(max_tokens=10**9), 400, "max_tokens", "1000000000"),
    ("unknown aggregation", _chat_body(tts={"aggregation": "median"}), 400, "tts.aggregation", "median"),
    ("unknown score kind", _chat_body(tts={"score_kind": "oracle"}), 400, "tts.score_kind", "oracle"),
    ("setting of another strategy", _chat_body(tts={"tau": 0.5}), 400, "tts.tau", "adaptive"),
    ("bad strategy setting", _chat_body(tts={"strategy": "adaptive-n", "tau": 3}), 400, "tts.tau", "3"),
    ("abstain_below over 1", _chat_body(tts={"abstain_below": 1.5}), 400, "tts.abstain_below", "1.5"),
    (
        "no user turn",
        {"model": "tts-default", "messages": [{"role": "system", "content": "hi"}]},
        400,
        "messages",
        "user",
    ),
    ("messages not a list", {"model": "tts-default", "messages": "hi"}, 400, "messages", "hi"),
    ("empty problem", _chat_body(messages=[{"role": "user", "content": "  "}]), 400, "messages", "empty"),
    ("unknown model", _chat_body(model="gpt-5"), 404, "model", "gpt-5"),
    ("body not an object", [1, 2], 400, None, "[1, 2]"),
    ("over the context", _chat_body(messages=_chat("1+" * 400 + "1")), 400, "messages", "context"),
]


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_bad_requests_get_the_openai_error_shape(server, case):
    _, body, status, param, named = case
    response = _post(server, "/v1/chat/completions", body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param and named in error["message"], error


def test_malformed_json_and_wrong_prompts(server):
    response = _post(server, "/v1/chat/completions", None, raw=b'{"model": "tts-default", "messages": [')
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]
    response = _post(server, "/v1/completions", {"model": "tts-default", "prompt": [[1, 2, 3]]})
    assert response.status_code == 400 and response.json()["error"]["param"] == "prompt"
    response = _post(server, "/v1/nowhere", {})
    assert response.status_code == 404 and "/v1/nowhere" in response.json()["error"]["message"]


def test_keys_other_than_the_servers_get_401(server):
    for key in (None, "wrong-key"):
        response = _post(server, "/v1/chat/completions", _chat_body(), key=key)
        assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{server}/v1", api_key="wrong", max_retries=0).models.list()
    assert httpx.get(f"{server}/health").status_code == 200  # health needs no key


def test_the_official_client_raises_with_the_message(client):
    with pytest.raises(openai.BadRequestError, match="tts.strategy must be one of"):
        client.chat.completions.create(
            model="tts-default", messages=_chat("1+1"), extra_body={"tts": {"strategy": "nope"}}
        )
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="nope", messages=_chat("1+1"))


def test_overload_refuses_with_429_and_loses_no_accepted_request(server):
    """More requests at once than the queue holds (distinct seeds, so none can share a batch): each is either
    answered or told 429 with Retry-After."""

    async def one(client: httpx.AsyncClient, seed: int):
        body = _chat_body(seed=seed, max_tokens=8, tts={"n": 1})
        return await client.post("/v1/chat/completions", json=body, headers={"authorization": f"Bearer {KEY}"})

    async def run():
        async with httpx.AsyncClient(base_url=server, timeout=600, limits=httpx.Limits(max_connections=200)) as client:
            return await asyncio.gather(*(one(client, seed) for seed in range(3 * MAX_QUEUE)))

    responses = asyncio.run(run())
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 429}, statuses
    assert 429 in statuses and 200 in statuses
    for response in responses:
        if response.status_code == 429:
            assert int(response.headers["retry-after"]) >= 1
            assert response.json()["error"]["type"] == "rate_limit_error"
        else:
            assert response.json()["choices"][0]["message"]["role"] == "assistant"
    assert httpx.get(f"{server}/health").json()["queued"] == 0


def test_a_client_that_disconnects_leaves_the_server_answering(server, client, problems):
    with httpx.stream(
        "POST",
        f"{server}/v1/chat/completions",
        json=_chat_body(stream=True, seed=12345, max_tokens=8, tts={"n": 2}),
        headers={"authorization": f"Bearer {KEY}"},
        timeout=120,
    ) as response:
        first = next(response.iter_lines())
        assert first.startswith("data: ") and json.loads(first[6:])["tts"]["stage"] == "queued"
    reply = client.chat.completions.create(model="tts-default", messages=_chat(problems[7].text))
    assert reply.choices[0].answer is not None


def test_stream_of_an_adaptive_request_reports_each_round(client, problems):
    # confidence over samples is the verifier's mean belief (below 1), so tau 1.0 keeps the problem open to max_n
    settings = {"strategy": "adaptive-n", "max_n": 8, "wave": 4, "tau": 1.0, "confidence_over": "samples"}
    chunks = list(
        client.chat.completions.create(
            model="tts-default", messages=_chat(problems[0].text), stream=True, extra_body={"tts": settings}
        )
    )
    events = [c.tts for c in chunks if getattr(c, "tts", None) and c.tts.get("event") == "progress"]
    rounds = [e for e in events if e["stage"] == "round"]
    answered = [e for e in events if e["stage"] == "answered"]
    assert [(e["problem"], e["samples_done"]) for e in rounds] == [(0, 4)]  # after the first wave, still open
    assert rounds[0]["leader"] is not None
    for event in (rounds[0], answered[0]):  # one meaning per word: p_correct the probability, confidence the share
        assert 0.0 < event["p_correct"] < 1.0 and 0.0 < event["confidence"] <= 1.0
    assert len(answered) == 1 and answered[0]["samples_done"] == 8
