"""Send 1,000 malformed or hostile requests to a `tts serve` on 127.0.0.1 and check that it stays well.

    .venv/bin/python scripts/fuzz_serve.py                  # 1000 requests, seed 0
    .venv/bin/python scripts/fuzz_serve.py --requests 200 --seed 3

Requests (seeded, reproducible): bytes that are not JSON, truncated and deeply nested JSON, bodies over the size
cap, JSON of the wrong shape, every field with values of the wrong type or out of range (NaN, huge integers,
lone surrogates, null bytes, problems longer than the context), wrong keys, methods and paths, streams closed
after their first event, and a share of valid but odd requests (which run the engine, n = 1, 8 tokens).

Checks: every request gets a response and none is a 5xx; every refusal has OpenAI's error shape; afterwards
/health and a valid request still answer; the server's resident memory, read after every --block requests, sets
no high in the second half of the run more than --max-growth-mb above the first half's (a leak keeps setting
new highs; warm-up, the allocator and the bounded prefix cache do not). Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys

import httpx

from tts_engine.serve.process import ServerProcess

KEY = "fuzz-key"
PREFIX_CACHE_TOKENS = 4096
"""The hf backend keeps finished sequences' keys and values for reuse up to a token bound (262,144 by default,
~1.5 GB for the embedded model), then empties it: bounded, but it would hide the server's own memory for the
first thousands of requests. A small bound makes it reach its ceiling at once."""
PROBLEM = "Compute left to right: 7-5-1."
JUNK_VALUES = [None, True, False, 0, -1, 1.5, 10**30, "", "x", "\u0000", [], {}, [1], {"a": 1}, "NaN", 1e308]


def junk(rng: random.Random):
    return rng.choice(JUNK_VALUES + ["\ud800", "☃" * rng.randint(1, 50), rng.randint(-(10**6), 10**6)])


def valid(rng: random.Random) -> dict:
    content = rng.choice([PROBLEM, "Compute left to right: 18+7*3.", "héllo ☃ wörld", "\u0000 1+1", "?" * 300])
    return {
        "model": "tts-default",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 8,
        "tts": {"n": 1},
    }


def mutated(rng: random.Random) -> dict:
    """A valid body with one to three fields (standard or under tts) replaced by junk or removed."""
    body = valid(rng)
    fields = ["model", "messages", "n", "temperature", "top_p", "seed", "stop", "max_tokens", "stream", "tts"]
    tts_fields = ["strategy", "n", "aggregation", "score_kind", "tau", "budgets", "return_candidates", "max_n", "x"]
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5 and isinstance(body.get("tts"), dict):
            body["tts"][rng.choice(tts_fields)] = junk(rng)
        elif rng.random() < 0.15:
            body.pop(rng.choice(fields), None)
        else:
            body[rng.choice(fields)] = junk(rng)
    if rng.random() < 0.2:
        body["messages"] = [{"role": junk(rng), "content": junk(rng)}, {"role": "user", "content": [junk(rng)]}]
    return body


def hostile(rng: random.Random, index: int) -> dict:
    """One request: method, path, headers and raw body."""
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    path = rng.choice(["/v1/chat/completions"] * 4 + ["/v1/completions", "/v1/models", "/health", "/v1/x", "/../etc"])
    method, body = "POST", json.dumps(mutated(rng)).encode()
    kind = index % 10
    if kind == 0:
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    elif kind == 1:
        body = body[: rng.randint(0, len(body))]
    elif kind == 2:
        body = (b"[" * rng.choice([10, 1000, 100_000])) + (b"]" * rng.randint(0, 10))
    elif kind == 3:
        body = json.dumps(junk(rng)).encode()
    elif kind == 4:
        headers["authorization"] = rng.choice(["", "Bearer", "Bearer wrong", "Basic Zm9v", "Bearer " + "k" * 5000])
    elif kind == 5:
        method = rng.choice(["GET", "PUT", "DELETE", "PATCH"])
    elif kind == 6 and rng.random() < 0.1:
        body = b'{"model": "tts-default", "prompt": "' + b"1" * 2_000_000 + b'"}'  # over the size cap
    elif kind == 7:
        content = rng.choice(["1+" * 2000 + "1", "\\ud800", "x\u0000y"])
        body = json.dumps({**valid(rng), "messages": [{"role": "user", "content": content}]}).encode()
        body = body.replace(b"\\\\ud800", b"\\ud800")  # a lone surrogate, as raw JSON can spell it
    elif kind == 8:
        body = json.dumps(valid(rng)).encode()
        path = "/v1/chat/completions"
    elif kind == 9:
        body = json.dumps({**valid(rng), "stream": True}).encode()
        path = "/v1/chat/completions"
    return {"method": method, "path": path, "headers": headers, "content": body, "stream": kind == 9}


async def send(client: httpx.AsyncClient, request: dict) -> tuple[int, str | None]:
    """(status, problem) where problem names what is wrong with the response, if anything (0: no response)."""
    streaming, url = request.pop("stream"), request.pop("path")
    try:
        if streaming:
            async with client.stream(**request, url=url) as response:
                async for _ in response.aiter_lines():
                    break  # read one event, then hang up
                return response.status_code, None
        response = await client.request(**request, url=url)
    except httpx.TransportError as err:
        return (
            0,
            f"no response ({type(err).__name__}) to {request['method']} {url} with {len(request['content'])} bytes",
        )
    if response.status_code >= 500:
        return response.status_code, f"server error: {response.text[:200]}"
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["message"]
        except Exception:  # noqa: BLE001 - any other body is the finding
            return response.status_code, f"not OpenAI's error shape: {response.text[:200]}"
    return response.status_code, None


async def fuzz(url: str, requests: list[dict], concurrency: int) -> list[tuple[int, str | None]]:
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(request):
            async with gate:
                return await send(client, request)

        return await asyncio.gather(*(one(r) for r in requests))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--block", type=int, default=100, help="requests between two readings of the memory")
    parser.add_argument("--max-growth-mb", type=float, default=16.0, help="second half's high over the first half's")
    parser.add_argument("--serve-option", action="append", default=[], help="extra `tts serve` option, repeatable")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    requests = [hostile(rng, k) for k in range(args.requests)]
    server_args = ["--api-key", KEY, "--n", "1", "--max-new-tokens", "8", "--max-queue", "64"]
    server_args += ["--backend-option", f"prefix_cache_tokens={PREFIX_CACHE_TOKENS}", *args.serve_option]
    results, memory = [], []
    with ServerProcess(server_args) as server:
        for start in range(0, args.requests, args.block):
            results += asyncio.run(fuzz(server.url, requests[start : start + args.block], args.concurrency))
            memory.append(server.rss_bytes() / 2**20)
        health = server.health()
        headers = {"authorization": f"Bearer {KEY}"}
        check = httpx.post(
            f"{server.url}/v1/chat/completions", json=valid(random.Random(0)), headers=headers, timeout=120
        )
    failures = [problem for _, problem in results if problem]
    if check.status_code != 200 or not check.json()["choices"]:
        failures.append(f"a valid request after the fuzz got {check.status_code}: {check.text[:200]}")
    half = max(1, len(memory) // 2)
    growth = max(memory[half:] or memory) - max(memory[:half])  # a leak sets new highs; warm-up does not
    if growth > args.max_growth_mb:
        failures.append(f"memory's high in the second half passed the first half's by {growth:.1f} MB")
    statuses = {}
    for status, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    print(f"{len(results)} requests; statuses {dict(sorted(statuses.items()))}")
    series = ", ".join(f"{m:.1f}" for m in memory)
    print(f"server memory (MB) after each {args.block} requests: {series}")
    print(f"second half's high - first half's: {growth:+.1f} MB (limit {args.max_growth_mb} MB)")
    print(f"server health after: {health}")
    for failure in failures[:20]:
        print("FAIL:", failure)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
