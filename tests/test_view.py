"""`tts view`: the page's data, its file and server, and the page itself in headless chromium.

The browser tests open pages written from real runs of the embedded default (fixed, beam search, adaptive N on
bundled problems), click into problems and check what they show; any console error fails them. A strategy
registered only here, with a block view of its own, and one no registry knows, check that a strategy's block is drawn
from what it declares and never from a built-in's name. They need Debian's chromium and chromium-driver
(`bash scripts/install.sh test` installs both) and selenium (the `test` extra), and skip, saying which is missing,
only when one is absent.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import threading
import urllib.request
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tts_engine.eval.synthetic import synthetic_records
from tts_engine.eval.view import build_payload, data_json, load_run, make_server, page_html, view
from tts_engine.strategies import registry
from tts_engine.strategies.registry import BlockView, register_strategy, strategy_entry


def write_jsonl(path: Path, records) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


# --- without a browser -----------------------------------------------------------------------------------------
def test_a_malformed_results_file_names_the_file_and_line(tmp_path):
    good = orjson.dumps(synthetic_records(1, 2)[0]).decode()
    bad = write_jsonl(tmp_path / "bad.jsonl", [])
    bad.write_text(good + "\n{not json\n" + good + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: invalid results line, not JSON"):
        load_run(bad)
    listed = tmp_path / "list.jsonl"
    listed.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match=r"list\.jsonl:1: not a results line"):
        load_run(listed)
    lacking = write_jsonl(tmp_path / "lacking.jsonl", [{"id": "a", "samples": []}])
    with pytest.raises(ValueError, match=r"lacking\.jsonl:1: results record lacks aggregations, compute"):
        load_run(lacking)
    no_compute = write_jsonl(tmp_path / "no_compute.jsonl", [{"id": "a", "samples": [], "aggregations": {}}])
    with pytest.raises(ValueError, match=r"no_compute\.jsonl:1: results record lacks compute"):
        load_run(no_compute)
    result = CliRunner().invoke(view, [str(bad), "--out", str(tmp_path / "x.html")])
    assert result.exit_code != 0 and "bad.jsonl:2" in result.output


def test_a_torn_last_line_is_skipped_like_a_resumed_run_does(tmp_path):
    records = synthetic_records(3, 4)
    path = write_jsonl(tmp_path / "torn.jsonl", records)
    path.write_bytes(path.read_bytes() + b'{"id": "synthetic/3", "sampl')
    assert [r["id"] for r in load_run(path)] == [r["id"] for r in records]


def test_the_payload_reuses_the_curves_summary_and_reliability(tmp_path):
    path = write_jsonl(tmp_path / "run.jsonl", _voted(synthetic_records(12, 8, seed=3)))
    run = build_payload([path], num_subsets=50)["runs"][0]
    assert run["label"] == "run" and len(run["problems"]) == 12
    assert run["curves"]["k"] == [1, 2, 4, 8]
    majority = run["curves"]["aggregations"]["majority"]
    assert len(majority["accuracy"]) == len(majority["se"]) == 4
    assert run["summary"]["accuracy"]["majority"] == pytest.approx(majority["accuracy"][-1], abs=1e-3)
    kinds = {line["name"] for line in run["reliability"]}
    assert {"likelihood", "verifier_yes_no"} <= kinds
    assert all(len(line["bins"]) == 10 for line in run["reliability"])
    assert "prompt" not in run["problems"][0] and "run" not in run["problems"][0]


def test_each_run_carries_its_strategys_declared_view(tmp_path, toy_strategy):
    def run_of(strategy, **blocks):
        records = _voted(synthetic_records(2, 4))
        for r in records:
            r["run"] = {**r["run"], "strategy": strategy}
            r.update(blocks)
        return build_payload([write_jsonl(tmp_path / f"{strategy}.jsonl", records)], num_subsets=10)["runs"][0]

    deepconf = run_of("deepconf", deepconf={"stopped_because": "consensus", "n_used": 4, "confidences": [0.5]})
    assert deepconf["view"] == dataclasses.asdict(strategy_entry("deepconf").view)
    assert deepconf["blocks"] == ["deepconf"] and deepconf["facts"]["stopped because"] == {"consensus": 2}
    particle = run_of("particle", search={"nodes": [{"id": 0}, {"id": 1}], "rounds": 1})
    assert particle["view"]["kind"] == "tree" and particle["facts"]["mean tree nodes"] == 2
    fixed = run_of("fixed")
    assert fixed["view"] is None and fixed["blocks"] == []
    toy = run_of("toy", toy={"stopped_because": "confident", "confidences": [0.2]})
    assert toy["view"]["title"] == "Toy rounds" and toy["blocks"] == ["toy"]
    unknown = run_of("mystery", mystery={"stopped_because": "x"})
    assert unknown["view"] is None and unknown["blocks"] == ["mystery"]


def test_the_page_script_names_no_strategy():
    """The page draws a strategy's block from its declaration only: no built-in's name or block key in its script."""
    script = (Path(__file__).parents[1] / "eval" / "view_page" / "view.js").read_text().lower()
    for name in ("adaptive", "deepconf", "beam", "dvts", "particle"):
        assert name not in script, name
    words = set(re.findall(r"[\w-]*search[\w-]*", script))
    assert words <= {"search", "_search", "searchtext", "search-box"}, words  # the page's search box only


def test_a_run_without_references_has_no_curves_but_a_page(tmp_path):
    records = _voted(synthetic_records(3, 4))
    for r in records:
        r["reference"] = None
    run = build_payload([write_jsonl(tmp_path / "free.jsonl", records)], num_subsets=10)["runs"][0]
    assert "no problem has a reference" in run["curves"]["error"]
    assert "<svg" not in page_html({"runs": [run]})  # drawn by the script, not written by Python


def test_the_page_is_self_contained_and_no_text_closes_its_script(tmp_path):
    records = _voted(synthetic_records(2, 2))
    records[0]["samples"][0]["text"] = "</script><script>alert(1)</script>"
    payload = build_payload([write_jsonl(tmp_path / "r.jsonl", records)], num_subsets=10)
    assert "</script>" not in data_json(payload)
    html = page_html(payload)
    assert html.count("</script>") == 2  # the data element's and the script's own
    for reference in ("<script src", "<link", 'src="http', "url(http", "@import", "fetch("):
        assert reference not in html


def test_the_command_writes_the_page_and_the_server_serves_it(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", _voted(synthetic_records(4, 4)))
    out = tmp_path / "page" / "report.html"
    result = CliRunner().invoke(view, [str(path), "--out", str(out), "--subsets", "20"])
    assert result.exit_code == 0, result.output
    assert out.is_file() and f"wrote {out}" in result.output
    html = out.read_text()
    server = make_server(html, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/", timeout=10) as response:
            assert response.read().decode() == html
    finally:
        server.shutdown()
        server.server_close()


def _voted(records):
    """Synthetic records with the votes the engine writes (synthetic_records leaves them empty)."""
    from tts_engine.pipeline.aggregate import vote_predictions
    from tts_engine.pipeline.records import SampleRecord

    for r in records:
        grades = [c["correct"] for c in r["classes"]]
        samples = [SampleRecord.from_json(s) for s in r["samples"]]
        votes = vote_predictions(samples, grades, r["reference"] is not None)
        r["aggregations"] = {key: vote.to_json() for key, vote in votes.items()}
        r["run"] = {**r["run"], "headline_kind": "verifier_yes_no"}
    return records


# --- in headless chromium ----------------------------------------------------------------------------------------
def _browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "chromium is not installed (`bash scripts/install.sh test` installs Debian's chromium)"
    if not shutil.which("chromedriver"):
        return "chromedriver is not installed (`bash scripts/install.sh test` installs Debian's chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


needs_browser = pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real results files of the embedded default on bundled problems: fixed, beam search and adaptive N."""
    from tts_engine import Engine
    from tts_engine.inputs.models import default_problems_path
    from tts_engine.inputs.problems import load_problems
    from tts_engine.strategies.adaptive import AdaptiveConfig

    items = load_problems(default_problems_path())
    picked = [p for p in items if p.fields.get("level") == 1][:2] + [p for p in items if p.fields.get("level") == 3][:1]
    folder = tmp_path_factory.mktemp("view_runs")
    engine = Engine()
    plans = {
        "fixed": {"n": 4},
        "beam": {"n": 4},
        "adaptive": {"strategy": "adaptive-n", "config": AdaptiveConfig(wave=2, min_n=2, max_n=4, tau=0.999)},
    }
    paths = {}
    for name, plan in plans.items():
        paths[name] = folder / f"{name}.jsonl"
        engine.solve(picked, strategy=plan.pop("strategy", name), out=paths[name], progress=False, **plan)
    return paths


