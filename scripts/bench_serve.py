"""Benchmark `tts serve` beside `tts solve` on the same problems and settings, in one run.

    .venv/bin/python scripts/bench_serve.py                       # 64 bundled problems, n = 16, the default verifier
    .venv/bin/python scripts/bench_serve.py --problems 32 --concurrency 1,8,32

1. `tts solve`'s engine call: Engine.solve on the problems in the process running this script.
2. A `tts serve` process on 127.0.0.1 at the same settings, called by the official `openai` async client:
   closed-loop clients at each concurrency, every problem sent once: problems/s, p50/p99 latency. Each level
   alternates with (1) chunk by chunk (one engine call's worth of problems); concurrency 1 sends each of the
   first --latency-problems alone right after Engine.solve on it alone.
3. Overload: a second server with a small queue (--overload-queue) and more clients at once than it holds; counts
   the 429s and checks that every accepted request was answered (and the server's counters agree).

The two sides take turns (never run at once), so they do not share the CPU, and each sees the load the other
saw a moment before. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

import openai

from tts_engine import Engine
from tts_engine.inputs.models import default_problems_path
from tts_engine.inputs.problems import load_problems
from tts_engine.serve.process import ServerProcess


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def spread(problems: list, count: int) -> list:
    """`count` problems spread evenly over the set (every level of the bundled set)."""
    step = max(1, len(problems) // count)
    return problems[::step][:count]


class SolveSide:
    """`tts solve`'s engine call on the same problems and settings, in this process."""

    def __init__(self, args):
        self.engine = Engine()
        self.settings = dict(n=args.n, max_new_tokens=args.max_new_tokens, seed=0, progress=False)
        self.key = f"weighted:{self.engine.headline_kind}"

    def throughput(self, problems) -> dict:
        """Problems/s of one Engine.solve over all of them (what `tts solve` runs), and the answers."""
        started = time.perf_counter()
        records = self.engine.solve(problems, **self.settings)
        elapsed = time.perf_counter() - started
        answers = {p.text: r["aggregations"][self.key]["answer"] for p, r in zip(problems, records)}
        return {"problems_per_s": len(problems) / elapsed, "seconds": elapsed, "answers": answers}

    def latency(self, problem) -> float:
        started = time.perf_counter()
        self.engine.solve([problem], **self.settings)
        return time.perf_counter() - started


async def closed_loop(url: str, texts: list[str], concurrency: int) -> dict:
    """`concurrency` clients, each sending its next problem when the last is answered, until every problem is."""
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=3600)
    queue = list(reversed(texts))
    latencies, answers = [], {}

    async def worker():
        while queue:
            text = queue.pop()
            started = time.perf_counter()
            reply = await client.chat.completions.create(
                model="tts-default", messages=[{"role": "user", "content": text}]
            )
            latencies.append(time.perf_counter() - started)
            answers[text] = reply.choices[0].answer

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    await client.close()
    return {"problems_per_s": len(texts) / elapsed, "latencies": latencies, "answers": answers}


