"""`tts view RESULTS...`: one page to browse runs: summary, curves, reliability, problems, samples, votes, and each
strategy's own record block.

The page is one self-contained HTML file (style, script and data inline; no network), so it opens from disk and can
be shared; `--port` serves the same page on localhost instead. Every figure on it comes from the code the other
commands use: the summary from `tts_engine.running.summary`, the curves (with their standard errors) from
`compute_curves`, the reliability bins from `tts_engine.pipeline.metrics.reliability`. The page's script only draws them.

A strategy's own block of a record (its rounds and stop signal, or its tree) is drawn from what the strategy declares
in the registry (`tts_engine.strategies.registry.BlockView`, carried as each run's `view`), never from its name: a
plug-in strategy's block shows as the built-ins' do, and one that declares nothing shows as plain keys and values.

The data is one JSON blob, parsed once; a problem's samples become DOM only when the problem is opened and the
problem list is paged, so a 500 x 64 run stays quick to open (scripts/bench_view.py measures it, docs/view.md).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import click
import numpy as np
import orjson

from tts_engine.pipeline.aggregate import headline_vote
from tts_engine.pipeline.metrics import auroc, reliability
from tts_engine.pipeline.records import strategy_of
from tts_engine.running.results import numbered_results, record_status
from tts_engine.running.summary import headline_rows, summarize
from tts_engine.settings import Command, build, options, setting
from tts_engine.strategies.registry import BlockView, strategies

log = logging.getLogger(__name__)

PAGE_DIR = Path(__file__).with_name("view_page")
"""The page's template, style and script (package data)."""
DROPPED_FIELDS = ("prompt", "run")
"""Record fields the page does not carry per problem: the prompt repeats the problem, `run` is kept once per file."""
CURVE_AXES = ("samples", "generated_tokens", "tokens")
RECORD_FIELDS = (
    "id",
    "problem",
    "reference",
    "fields",
    "status",
    "failure",
    "prompt",
    "samples",
    "classes",
    "aggregations",
    "compute",
    "run",
    "time_s",
    "verify_time_s",
    "judged_pairs",
)
"""The keys every results line may hold (docs/results.md); any other key is a strategy's own block."""


@dataclass
class ViewConfig:
    """What `tts view` writes or serves, and how its curves are computed."""

    out: str | None = None
    """HTML file to write (default view.html, unless --port is given)."""
    port: int | None = None
    """Serve the page on http://127.0.0.1:PORT until interrupted (0: any free port); a file is then written only
    with --out."""
    num_subsets: int = setting(1000, flags=("--subsets",))
    """R of the curves: random subsets per problem and k (as `tts curve`)."""
    seed: int = 0
    """Seed of the curves' random subsets."""
    num_bins: int = setting(10, flags=("--bins",))
    """Bins of the reliability diagrams."""
    title: str | None = None
    """Page title (default: the results files' labels)."""

    def __post_init__(self) -> None:
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        if self.num_subsets < 1:
            raise ValueError(f"num_subsets must be >= 1, got {self.num_subsets}")
        if self.num_bins < 1:
            raise ValueError(f"num_bins must be >= 1, got {self.num_bins}")