@pytest.fixture(scope="module")
def page(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("view_page") / "view.html"
    result = CliRunner().invoke(view, [str(runs[k]) for k in ("fixed", "beam", "adaptive")] + ["--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def browser():
    from tts_engine.eval.view import headless_chromium

    driver = headless_chromium()
    yield driver
    driver.quit()


def console_errors(driver) -> list[str]:
    """Console messages at error level since the last call (the log is read once), and a page error banner."""
    errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    banner = driver.find_elements("id", "error-banner")
    if banner and banner[0].is_displayed():
        errors.append(banner[0].text)
    return errors


def open_page(driver, path: Path, hash_: str = "overview") -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")  # a fresh document: the same file with another #hash would keep the page's state
    driver.get(f"{path.as_uri()}#{hash_}")
    WebDriverWait(driver, 20).until(lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "1")


def wait_for(driver, css: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 10).until(lambda d: d.find_elements("css selector", css))


@needs_browser
def test_the_overview_shows_summary_compute_curves_and_reliability(browser, page):
    open_page(browser, page)
    summary = browser.find_element("id", "summary-table").text
    assert "fixed" in summary and "beam" in summary and "adaptive" in summary and "majority" in summary
    assert "FLOPs" in browser.find_element("id", "compute-table").text
    assert len(browser.find_elements("css selector", "#curves svg.line-plot")) == 2
    assert len(browser.find_elements("css selector", "#curves svg path")) >= 3
    assert "verifier_recompute" in browser.find_element("id", "reliability-table").text
    assert console_errors(browser) == []


@needs_browser
def test_clicking_into_a_fixed_run_problem_shows_its_samples(browser, page, runs):
    records = load_run(runs["fixed"])
    open_page(browser, page, "list")
    rows = wait_for(browser, "tr.problem-row")
    assert len(rows) == len(records)
    rows[2].click()
    cards = wait_for(browser, "#samples .sample")
    assert len(cards) == len(records[2]["samples"])
    first = records[2]["samples"][0]
    assert first["text"].splitlines()[0] in cards[0].text
    assert cards[0].find_elements("css selector", "mark.answer")  # the answer highlighted
    assert len(cards[0].find_elements("css selector", ".step")) == len(first["step_scores"])  # lines coloured
    assert str(records[2]["id"]) in browser.find_element("id", "problem-title").text
    votes = browser.find_element("id", "votes-table").text
    assert "majority" in votes and "weighted:verifier_recompute" in votes
    assert console_errors(browser) == []


@needs_browser
def test_the_list_filters_searches_and_sorts(browser, page, runs):
    from selenium.webdriver.common.keys import Keys

    records = load_run(runs["fixed"])
    open_page(browser, page, "list")
    level = browser.find_element("css selector", "select[data-field=level]")
    last = records[-1]["fields"]["level"]
    level.find_element("css selector", f"option[value='{last}']").click()
    assert len(wait_for(browser, "tr.problem-row")) == sum(r["fields"]["level"] == last for r in records) < len(records)
    level.find_element("css selector", "option[value='']").click()
    browser.find_element("id", "search-box").send_keys(str(records[1]["id"]))
    rows = browser.find_elements("css selector", "tr.problem-row")
    assert len(rows) == 1 and str(records[1]["id"]) in rows[0].text
    browser.find_element("id", "search-box").send_keys(Keys.CONTROL, "a", Keys.DELETE)
    assert len(browser.find_elements("css selector", "tr.problem-row")) == len(records)
    browser.find_element("css selector", "#sort-select option[value=cost-desc]").click()
    costs = [r["compute"]["generated_tokens"] + r["compute"]["verifier_tokens"] for r in records]
    first = browser.find_elements("css selector", "tr.problem-row")[0]
    assert int(first.get_attribute("data-index")) == costs.index(max(costs))
    assert console_errors(browser) == []


@needs_browser
def test_abstained_answers_filter_and_p_correct_sorts(browser, tmp_path):
    records = _voted(synthetic_records(30, 4, seed=5))
    for i, r in enumerate(records):
        vote = r["aggregations"]["weighted:verifier_yes_no"]
        vote["p_correct"] = round((i * 7 % 30) / 30, 3)
        vote["abstained"] = vote["p_correct"] < 0.2
    out = tmp_path / "abstain.html"
    assert CliRunner().invoke(view, [str(write_jsonl(tmp_path / "a.jsonl", records)), "--out", str(out)]).exit_code == 0
    open_page(browser, out, "list")
    browser.find_element("css selector", "#outcome-filter button[data-outcome=abstained]").click()
    rows = browser.find_elements("css selector", "tr.problem-row")
    abstained = [i for i, r in enumerate(records) if r["aggregations"]["weighted:verifier_yes_no"]["abstained"]]
    assert sorted(int(row.get_attribute("data-index")) for row in rows) == abstained
    browser.find_element("css selector", "#outcome-filter button[data-outcome=all]").click()
    browser.find_element("css selector", "#sort-select option[value=conf-desc]").click()
    first = browser.find_elements("css selector", "tr.problem-row")[0]
    p = [r["aggregations"]["weighted:verifier_yes_no"]["p_correct"] for r in records]
    assert int(first.get_attribute("data-index")) == p.index(max(p))
    assert "p_correct" in browser.find_element("id", "problem-table").text
    assert console_errors(browser) == []


@needs_browser
def test_a_beam_problem_shows_its_search_tree(browser, page, runs):
    records = load_run(runs["beam"])
    open_page(browser, page, "list")
    browser.find_element("css selector", "#run-select option[value='1']").click()
    wait_for(browser, "tr.problem-row")[0].click()
    summary = wait_for(browser, "#tree-summary")[0]
    assert browser.find_element("css selector", "#tree-section h2").text == strategy_entry("beam").view.title
    nodes = records[0]["search"]["nodes"]
    assert int(summary.get_attribute("data-nodes")) == len(nodes)
    assert len(browser.find_elements("css selector", "#tree-svg .tree-node")) == len(nodes)
    browser.find_elements("css selector", "#tree-svg .tree-node")[1].click()
    assert "node 1" in browser.find_element("id", "node-detail").text
    assert len(browser.find_elements("css selector", "#samples .sample")) == len(records[0]["samples"])
    assert console_errors(browser) == []


@needs_browser
def test_an_adaptive_problem_shows_its_waves_and_when_it_stopped(browser, page, runs):
    records = load_run(runs["adaptive"])
    open_page(browser, page, "p/2/0")
    facts = wait_for(browser, "#block-facts")[0].text
    block = records[0]["adaptive"]
    assert block["stopped_because"] in facts
    section = browser.find_element("id", "rounds-section")
    assert section.get_attribute("data-key") == "adaptive"
    assert section.find_element("tag name", "h2").text == strategy_entry("adaptive-n").view.title
    waves = browser.find_elements("css selector", "#rounds-table tbody tr")
    assert len(waves) == len(block["confidences"])
    assert [w.find_element("tag name", "td").text for w in waves][:2] == ["wave 1", "wave 2"][: len(waves)]
    assert f"stop at {block['tau']}" in section.text
    assert "wave 1" in browser.find_element("css selector", "#samples .sample").text
    assert console_errors(browser) == []


TOY_VIEW = BlockView(
    "toy",
    "rounds",
    "Toy rounds",
    signal="toy signal",
    round_label="toy {i} at {budget}",
    first_round="toy warm-up",
    threshold="level",
    wave="batch",
    warmup="first",
)


@pytest.fixture
def toy_strategy(monkeypatch):
    """A strategy registered only in this test (on a copy of the registry, restored after it), declaring its own
    block view: key "toy", kind "rounds", its own title, round labels, threshold and wave settings."""
    monkeypatch.setattr(registry, "_STRATEGIES", dict(registry.strategies()))

    def build(parts, params, config, **extra):
        raise NotImplementedError("the page test never runs it")

    register_strategy("toy", help="A test's strategy.", view=TOY_VIEW)(build)
    return TOY_VIEW


@needs_browser
def test_a_registered_strategys_block_is_drawn_from_its_declaration(browser, tmp_path, toy_strategy):
    """A strategy only this test registers gets its rounds section (title, round labels, threshold, sample labels)
    from its BlockView; a strategy no registry knows still shows its samples, votes and its block as plain keys."""
    toy = _voted(synthetic_records(2, 6, seed=1))
    for r in toy:
        r["run"] = {**r["run"], "strategy": "toy", "toy": {"level": 0.8, "batch": 2, "first": 2, "budgets": [10, 20]}}
        r["toy"] = {"stopped_because": "confident", "n_used": 6, "confidences": [0.2, 0.5, 0.9]}
    mystery = _voted(synthetic_records(2, 3, seed=2))
    for r in mystery:
        r["run"] = {**r["run"], "strategy": "mystery"}
        r["mystery"] = {"stopped_because": "luck", "pieces": [1, 2]}
    out = tmp_path / "toy.html"
    files = [str(write_jsonl(tmp_path / "toy.jsonl", toy)), str(write_jsonl(tmp_path / "mystery.jsonl", mystery))]
    result = CliRunner().invoke(view, files + ["--out", str(out), "--subsets", "10"])
    assert result.exit_code == 0, result.output

    open_page(browser, out, "overview")
    assert "confident" in browser.find_element("css selector", ".run-card").text  # the run's stop reasons
    open_page(browser, out, "p/0/0")
    section = wait_for(browser, "#rounds-section")[0]
    assert section.get_attribute("data-key") == "toy" and section.find_element("tag name", "h2").text == "Toy rounds"
    assert "confident" in browser.find_element("id", "block-facts").text
    labels = [row.find_element("tag name", "td").text for row in section.find_elements("css selector", "tbody tr")]
    assert labels == ["toy warm-up", "toy 1 at 10", "toy 2 at 20"]
    assert "stop at 0.8" in section.text and "toy signal" in section.text
    cards = browser.find_elements("css selector", "#samples .sample")
    assert len(cards) == 6
    assert ["toy warm-up" in c.text for c in cards] == [True, True, False, False, False, False]
    assert "toy 1 at 10" in cards[2].text and "toy 2 at 20" in cards[5].text
    assert console_errors(browser) == []

    open_page(browser, out, "p/1/0")
    assert len(wait_for(browser, "#samples .sample")) == 3
    assert "majority" in browser.find_element("id", "votes-table").text
    plain = browser.find_element("css selector", ".block-section[data-key=mystery]")
    assert plain.get_attribute("data-kind") == "plain"
    assert "luck" in plain.text and "pieces" in plain.text and "[1,2]" in plain.text
    assert not browser.find_elements("id", "rounds-section") and not browser.find_elements("id", "tree-section")
    assert console_errors(browser) == []


@needs_browser
def test_a_page_error_is_caught(browser, tmp_path):
    """The console check itself: a page whose data does not parse reports an error."""
    broken = tmp_path / "broken.html"
    broken.write_text(page_html({"runs": []}).replace('{"runs":[]}', "{broken"))
    browser.get(broken.as_uri())
    assert console_errors(browser)


def test_runs_over_different_problems_are_compared_on_the_ones_they_share(tmp_path):
    records = _voted(synthetic_records(6, 4, seed=1))
    first = write_jsonl(tmp_path / "a.jsonl", records[:4])  # problems 0-3
    second = write_jsonl(tmp_path / "b.jsonl", records[2:])  # problems 2-5
    payload = build_payload([first, second], num_subsets=10)
    assert payload["shared"] == {"problems": 2, "per_run": [4, 4]}
    shared = [run["shared_summary"] for run in payload["runs"]]
    assert [s["problems"] for s in shared] == [2, 2] and shared[0]["accuracy"] == shared[1]["accuracy"]
    assert build_payload([first, first], num_subsets=10)["shared"] is None  # the same problems: no note


@needs_browser
def test_the_page_says_when_runs_cover_different_problems(browser, tmp_path):
    records = _voted(synthetic_records(6, 4, seed=1))
    paths = [write_jsonl(tmp_path / "a.jsonl", records[:4]), write_jsonl(tmp_path / "b.jsonl", records[2:])]
    out = tmp_path / "view.html"
    assert CliRunner().invoke(view, [*map(str, paths), "--out", str(out)]).exit_code == 0
    open_page(browser, out)
    assert (
        "cover different problems (4, 4): the table compares them on the 2 they share"
        in browser.find_element("id", "shared-note").text
    )
    open_page(browser, out, "list")
    rows = wait_for(browser, "tr.problem-row")
    assert "not in this run" in rows[0].text  # problem 0 of run a is not in run b
    assert console_errors(browser) == []