def interleaved(solve: SolveSide, url: str, problems) -> tuple[list[float], dict]:
    """Each problem alone through Engine.solve, then alone through the server, one right after the other (so
    both see the same load on the machine)."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=3600)
    base, latencies, answers = [], [], {}
    started = time.perf_counter()
    for problem in problems:
        base.append(solve.latency(problem))
        begin = time.perf_counter()
        reply = client.chat.completions.create(
            model="tts-default", messages=[{"role": "user", "content": problem.text}]
        )
        latencies.append(time.perf_counter() - begin)
        answers[problem.text] = reply.choices[0].answer
    elapsed = time.perf_counter() - started - sum(base)
    client.close()
    return base, {"problems_per_s": len(problems) / elapsed, "latencies": latencies, "answers": answers}


async def burst(url: str, texts: list[str]) -> dict:
    """Every problem sent at once; 429s counted, every other reply checked to carry an answer."""
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=3600)

    async def one(text: str):
        try:
            reply = await client.chat.completions.create(
                model="tts-default", messages=[{"role": "user", "content": text}]
            )
            return "ok" if reply.choices and reply.choices[0].message.content is not None else "empty"
        except openai.RateLimitError as err:
            return "429" if err.response.headers.get("retry-after") else "429 without Retry-After"
        except openai.APIError as err:
            return f"error {type(err).__name__}"

    outcomes = await asyncio.gather(*(one(t) for t in texts))
    await client.close()
    return {k: outcomes.count(k) for k in sorted(set(outcomes))}


def server_args(args, queue: int) -> list[str]:
    batch = ["--max-batch-rows", str(args.max_batch_rows), "--batch-wait-ms", str(args.batch_wait_ms)]
    return ["--n", str(args.n), "--max-new-tokens", str(args.max_new_tokens), "--max-queue", str(queue), *batch]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=64, help="bundled problems, spread over the levels")
    parser.add_argument("--latency-problems", type=int, default=16, help="problems of the concurrency-1 comparison")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--concurrency", default="1,8,32,64")
    parser.add_argument("--max-batch-rows", type=int, default=512)
    parser.add_argument("--batch-wait-ms", type=float, default=10.0)
    parser.add_argument("--overload-queue", type=int, default=16)
    parser.add_argument("--overload-clients", type=int, default=96)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    problems = spread(load_problems(default_problems_path()), args.problems)
    latency_problems = problems[: args.latency_problems]
    texts = [p.text for p in problems]

    solve = SolveSide(args)
    solve.engine.solve(problems[:2], **solve.settings)  # warm-up
    rows, overload, solved, health = [], {}, 0, {}
    with ServerProcess(server_args(args, queue=max(256, len(problems)))) as server:
        asyncio.run(closed_loop(server.url, texts[:2], 1))  # warm-up
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            rows.append(paired_run(solve, server.url, problems, latency_problems, concurrency))
    with ServerProcess(server_args(args, queue=args.overload_queue)) as server:
        before = server.health()
        overload = asyncio.run(burst(server.url, [texts[k % len(texts)] for k in range(args.overload_clients)]))
        health = server.health()
        solved = health["requests"] - before["requests"]
    report(args, rows, overload, solved, health)
    if args.out:
        figures = {"rows": rows, "overload": overload, "server_solved": solved, "loadavg": os.getloadavg()}
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=1)


def paired_run(solve: SolveSide, url: str, problems, latency_problems, concurrency: int) -> dict:
    """One concurrency level beside `tts solve`, alternating between the two chunk by chunk (the load of a
    shared machine drifts within seconds, so each side is measured right beside the other). A chunk is what
    one engine call holds (32 problems at n = 16), or `concurrency` problems if more. Concurrency 1 compares
    each problem's latency with Engine.solve on that one problem."""
    if concurrency == 1:
        base, served = interleaved(solve, url, latency_problems)
        expected = solve.throughput(latency_problems)["answers"]
        baseline = {"problems_per_s": len(base) / sum(base), "latencies": base}
    else:
        size = max(concurrency, 512 // solve.settings["n"])
        seconds, served, expected = 0.0, {"seconds": 0.0, "latencies": [], "answers": {}}, {}
        for start in range(0, len(problems), size):
            chunk = problems[start : start + size]
            result = solve.throughput(chunk)
            seconds += result["seconds"]
            expected.update(result["answers"])
            part = asyncio.run(closed_loop(url, [p.text for p in chunk], concurrency))
            served["seconds"] += len(chunk) / part["problems_per_s"]
            served["latencies"] += part["latencies"]
            served["answers"].update(part["answers"])
        baseline = {"problems_per_s": len(problems) / seconds, "seconds": seconds}
        served["problems_per_s"] = len(problems) / served["seconds"]
    subset = latency_problems if concurrency == 1 else problems
    mismatched = sum(served["answers"][p.text] != expected[p.text] for p in subset)
    served.pop("answers")
    return {"concurrency": concurrency, "solve": baseline, "serve": served, "mismatched": mismatched}


def report(args, rows, overload, solved, health) -> None:
    print(
        f"problems: {args.problems} bundled (spread over levels), n = {args.n}, max_new_tokens = {args.max_new_tokens}"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(
        "\n| concurrency | tts solve problems/s | serve problems/s | serve / solve | p50 latency (s) | p99 latency (s) | answers != tts solve |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        solve, serve = row["solve"], row["serve"]
        share = serve["problems_per_s"] / solve["problems_per_s"]
        lat = serve["latencies"]
        cells = [row["concurrency"], f"{solve['problems_per_s']:.2f}", f"{serve['problems_per_s']:.2f}", f"{share:.2f}"]
        cells += [f"{percentile(lat, 0.5):.3f}", f"{percentile(lat, 0.99):.3f}", row["mismatched"]]
        print("| " + " | ".join(map(str, cells)) + " |")
        if row["concurrency"] == 1:
            ratios = [s / b for s, b in zip(lat, solve["latencies"])]
            print(
                f"|  | (one problem a call: p50 {percentile(solve['latencies'], 0.5):.3f} s) | | | "
                f"latency / tts solve's: median {statistics.median(ratios):.2f}, max {max(ratios):.2f} | | |"
            )
    accepted = sum(v for k, v in overload.items() if not k.startswith("429"))
    print(
        f"\noverload: {args.overload_clients} clients at once, queue {args.overload_queue}: {overload}; "
        f"accepted {accepted}, answered {overload.get('ok', 0)}, server counted {solved} solved, "
        f"{health.get('failed')} failed, {health.get('queued')} left queued"
    )


if __name__ == "__main__":
    main()