# --- a headless browser (the page's tests and its benchmark) ------------------------------------------------
def headless_chromium():
    """A Selenium driver of Debian's chromium, headless, that keeps the page's console log; a one-line error
    naming what to install when chromium, chromedriver or selenium is missing."""
    import shutil

    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if not chromium or not driver:
        raise RuntimeError("needs Debian's chromium and chromium-driver (bash scripts/install.sh test installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


# --- reading ------------------------------------------------------------------------------------------------
def load_run(path: str | Path) -> list[dict[str, Any]]:
    """The records of one results file; a line that is not a results record is an error naming file and line
    (a torn last line, left by a killed run, is skipped with a warning, as a resumed run does)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"results file {str(path)!r} does not exist")
    records = [_checked(record, path, number) for number, record in numbered_results(path)]
    if not records:
        raise ValueError(f"{path}: holds no results records")
    return records


def _checked(record: dict[str, Any], path: Path, number: int) -> dict[str, Any]:
    """A results line (the reader checked it is one) with what the page draws besides: votes, compute and each
    sample's text and class; an error naming what it lacks."""
    missing = [key for key in ("aggregations", "compute") if key not in record]
    if missing and record_status(record) == "ok":
        raise ValueError(f"{path}:{number}: results record lacks {', '.join(missing)} (see docs/results.md)")
    for j, sample in enumerate(record.get("samples") or []):
        if not isinstance(sample, dict) or "text" not in sample or "answer_class" not in sample:
            raise ValueError(f"{path}:{number}: sample {j} lacks text or answer_class (see docs/results.md)")
    return record


# --- run-level figures --------------------------------------------------------------------------------------
def run_block(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The `run` block of the first record that has one (every line of a run carries the same)."""
    return next((r["run"] for r in records if isinstance(r.get("run"), dict)), {})


def compute_spent(records: Sequence[dict[str, Any]], num_parameters: Any) -> dict[str, Any]:
    """Totals of the run's compute: tokens by kind, FLOPs (2 x parameters x generated and verifier tokens), time."""
    total = {key: sum(int(r.get("compute", {}).get(key, 0) or 0) for r in records) for key in _COMPUTE_KEYS}
    tokens = total["generated_tokens"] + total["verifier_tokens"]
    params = num_parameters if isinstance(num_parameters, (int, float)) and num_parameters > 0 else None
    return {
        **total,
        "samples": sum(len(r.get("samples") or []) for r in records),
        "flops": 2.0 * params * tokens if params else None,
        "time_s": round(sum(float(r.get("time_s", 0.0) or 0.0) for r in records), 3),
        "verify_time_s": round(sum(float(r.get("verify_time_s", 0.0) or 0.0) for r in records), 3),
    }


_COMPUTE_KEYS = ("prompt_tokens", "generated_tokens", "verifier_tokens")


def run_curves(records: Sequence[dict[str, Any]], label: str, num_subsets: int, seed: int) -> dict[str, Any]:
    """The curves `tts curve` draws (accuracy and its standard error against samples and tokens per problem), or
    why there are none (no reference answers, no samples)."""
    from .curves import compute_curves
    from .table import table_from_records

    try:
        c = compute_curves(table_from_records(records), num_subsets=num_subsets, seed=seed, label=label)
    except ValueError as err:
        return {"error": str(err)}
    aggregations = {
        name: {
            "accuracy": entry["accuracy"],
            "se": entry["se"],
            "compute": {axis: entry["compute"][axis] for axis in CURVE_AXES},
        }
        for name, entry in c["aggregations"].items()
    }
    efficiency = {
        name: {axis: table[axis].get("ratio") for axis in ("samples", "tokens")}
        for name, table in c["efficiency"].items()
    }
    return {
        "k": c["k"],
        "num_subsets": num_subsets,
        "num_problems_scored": c["num_problems_scored"],
        "aggregations": aggregations,
        "efficiency": efficiency,
        "majority_at_n": c["majority_at_n"],
        "notes": c["notes"],
    }


def run_reliability(records: Sequence[dict[str, Any]], vote: str, num_bins: int) -> list[dict[str, Any]]:
    """Reliability diagrams: every score kind over the graded samples, and the answer's p_correct (or, without
    one, its confidence) of the run's vote over the graded problems."""
    lines = []
    kinds = list(dict.fromkeys(k for r in records for s in r.get("samples") or [] for k in s.get("scores") or {}))
    for kind in kinds:
        pairs = [
            (float(s["scores"][kind]), bool(s["correct"]))
            for r in records
            for s in r.get("samples") or []
            if s.get("correct") is not None and _finite(s.get("scores", {}).get(kind))
        ]
        lines.append(_reliability_line(kind, "samples", pairs, num_bins))
    votes = [r["aggregations"][vote] for r in records if vote in (r.get("aggregations") or {})]
    graded = [v for v in votes if v.get("correct") is not None]
    signal = "p_correct" if graded and all(_finite(v.get("p_correct")) for v in graded) else "confidence"
    pairs = [(float(v[signal]), bool(v["correct"])) for v in graded if _finite(v.get(signal))]
    lines.append(_reliability_line(f"{signal} of {vote}", "answers", pairs, num_bins))
    return [line for line in lines if line["count"]]


def _reliability_line(name: str, unit: str, pairs: list[tuple[float, bool]], num_bins: int) -> dict[str, Any]:
    scores = np.array([p for p, _ in pairs], dtype=np.float64)
    labels = np.array([y for _, y in pairs], dtype=bool)
    figures = reliability(scores, labels, num_bins)
    return {
        "name": name,
        "unit": unit,
        "count": len(pairs),
        "right": int(labels.sum()),
        "ece": figures["ece"],
        "auroc": auroc(scores, labels) if len(pairs) else None,
        "bins": figures["bins"],
    }


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# --- a strategy's own block ---------------------------------------------------------------------------------
def declared_view(strategy: str) -> BlockView | None:
    """How the registry says to show `strategy`'s block: its entry's `view`, or None when the strategy writes none
    or is not installed here (a results file of a plug-in this installation lacks)."""
    entry = strategies().get(strategy)
    return entry.view if entry is not None else None


def block_keys(records: Sequence[dict[str, Any]], view: BlockView | None) -> list[str]:
    """The record keys holding a strategy's own block: the declared one first, then any other object a results line
    does not define (`RECORD_FIELDS`; an undeclared strategy's, which the page shows as plain keys and values)."""
    found = (k for r in records for k, v in r.items() if k not in RECORD_FIELDS and isinstance(v, dict))
    return list(dict.fromkeys([*([view.key] if view is not None else []), *found]))


def stopping_blocks(records: Sequence[dict[str, Any]], view: BlockView | None = None) -> list[str]:
    """The record blocks that say when and why a problem stopped: the declared rounds block (`view.key`), then any
    other holding `stopped_because`."""
    declared = [view.key] if view is not None and view.kind == "rounds" else []
    found = (k for r in records for k, v in r.items() if isinstance(v, dict) and "stopped_because" in v)
    return list(dict.fromkeys([*declared, *found]))


def strategy_facts(records: Sequence[dict[str, Any]], view: BlockView | None = None) -> dict[str, Any]:
    """A run's own figures beside the summary: how its problems stopped and how much they used (a strategy that
    stops problems), or the size of its trees (a strategy that declares a "tree" block)."""
    facts: dict[str, Any] = {}
    for block in stopping_blocks(records, view):  # a strategy that stops problems says why in a block of its own
        blocks = [r[block] for r in records if isinstance(r.get(block), dict)]
        if blocks:
            facts["stopped because"] = dict(Counter(str(b.get("stopped_because")) for b in blocks).most_common())
            for key in ("n_used", "waves", "rounds", "budget_reached", "tokens_spent"):
                values = [b[key] for b in blocks if _finite(b.get(key))]
                if values:
                    facts[f"mean {key}"] = round(sum(values) / len(values), 2)
    key = view.key if view is not None and view.kind == "tree" else None
    trees = [r[key] for r in records if key and isinstance(r.get(key), dict)]
    if trees:
        facts["mean tree nodes"] = round(sum(len(t.get("nodes") or []) for t in trees) / len(trees), 1)
        facts["mean rounds"] = round(sum(int(t.get("rounds") or 0) for t in trees) / len(trees), 2)
    return facts


# --- the payload ----------------------------------------------------------------------------------------------
def compact_problem(record: dict[str, Any]) -> dict[str, Any]:
    """A record as the page reads it: without the prompt and run block, floats rounded to 4 places."""
    out = {key: value for key, value in record.items() if key not in DROPPED_FIELDS}
    out["status"] = record_status(record)
    return _rounded(out)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def run_payload(
    records: list[dict[str, Any]],
    label: str,
    source: str,
    *,
    num_subsets: int = 1000,
    seed: int = 0,
    num_bins: int = 10,
) -> dict[str, Any]:
    """Everything the page shows of one results file."""
    run = run_block(records)
    strategy = strategy_of(records[0])
    declared = declared_view(strategy)
    summary = summarize(records)
    vote = headline_vote(summary["headline_kind"])
    if not any(vote in (r.get("aggregations") or {}) for r in records):
        vote = "majority"
    return {
        "label": label,
        "source": source,
        "run": run,
        "strategy": strategy,
        "view": dataclasses.asdict(declared) if declared is not None else None,
        "blocks": block_keys(records, declared),
        "headline_vote": vote,
        "headline_rows": list(headline_rows(summary["accuracy"], summary["headline_kind"])),
        "summary": _rounded(summary),
        "compute": compute_spent(records, run.get("num_parameters")),
        "facts": strategy_facts(records, declared),
        "curves": _rounded(run_curves(records, label, num_subsets, seed)),
        "reliability": _rounded(run_reliability(records, vote, num_bins)),
        "problems": [compact_problem(r) for r in records],
    }


def default_labels(paths: Sequence[str | Path]) -> list[str]:
    """File stems; the parent folder is added where stems repeat (run1/results, run2/results)."""
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{Path(p).parent.name}/{Path(p).stem}" for p in paths]


def build_payload(
    paths: Sequence[str | Path],
    labels: Sequence[str] = (),
    *,
    num_subsets: int = 1000,
    seed: int = 0,
    num_bins: int = 10,
) -> dict[str, Any]:
    """The page's data: one entry per results file, in the order given."""
    if labels and len(labels) != len(paths):
        raise ValueError(f"--label must be given once per results file ({len(paths)}), got {len(labels)}")
    labels = list(labels) or default_labels(paths)
    loaded = [load_run(path) for path in paths]
    runs = [
        run_payload(records, label, str(path), num_subsets=num_subsets, seed=seed, num_bins=num_bins)
        for records, path, label in zip(loaded, paths, labels)
    ]
    return {"version": 1, "runs": runs, "shared": shared_problems(loaded, runs)}


def shared_problems(loaded: Sequence[list[dict[str, Any]]], runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where runs side by side cover different problems: how many they share, and each run's summary over only
    those (what the page compares them on); None where they cover the same ones (or there is one run)."""
    ids = [{str(r["id"]) for r in records} for records in loaded]
    if len(loaded) < 2 or all(i == ids[0] for i in ids):
        return None
    common = set.intersection(*ids)
    summaries = [summarize([r for r in records if str(r["id"]) in common]) if common else None for records in loaded]
    for run, summary in zip(runs, summaries):
        run["shared_summary"] = _rounded(summary) if summary is not None else None
    return {"problems": len(common), "per_run": [len(i) for i in ids]}


# --- the page ---------------------------------------------------------------------------------------------------
def page_html(payload: dict[str, Any], title: str | None = None) -> str:
    """One self-contained HTML page: the template with its style, script and the data inlined."""
    template = (PAGE_DIR / "page.html").read_text(encoding="utf-8")
    style = (PAGE_DIR / "view.css").read_text(encoding="utf-8")
    script = (PAGE_DIR / "view.js").read_text(encoding="utf-8")
    title = title or "tts view: " + ", ".join(run["label"] for run in payload["runs"])
    head, marker, tail = template.replace("{{style}}", style).replace("{{script}}", script).partition("{{data}}")
    if not marker:
        raise RuntimeError(f"{PAGE_DIR / 'page.html'} has no {{{{data}}}} marker")
    head = head.replace("{{title}}", _html_escape(title))
    return head + data_json(payload) + tail


def data_json(payload: dict[str, Any]) -> str:
    """The payload as JSON that is safe inside a <script> element: '<' is written as \\u003c, so no text in a
    sample can close the element."""
    return orjson.dumps(payload).decode("utf-8").replace("<", "\\u003c")


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_page(html: str, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out


def make_server(html: str, port: int = 0):
    """An HTTP server on 127.0.0.1:`port` (0: a free one) that answers every GET with the page."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = html.encode("utf-8")

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.info("view: " + format, *args)

    return ThreadingHTTPServer(("127.0.0.1", port), Page)


@click.command(cls=Command)
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--label",
    "labels",
    multiple=True,
    help="Name of each results file on the page, once per file in order (default: the file stem).",
)
@options(ViewConfig)
def view(results, labels, **settings):
    """One page to browse RESULTS files of `tts solve`: summary, compute, curves, the verifier's reliability, and
    every problem's samples, votes, step scores and its strategy's own block (rounds and their stop signal, or a
    tree). Several files sit side by side.

    Writes one self-contained HTML file (--out; it opens from disk, with no network) or serves the page on
    localhost (--port) and prints its URL."""
    o = build(ViewConfig, settings)
    payload = build_payload(results, labels, num_subsets=o.num_subsets, seed=o.seed, num_bins=o.num_bins)
    html = page_html(payload, o.title)
    if o.out or o.port is None:
        path = write_page(html, o.out or "view.html")
        size = path.stat().st_size
        click.echo(f"wrote {path} ({size / 1e6:.1f} MB, {sum(len(r['problems']) for r in payload['runs'])} problems)")
    if o.port is not None:
        server = make_server(html, o.port)
        click.echo(f"serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
