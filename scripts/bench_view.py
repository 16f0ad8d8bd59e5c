"""Size and load time of `tts view`'s page for a large run, measured in headless chromium.

    python scripts/bench_view.py                          # 500 problems x 64 samples
    python scripts/bench_view.py --problems 50 --samples 16 --keep view.html

Builds a synthetic results file (tts_engine.eval.synthetic: answers, classes and scores of a 1.5B-model-like run,
with each sample's text made of --lines solution lines, a boxed answer and one step score per line, and every vote
the engine writes), writes the page with `tts view`'s own functions, then opens it from disk in Debian's headless
chromium (through chromedriver) --repeats times and prints: file size, the Python side's time (curves with
R = --subsets included), and in the browser the time from navigation start to the overview drawn (the data parsed,
the summary, curves and reliability built), to the problem list drawn, and to one problem's page with all its
samples built. Console errors are printed and make the script fail.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from tts_engine.eval.synthetic import synthetic_records
from tts_engine.eval.view import build_payload, page_html, write_page
from tts_engine.pipeline.aggregate import vote_predictions
from tts_engine.pipeline.records import SampleRecord


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=500, help="P problems (MATH500: 500)")
    parser.add_argument("--samples", type=int, default=64, help="N samples per problem")
    parser.add_argument("--lines", type=int, default=10, help="solution lines per sample (each ~45 characters)")
    parser.add_argument("--subsets", type=int, default=1000, help="R of the curves (as tts view's default)")
    parser.add_argument("--repeats", type=int, default=3, help="page loads timed (the median is printed)")
    parser.add_argument("--keep", type=Path, default=None, help="also keep the page here")
    return parser.parse_args()


def realistic(records: list[dict], lines: int, seed: int = 0) -> list[dict]:
    """Synthetic records with solution text, step scores and the engine's votes (synthetic_records has none)."""
    rng = np.random.default_rng(seed)
    for r in records:
        for s in r["samples"]:
            text = [
                f"Step {k + 1}: from the line above, {rng.integers(10, 999)} + {rng.integers(10, 999)} gives"
                for k in range(lines)
            ]
            text.append(f"\\boxed{{{s['answer']}}}" if s["answer"] is not None else "so the answer is unclear")
            s["text"] = "\n".join(text)
            lean = 2.5 if s["correct"] else 0.5
            s["step_scores"] = [round(float(1 / (1 + np.exp(-rng.normal(lean, 1.5)))), 4) for _ in text]
        grades = [c["correct"] for c in r["classes"]]
        votes = vote_predictions([SampleRecord.from_json(s) for s in r["samples"]], grades, True)
        r["aggregations"] = {key: vote.to_json() for key, vote in votes.items()}
        r["run"] = {**r["run"], "headline_kind": "verifier_yes_no", "strategy": "fixed"}
    return records


def browser():
    from tts_engine.eval.view import headless_chromium

    try:
        return headless_chromium()
    except RuntimeError as err:
        sys.exit(str(err))


def time_load(driver, page: Path) -> dict[str, float]:
    """Milliseconds from navigation start to the overview drawn; then to the list and a problem, each by a click."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(f"{page.as_uri()}#overview")
    wait = WebDriverWait(driver, 120)
    ready = wait.until(lambda d: d.execute_script("return window.ttsViewReadyMs"))
    figures = {"overview drawn": float(ready)}
    started = time.perf_counter()
    driver.find_element("id", "nav-list").click()
    rows = wait.until(lambda d: d.find_elements("css selector", "tr.problem-row"))
    figures["list drawn after click"] = 1000 * (time.perf_counter() - started)
    started = time.perf_counter()
    rows[0].click()
    wait.until(lambda d: d.find_elements("css selector", "#samples .sample"))
    figures["problem drawn after click"] = 1000 * (time.perf_counter() - started)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    if errors:
        sys.exit("console errors:\n" + "\n".join(errors))
    return figures


def main() -> None:
    args = parse_args()
    print(f"load average (machine shared): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    records = realistic(synthetic_records(args.problems, args.samples, seed=0), args.lines)
    chars = np.mean([len(s["text"]) for r in records for s in r["samples"]])
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "synthetic.jsonl"
        results.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        print(
            f"results: {args.problems} problems x {args.samples} samples, {chars:.0f} characters of text per sample, "
            f"{results.stat().st_size / 1e6:.1f} MB"
        )
        started = time.perf_counter()
        page = write_page(page_html(build_payload([results], num_subsets=args.subsets)), Path(tmp) / "view.html")
        print(
            f"page: {page.stat().st_size / 1e6:.1f} MB, written in {time.perf_counter() - started:.1f} s (R = {args.subsets})"
        )
        if args.keep:
            shutil.copyfile(page, args.keep)
        driver = browser()
        try:
            runs = [time_load(driver, page) for _ in range(args.repeats)]
        finally:
            driver.quit()
    print(f"headless chromium, median of {args.repeats} loads from disk:")
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"  {name:<28}{statistics.median(values):>8.0f} ms   (all: {', '.join(f'{v:.0f}' for v in values)})")


if __name__ == "__main__":
    main()
