"""Send 2,000 malformed or hostile requests to a `tts serve` on 127.0.0.1 and check that it stays well.

    .venv/bin/python scripts/fuzz_serve.py                  # 2000 requests, seed 0
    .venv/bin/python scripts/fuzz_serve.py --requests 1000 --seed 3

Requests (seeded and reproducible: each is built from fresh values, so what a seed sends never depends on what
was built before it): bytes that are not JSON, truncated and deeply nested JSON, bodies over the size cap, JSON of
the wrong shape, every field with values of the wrong type or out of range (NaN, huge integers, lone surrogates,
null bytes, problems longer than the context), wrong keys, methods and paths, streams closed after their first
event, and a share of valid but odd requests (which run the engine, n = 1, 8 tokens).

Checks: every request gets a response and none is a 5xx; every refusal has OpenAI's error shape; afterwards
/health and a valid request still answer; the server does not leak: its resident memory, read once it is idle
after every --block requests, grows after the first --warmup requests by at most --max-trend-mb per 1,000
requests (the least-squares slope of those readings). Exit status 1 when a check fails.

Why a trend: a leak is memory that keeps growing, at a steady rate, for as long as requests come. What is not a
leak comes once (warm-up, the first batch of a new shape, a new high of the heap) or swings within a bound (the
prefix cache's generations). The readings of the first --warmup requests, where most steps fall, are left out; a
step after them counts at most about its own size (MAX_TREND_MB), a swing hardly, a leak in full. Comparing the
highs of the run's two halves counted a step anywhere in the second half in full. The server runs with glibc's
allocator set so that its resident memory follows what it holds (MALLOC_ENV: under the defaults it rises in
steps all run long), and its memory is read only when it is idle.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import random
import statistics
import sys
import time
from typing import Sequence

import httpx

from tts_engine.serve.process import ServerProcess

KEY = "fuzz-key"
PREFIX_CACHE_TOKENS = 512
"""The hf backend keeps finished sequences' keys and values for reuse up to a token bound (262,144 by default,
~1.5 GB for the embedded model), in two generations, dropping the older when the newer is full: bounded, but it
would hide the server's own memory for the first thousands of requests, and its turnover swings the memory. A
small bound makes it reach its ceiling at once and keeps the swing small (seed 6607, 3,000 requests: idle
readings after the warm-up spread over 29 MB at 4,096 tokens, 11 MB at 512)."""
MALLOC_ENV = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072"}
"""glibc settings under which the server's resident memory follows what it holds: one arena (by default each
thread may get its own, and each keeps its high-water mark), a fixed mmap threshold (by default it rises after a
large block is freed, so that later large blocks are carved from the heap and fragment it) and the heap's free
top returned. Under the defaults the memory rises in steps that live objects do not (seed 6607, 3,000 requests:
573 to 640 MB in steps, +18 MB per 1,000 requests after the warm-up; with these settings within
530-540 MB, +0.5)."""
PROBLEM = "Compute left to right: 7-5-1."
MAX_TREND_MB = 10.0
"""The most the memory may grow per 1,000 requests after the warm-up: a leak of 10 KB a request reaches it. Runs
without a leak gave -3.4 to +6.2 (docs/serve.md); a one-time step of h MB in the middle of the 16 readings of a
2,000-request run adds about 0.9 h."""
JUNK_VALUES = (None, True, False, 0, -1, 1.5, 10**30, "", "x", "\u0000", [], {}, [1], {"a": 1}, "NaN", 1e308)


def junk(rng: random.Random):
    """A value of the wrong type or range, always a fresh copy: `mutated` writes fields into the dicts it puts in a
    body, so a shared `{}` would grow with every request and could come to contain itself."""
    return copy.deepcopy(rng.choice([*JUNK_VALUES, "\ud800", "☃" * rng.randint(1, 50), rng.randint(-(10**6), 10**6)]))


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


def idle_rss_mb(server: ServerProcess, timeout: float = 30.0) -> float:
    """The server's resident memory once nothing is queued or running: the streams the fuzz hung up on are still
    being generated when a block's last response arrives, and their batch's memory is not what a leak holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = server.health()
        if not health["busy"] and not health["queued"]:
            break
        time.sleep(0.05)
    return server.rss_bytes() / 2**20


def memory_trend(readings: Sequence[tuple[int, float]], warmup: int) -> float:
    """MB per 1,000 requests: the least-squares slope of the (requests sent, MB) readings after the first `warmup`
    requests. A leak's steady growth shows in full; a step before them does not count, and a single odd reading
    moves a fit over many readings little."""
    counted = [(sent, mb) for sent, mb in readings if sent >= warmup]
    sent, mb = zip(*counted)
    return statistics.linear_regression(sent, mb).slope * 1000


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
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--block", type=int, default=100, help="requests between two readings of the memory")
    parser.add_argument("--warmup", type=int, default=500, help="requests before the memory's trend is measured")
    parser.add_argument("--max-trend-mb", type=float, default=MAX_TREND_MB, help="memory's growth per 1,000 requests")
    parser.add_argument("--serve-option", action="append", default=[], help="extra `tts serve` option, repeatable")
    args = parser.parse_args()
    if args.requests < args.warmup + 3 * args.block:
        parser.error("the memory's trend needs --requests >= --warmup + 3 x --block")
    rng = random.Random(args.seed)
    requests = [hostile(rng, k) for k in range(args.requests)]
    server_args = ["--api-key", KEY, "--n", "1", "--max-new-tokens", "8", "--max-queue", "64"]
    server_args += ["--backend-option", f"prefix_cache_tokens={PREFIX_CACHE_TOKENS}", *args.serve_option]
    results, readings = [], []
    with ServerProcess(server_args, env=MALLOC_ENV) as server:
        for start in range(0, args.requests, args.block):
            block = requests[start : start + args.block]
            results += asyncio.run(fuzz(server.url, block, args.concurrency))
            readings.append((start + len(block), idle_rss_mb(server)))
        health = server.health()
        headers = {"authorization": f"Bearer {KEY}"}
        check = httpx.post(
            f"{server.url}/v1/chat/completions", json=valid(random.Random(0)), headers=headers, timeout=120
        )
    failures = [problem for _, problem in results if problem]
    if check.status_code != 200 or not check.json()["choices"]:
        failures.append(f"a valid request after the fuzz got {check.status_code}: {check.text[:200]}")
    trend = memory_trend(readings, args.warmup)
    if trend > args.max_trend_mb:
        failures.append(f"memory grew by {trend:.1f} MB per 1,000 requests after the warm-up")
    statuses = {}
    for status, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    print(f"{len(results)} requests; statuses {dict(sorted(statuses.items()))}")
    series = ", ".join(f"{mb:.1f}" for _, mb in readings)
    print(f"server memory (MB, idle) after each {args.block} requests: {series}")
    print(f"trend after {args.warmup} requests: {trend:+.1f} MB per 1,000 requests (limit {args.max_trend_mb})")
    print(f"server health after: {health}")
    for failure in failures[:20]:
        print("FAIL:", failure)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
