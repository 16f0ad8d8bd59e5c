// tts view: draws the page from the JSON blob written by tts_engine/eval/view.py. No network, no libraries.
// Every text from the data goes into the DOM as textContent, never as HTML. Problem pages are built when opened.
"use strict";

const DATA = JSON.parse(document.getElementById("tts-data").textContent);
const RUNS = DATA.runs;
const PAGE_SIZE = 50;
const SVG_NS = "http://www.w3.org/2000/svg";
const PALETTE = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#1b7c83", "#e16f24", "#a0116e", "#57606a",
  "#4d2d00"];
const DASHES = ["", "6 3", "2 3", "8 3 2 3"];
const ERROR_SCORE = 0.5; // a step scored below this is the verifier's "error" (first one marked)

// --- small helpers ----------------------------------------------------------------------------------------
function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of [].concat(children || [])) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs, children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of [].concat(children || [])) if (child) node.append(child);
  return node;
}

function fmt(value, digits) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (typeof value !== "number") return String(value);
  return value.toFixed(digits === undefined ? 3 : digits);
}

function fmtBig(value) {
  if (value === null || value === undefined) return "–";
  const units = [[1e18, "E"], [1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [size, unit] of units) if (Math.abs(value) >= size) return (value / size).toFixed(2) + unit;
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function scoreColour(score) {
  if (typeof score !== "number") return "#eaeef2";
  const s = Math.max(0, Math.min(1, score));
  return `hsl(${Math.round(120 * s)}, 70%, ${s > 0.9 ? 86 : 82}%)`;
}

function classColour(cls) {
  return cls < 0 ? "#8c959f" : PALETTE[cls % PALETTE.length];
}

function classBadge(cls, answer) {
  const text = cls < 0 ? "no answer" : `${cls}: ${answer === null || answer === undefined ? "?" : answer}`;
  return el("span", { class: "cls", style: `background:${classColour(cls)}`, title: `answer class ${cls}`, text });
}

function outcomeBadge(outcome) {
  const kind = { "no vote": "no-vote", "not in this run": "absent" }[outcome] || outcome;
  return el("span", { class: `badge ${kind}`, text: outcome });
}

function section(title, children, attrs) {
  return el("section", attrs || {}, [el("h2", { text: title })].concat(children));
}

function table(headers, rows, attrs) {
  const head = el("tr", {}, headers.map((h) => el("th", { class: h.num ? "num" : "", text: h.text || h })));
  return el("table", attrs || {}, [el("thead", {}, head), el("tbody", {}, rows)]);
}

function td(value, cls) {
  return el("td", { class: cls || "" }, value instanceof Node ? value : [fmt(value)]);
}

// --- one problem's derived facts (cached) -------------------------------------------------------------------
function voteOf(problem, key) {
  return (problem.aggregations || {})[key] || null;
}

function outcomeOf(problem, key) {
  if (problem.status && problem.status !== "ok") return "failed";
  const vote = voteOf(problem, key);
  if (!vote) return "no vote";
  if (vote.abstained) return "abstained";
  if (problem.reference === null || problem.reference === undefined || vote.correct === null) return "ungraded";
  return vote.correct ? "right" : "wrong";
}

function confidenceOf(vote) {
  if (!vote) return null;
  return typeof vote.p_correct === "number" ? vote.p_correct : vote.confidence;
}

function costOf(problem) {
  const c = problem.compute || {};
  return (c.generated_tokens || 0) + (c.verifier_tokens || 0);
}

function disagreesWithMajority(problem, key) {
  const vote = voteOf(problem, key);
  const majority = voteOf(problem, "majority");
  return !!(vote && majority && key !== "majority" && vote.answer_class !== majority.answer_class);
}

function voteKeys(run) {
  const keys = [];
  const seen = new Set();
  for (const p of run.problems) for (const k of Object.keys(p.aggregations || {})) if (!seen.has(k)) {
    seen.add(k);
    keys.push(k);
  }
  return keys;
}

function shortFields(run) {
  // Field -> sorted distinct values, for fields with few scalar values (level, subject, ...).
  const values = {};
  for (const p of run.problems) for (const [k, v] of Object.entries(p.fields || {})) {
    if (v === null || typeof v === "object") continue;
    (values[k] = values[k] || new Set()).add(String(v));
  }
  const out = {};
  for (const [k, set] of Object.entries(values)) if (set.size >= 1 && set.size <= 50) {
    out[k] = [...set].sort((a, b) => (Number(a) - Number(b)) || a.localeCompare(b));
  }
  return out;
}

const ID_INDEX = RUNS.map((run) => new Map(run.problems.map((p, i) => [String(p.id), i])));

// --- routing ----------------------------------------------------------------------------------------------
const state = { run: 0, vote: RUNS[0].headline_vote, outcome: "all", fields: {}, disagree: false, runsDiffer: false,
  search: "", sort: "file", page: 0 };

function route() {
  const hash = decodeURIComponent(location.hash.slice(1)) || "overview";
  const app = document.getElementById("app");
  app.replaceChildren();
  for (const name of ["overview", "list"]) {
    document.getElementById(`nav-${name}`).classList.toggle("active", hash === name);
  }
  const match = /^p\/(\d+)\/(\d+)$/.exec(hash);
  if (match) app.append(problemPage(Number(match[1]), Number(match[2])));
  else if (hash === "list") app.append(listPage());
  else app.append(overviewPage());
  window.scrollTo(0, 0);
}

// --- overview -----------------------------------------------------------------------------------------------
function overviewPage() {
  return el("div", { id: "overview-page" }, [
    section("Runs", [runCards()]),
    section("Summary", summaryTable()),
    section("Compute spent", [computeTable()]),
    section("Curves", curvesSection()),
    section("Verifier reliability", reliabilitySection()),
  ]);
}

function runCards() {
  return el("div", { class: "cards" }, RUNS.map((run, i) => {
    const r = run.run || {};
    const rows = [["strategy", run.strategy], ["model", r.model], ["N", r.n], ["verifier", r.verifier],
      ["headline vote", run.headline_vote], ["backend", r.backend], ["temperature", r.temperature],
      ["max new tokens", r.max_new_tokens], ["seed", r.seed], ["calibration", r.calibration]].concat(
      Object.entries(run.facts || {}).map(([k, v]) => [k, typeof v === "object" ?
        Object.entries(v).map(([a, b]) => `${a} ${b}`).join(", ") : v]));
    return el("div", { class: "card run-card" }, [
      el("div", { class: "label" }, [run.label, " ", RUNS.length > 1 ? svg("svg", { width: 30, height: 8 }, svg("line", {
        x1: 0, x2: 30, y1: 4, y2: 4, stroke: "#57606a", "stroke-width": 2, "stroke-dasharray": DASHES[i % DASHES.length] }))
        : null]),
      el("div", { class: "note", text: run.source }),
      el("div", { class: "kv" }, rows.filter(([, v]) => v !== undefined && v !== null)
        .flatMap(([k, v]) => [el("span", { text: k }), el("span", { text: String(v) })])),
    ]);
  }));
}

function summaryTable() {
  const all = el("input", { type: "checkbox", id: "summary-all" });
  const holder = el("div");
  const draw = () => {
    const keys = [];
    const add = (k) => { if (!keys.includes(k)) keys.push(k); };
    for (const run of RUNS) (all.checked ? Object.keys(run.summary.accuracy) : run.headline_rows).forEach(add);
    const shared = DATA.shared;  // set when the runs cover different problems: compared on those they share
    const summaryOf = (run) => (shared ? run.shared_summary : run.summary) || { accuracy: {} };
    const rows = [["pass@1 (mean over problems)", RUNS.map((run) => summaryOf(run)["pass@1"])]]
      .concat(keys.map((k) => [k, RUNS.map((run) => summaryOf(run).accuracy[k])]));
    const comparable = RUNS.length > 1 && !(shared && shared.problems === 0);
    const body = rows.map(([name, values]) => {
      const best = comparable ? Math.max(...values.filter((v) => typeof v === "number")) : null;
      return el("tr", {}, [el("td", { class: "mono", text: name })].concat(
        values.map((v) => td(v, "num" + (v === best ? " best" : "")))));
    });
    const counts = el("tr", {}, [el("td", { text: "problems (with a reference)" })].concat(
      RUNS.map((run) => el("td", { class: "num", text: `${summaryOf(run).problems ?? 0} (${summaryOf(run).graded ?? 0})` }))));
    holder.replaceChildren(table([{ text: "accuracy" }].concat(RUNS.map((run) => ({ text: run.label, num: true }))),
      [counts].concat(body), { id: "summary-table" }));
  };
  all.addEventListener("change", draw);
  draw();
  const shared = DATA.shared;
  const differ = shared ? el("p", { class: "note", id: "shared-note", text: shared.problems ?
    `These runs cover different problems (${shared.per_run.join(", ")}): the table compares them on the ` +
    `${shared.problems} they share; each run's card and list hold all of its own.` :
    `These runs cover different problems (${shared.per_run.join(", ")}) and share none: they are not compared.` }) : null;
  const failures = RUNS.filter((run) => Object.keys((run.summary.failures || {}).counts || {}).length)
    .map((run) => el("p", { class: "note", text: `${run.label}: not solved, counted as wrong: ` +
      JSON.stringify(run.summary.failures.counts) }));
  return [differ, holder, el("label", { class: "small" }, [all, " every vote over every score kind"])]
    .concat(failures).filter(Boolean);
}

function computeTable() {
  const rows = [
    ["samples", (run) => run.compute.samples],
    ["generated tokens", (run) => run.compute.generated_tokens],
    ["verifier tokens", (run) => run.compute.verifier_tokens],
    ["prompt tokens", (run) => run.compute.prompt_tokens],
    ["generated tokens / problem", (run) => run.compute.generated_tokens / Math.max(1, run.problems.length)],
    ["verifier tokens / problem", (run) => run.compute.verifier_tokens / Math.max(1, run.problems.length)],
    ["FLOPs (2 × parameters × tokens)", (run) => run.compute.flops],
    ["time (s)", (run) => run.compute.time_s],
    ["of which verifying (s)", (run) => run.compute.verify_time_s],
  ];
  return table([{ text: "compute" }].concat(RUNS.map((run) => ({ text: run.label, num: true }))),
    rows.map(([name, get]) => el("tr", {}, [el("td", { text: name })].concat(
      RUNS.map((run) => el("td", { class: "num", text: fmtBig(get(run)) }))))), { id: "compute-table" });
}

// --- curves -------------------------------------------------------------------------------------------------
function curvesSection() {
  const withCurves = RUNS.filter((run) => run.curves && run.curves.aggregations);
  const notes = RUNS.filter((run) => run.curves && run.curves.error)
    .map((run) => el("p", { class: "note", text: `${run.label}: no curves: ${run.curves.error}` }));
  if (!withCurves.length) return notes.length ? notes : [el("p", { class: "note", text: "no curves" })];
  const names = [];
  for (const run of withCurves) for (const n of Object.keys(run.curves.aggregations)) if (!names.includes(n)) names.push(n);
  const shown = RUNS.length > 1 ? withCurves.map((run) => run.headline_vote) : withCurves[0].headline_rows;
  const chosen = new Set(["pass@k", "majority"].concat(shown).filter((n) => names.includes(n)));
  const plots = el("div", { class: "grid2", id: "curves" });
  const draw = () => plots.replaceChildren(
    curvePlot(withCurves, [...chosen], "samples", "samples per problem (k)"),
    curvePlot(withCurves, [...chosen], "tokens", "tokens per problem (generated + verifier)"));
  const picker = el("div", { class: "picker" }, names.map((name) => {
    const box = el("input", { type: "checkbox", checked: chosen.has(name), onchange: (e) => {
      if (e.target.checked) chosen.add(name); else chosen.delete(name);
      draw();
    } });
    return el("label", {}, [box, " ", name]);
  }));
  draw();
  const extra = withCurves.map((run) => {
    const eff = (run.curves.efficiency || {})[run.headline_vote] || {};
    const ratio = (r) => (typeof r === "number" ? `${r.toFixed(2)}×` : "–");
    return el("p", { class: "note" }, `${run.label}: k = ${run.curves.k.join(", ")}; ${run.curves.num_problems_scored} ` +
      `problems scored; R = ${run.curves.num_subsets} subsets; error bars ± 1 se across problems. ` +
      `Efficiency of ${run.headline_vote} against majority@N: samples ${ratio(eff.samples)}, tokens ${ratio(eff.tokens)}` +
      (run.curves.notes.length ? ". " + run.curves.notes.join("; ") : ""));
  });
  return [picker, plots].concat(extra, notes);
}

function curvePlot(runs, names, axis, xLabel) {
  const series = [];
  runs.forEach((run, r) => names.forEach((name) => {
    const entry = run.curves.aggregations[name];
    if (!entry) return;
    const xs = entry.compute[axis] || [];
    series.push({
      label: runs.length > 1 ? `${run.label} · ${name}` : name,
      colour: PALETTE[names.indexOf(name) % PALETTE.length],
      dash: DASHES[r % DASHES.length],
      points: xs.map((x, i) => ({ x, y: entry.accuracy[i], se: entry.se[i] })).filter((p) => p.x > 0),
    });
  }));
  return linePlot({ series, xLabel, yLabel: "accuracy", logX: true, title: `accuracy against ${axis}` });
}

function linePlot(opts) {
  const W = 560, H = 330, L = 52, R = 14, T = 24, B = 42;
  const pts = opts.series.flatMap((s) => s.points);
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "line-plot" });
  root.append(svg("text", { x: L, y: 15, "font-size": 13, "font-weight": 600, text: opts.title }));
  if (!pts.length) return el("div", { class: "plot" }, [root]);
  const tx = (v) => (opts.logX ? Math.log2(v) : v);
  let x0 = Math.min(...pts.map((p) => tx(p.x))), x1 = Math.max(...pts.map((p) => tx(p.x)));
  if (x1 - x0 < 1e-9) { x0 -= 1; x1 += 1; }
  let y0 = Math.min(...pts.map((p) => p.y - (p.se || 0))), y1 = Math.max(...pts.map((p) => p.y + (p.se || 0)));
  y0 = opts.yMin !== undefined ? opts.yMin : Math.max(0, y0 - 0.03);
  y1 = opts.yMax !== undefined ? opts.yMax : Math.min(1, y1 + 0.03);
  if (y1 - y0 < 1e-6) { y0 = Math.max(0, y0 - 0.05); y1 = Math.min(1, y1 + 0.05); }
  const X = (v) => L + ((tx(v) - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
  for (const v of xTicksLinear(y0, y1)) {
    root.append(svg("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: "#eaeef2" }));
    root.append(svg("text", { x: L - 6, y: Y(v) + 4, "font-size": 11, "text-anchor": "end", text: v.toFixed(2) }));
  }
  const ticks = opts.logX ? xTicksLog(x0, x1) : xTicksLinear(x0, x1);
  for (const t of ticks) {
    root.append(svg("line", { x1: X(t), x2: X(t), y1: T, y2: H - B, stroke: "#f0f2f4" }));
    root.append(svg("text", { x: X(t), y: H - B + 14, "font-size": 11, "text-anchor": "middle", text: fmtBig(t) }));
  }
  root.append(svg("text", { x: (L + W - R) / 2, y: H - 8, "font-size": 12, "text-anchor": "middle", text: opts.xLabel }));
  root.append(svg("text", { x: 14, y: (T + H - B) / 2, "font-size": 12, "text-anchor": "middle",
    transform: `rotate(-90 14 ${(T + H - B) / 2})`, text: opts.yLabel }));
  root.append(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#8c959f" }));
  for (const s of opts.series) {
    const path = s.points.map((p, i) => `${i ? "L" : "M"}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join("");
    root.append(svg("path", { d: path, fill: "none", stroke: s.colour, "stroke-width": 2, "stroke-dasharray": s.dash }));
    for (const p of s.points) {
      if (p.se) root.append(svg("line", { x1: X(p.x), x2: X(p.x), y1: Y(Math.max(y0, p.y - p.se)),
        y2: Y(Math.min(y1, p.y + p.se)), stroke: s.colour, "stroke-width": 1.2 }));
      root.append(svg("circle", { cx: X(p.x), cy: Y(p.y), r: 2.6, fill: s.colour }, [
        svg("title", { text: `${s.label}: ${fmt(p.y)} ± ${fmt(p.se)} at ${fmtBig(p.x)}` })]));
    }
  }
  const legend = el("div", { class: "legend" }, opts.series.map((s) => el("span", {}, [
    svg("svg", { width: 24, height: 8 }, svg("line", { x1: 0, x2: 24, y1: 4, y2: 4, stroke: s.colour, "stroke-width": 2,
      "stroke-dasharray": s.dash })), " ", s.label])));
  return el("div", { class: "plot" }, [root, legend]);
}

function xTicksLinear(x0, x1) {
  const raw = (x1 - x0) / 6;
  const size = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * size).find((m) => m >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(x0 / step) * step; t <= x1 + 1e-9; t += step) ticks.push(Number(t.toPrecision(6)));
  return ticks;
}

function xTicksLog(x0, x1) {
  const ticks = [];
  const step = Math.max(1, Math.ceil((x1 - x0) / 8));
  for (let e = Math.ceil(x0); e <= Math.floor(x1); e += step) ticks.push(2 ** e);
  return ticks;
}

// --- reliability ----------------------------------------------------------------------------------------------
function reliabilitySection() {
  const names = [];
  for (const run of RUNS) for (const line of run.reliability) if (!names.includes(line.name)) names.push(line.name);
  if (!names.length) return [el("p", { class: "note", text: "no graded samples: no reliability to show" })];
  const preferred = RUNS.map((run) => (run.summary.headline_kind || "")).find((k) => names.includes(k));
  const select = el("select", { id: "reliability-kind" }, names.map((n) => el("option", { value: n, text: n })));
  select.value = preferred || names[0];
  const holder = el("div", { class: "grid2" });
  const draw = () => {
    const lines = RUNS.map((run, r) => ({ run, r, line: run.reliability.find((l) => l.name === select.value) }))
      .filter((x) => x.line);
    holder.replaceChildren(reliabilityPlot(lines), reliabilityTable(lines));
  };
  select.addEventListener("change", draw);
  draw();
  return [el("div", { class: "controls" }, [el("label", { text: "score" }), select,
    el("span", { class: "note", text: "fraction right in each score bin; the diagonal is perfect calibration" })]),
  holder];
}

function reliabilityPlot(lines) {
  const series = lines.map(({ run, r, line }) => ({
    label: `${run.label} · ${line.name}`,
    colour: PALETTE[r % PALETTE.length],
    dash: "",
    points: line.bins.filter((b) => b.count).map((b) => ({ x: b.mean_score, y: b.fraction_right, n: b.count })),
  }));
  const plot = linePlot({ series, xLabel: "score (bin mean)", yLabel: "fraction right", logX: false,
    yMin: 0, yMax: 1, title: "reliability" });
  const root = plot.querySelector("svg");
  const W = 560, H = 330, L = 52, R = 14, T = 24, B = 42;
  root.insertBefore(svg("line", { x1: L, y1: H - B, x2: W - R, y2: T, stroke: "#8c959f", "stroke-dasharray": "3 3" }),
    root.children[1]);
  return plot;
}

function reliabilityTable(lines) {
  return el("div", {}, [table(["run", "signal", { text: "count", num: true }, { text: "right", num: true },
    { text: "ECE", num: true }, { text: "AUROC", num: true }],
  lines.map(({ run, line }) => el("tr", {}, [el("td", { text: run.label }), el("td", { class: "mono", text: line.name }),
    td(String(line.count), "num"), td(String(line.right), "num"), td(line.ece, "num"), td(line.auroc, "num")])),
  { id: "reliability-table" }),
  el("p", { class: "note", text: "bins: [low, high) count, mean score, fraction right" }),
  ...lines.map(({ run, line }) => el("details", {}, [el("summary", { text: `${run.label}: bins` }),
    table(["bin", { text: "count", num: true }, { text: "mean", num: true }, { text: "right", num: true }],
      line.bins.map((b) => el("tr", {}, [el("td", { text: `[${b.low.toFixed(1)}, ${b.high.toFixed(1)})` }),
        td(String(b.count), "num"), td(b.mean_score, "num"), td(b.fraction_right, "num")])))]))]);
}

// --- problem list -------------------------------------------------------------------------------------------
function listPage() {
  const run = RUNS[state.run];
  const keys = voteKeys(run);
  if (!keys.includes(state.vote)) state.vote = keys.includes(run.headline_vote) ? run.headline_vote : keys[0];
  const root = el("div", { id: "list-page" });
  const controls = el("div", { class: "controls" });
  const body = el("div");
  const redraw = () => { body.replaceChildren(listBody(run, filtered(run))); };
  const rebuild = () => { state.page = 0; redraw(); };
  if (RUNS.length > 1) {
    const runSelect = el("select", { id: "run-select", onchange: (e) => {
      state.run = Number(e.target.value); state.page = 0; route();
    } }, RUNS.map((r, i) => el("option", { value: i, text: r.label })));
    runSelect.value = String(state.run);
    controls.append(el("label", { text: "run" }), runSelect);
  }
  const voteSelect = el("select", { id: "vote-select", onchange: (e) => { state.vote = e.target.value; route(); } },
    keys.map((k) => el("option", { value: k, text: k })));
  voteSelect.value = state.vote;
  controls.append(el("label", { text: "vote" }), voteSelect);
  const counts = {};
  for (const p of run.problems) { const o = outcomeOf(p, state.vote); counts[o] = (counts[o] || 0) + 1; }
  const outcomes = ["all", "right", "wrong", "abstained", "ungraded", "failed"].filter((o) => o === "all" || counts[o]);
  const seg = el("span", { id: "outcome-filter" }, outcomes.map((o) => el("button", {
    class: "seg" + (state.outcome === o ? " on" : ""), "data-outcome": o,
    text: o === "all" ? `all ${run.problems.length}` : `${o} ${counts[o]}`,
    onclick: (e) => {
      state.outcome = o;
      seg.querySelectorAll("button").forEach((b) => b.classList.toggle("on", b === e.target));
      rebuild();
    } })));
  controls.append(seg);
  for (const [field, values] of Object.entries(shortFields(run))) {
    const select = el("select", { "data-field": field, onchange: (e) => {
      if (e.target.value === "") delete state.fields[field]; else state.fields[field] = e.target.value;
      rebuild();
    } }, [el("option", { value: "", text: "any" })].concat(values.map((v) => el("option", { value: v, text: v }))));
    select.value = state.fields[field] || "";
    controls.append(el("label", { text: field }), select);
  }
  const disagree = el("input", { type: "checkbox", id: "filter-disagree", checked: state.disagree,
    onchange: (e) => { state.disagree = e.target.checked; rebuild(); } });
  controls.append(el("label", {}, [disagree, ` ${state.vote === "majority" ? "vote" : state.vote} ≠ majority`]));
  if (RUNS.length > 1) {
    const differ = el("input", { type: "checkbox", id: "filter-runs-differ", checked: state.runsDiffer,
      onchange: (e) => { state.runsDiffer = e.target.checked; rebuild(); } });
    controls.append(el("label", {}, [differ, " runs differ"]));
  }
  const sort = el("select", { id: "sort-select", onchange: (e) => { state.sort = e.target.value; rebuild(); } }, [
    ["file", "file order"], ["conf-asc", "confidence ↑"], ["conf-desc", "confidence ↓"], ["cost-asc", "cost ↑"],
    ["cost-desc", "cost ↓"]].map(([v, t]) => el("option", { value: v, text: t })));
  sort.value = state.sort;
  controls.append(el("label", { text: "sort" }), sort);
  const search = el("input", { type: "search", id: "search-box", placeholder: "search id, problem, answers",
    value: state.search, oninput: (e) => { state.search = e.target.value; rebuild(); } });
  controls.append(search);
  root.append(controls, body);
  redraw();
  return root;
}

function searchText(problem) {
  if (problem._search === undefined) {
    const answers = (problem.classes || []).map((c) => c.answer).join(" ");
    problem._search = [problem.id, problem.problem, problem.reference, answers].join("\n").toLowerCase();
  }
  return problem._search;
}

function otherOutcomes(problem) {
  return RUNS.map((run, r) => {
    if (r === state.run) return null;
    const i = ID_INDEX[r].get(String(problem.id));
    return i === undefined ? "not in this run" : outcomeOf(run.problems[i], run.headline_vote);
  });
}

function filtered(run) {
  const query = state.search.trim().toLowerCase();
  let rows = run.problems.map((p, i) => ({ p, i }));
  rows = rows.filter(({ p }) => {
    if (state.outcome !== "all" && outcomeOf(p, state.vote) !== state.outcome) return false;
    for (const [field, value] of Object.entries(state.fields)) {
      if (String((p.fields || {})[field]) !== value) return false;
    }
    if (state.disagree && !disagreesWithMajority(p, state.vote)) return false;
    if (state.runsDiffer) {
      const all = [outcomeOf(p, run.headline_vote)].concat(otherOutcomes(p).filter((o) => o !== null));
      if (new Set(all).size < 2) return false;
    }
    return !query || searchText(p).includes(query);
  });
  const conf = ({ p }) => { const c = confidenceOf(voteOf(p, state.vote)); return c === null ? -1 : c; };
  const sorters = {
    "conf-asc": (a, b) => conf(a) - conf(b), "conf-desc": (a, b) => conf(b) - conf(a),
    "cost-asc": (a, b) => costOf(a.p) - costOf(b.p), "cost-desc": (a, b) => costOf(b.p) - costOf(a.p),
  };
  if (sorters[state.sort]) rows.sort((a, b) => sorters[state.sort](a, b) || a.i - b.i);
  state.visible = rows.map((r) => r.i);
  return rows;
}

function listBody(run, rows) {
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  state.page = Math.min(state.page, pages - 1);
  const shown = rows.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
  const fields = Object.keys(shortFields(run));
  const usesP = run.problems.some((p) => typeof (voteOf(p, state.vote) || {}).p_correct === "number");
  const headers = ["#", "id"].concat(fields, ["reference", "answer", "outcome",
    { text: usesP ? "p_correct" : "confidence", num: true }, { text: "tokens", num: true }, { text: "samples", num: true }]);
  if (RUNS.length > 1) headers.push("other runs");
  const trs = shown.map(({ p, i }) => {
    const vote = voteOf(p, state.vote);
    const cells = [td(String(i + 1), "num"), el("td", { class: "mono", text: String(p.id) })]
      .concat(fields.map((f) => el("td", { text: String((p.fields || {})[f] ?? "") })), [
        el("td", { class: "mono", text: p.reference ?? "–" }),
        el("td", {}, vote ? classBadge(vote.answer_class, vote.answer) : "–"),
        el("td", {}, [outcomeBadge(outcomeOf(p, state.vote)),
          disagreesWithMajority(p, state.vote) ? el("span", { class: "muted small", text: " ≠maj" }) : null]),
        td(confidenceOf(vote), "num"), td(fmtBig(costOf(p)), "num"), td(String((p.samples || []).length), "num")]);
    if (RUNS.length > 1) {
      cells.push(el("td", {}, otherOutcomes(p).map((o, r) => (o === null ? null :
        el("span", { title: RUNS[r].label }, [outcomeBadge(o), " "])))));
    }
    return el("tr", { class: "problem-row", "data-index": i, onclick: () => { location.hash = `p/${state.run}/${i}`; } },
      cells);
  });
  const pager = el("div", { class: "pager" }, [
    el("button", { id: "page-prev", disabled: state.page === 0, text: "‹ prev",
      onclick: () => { state.page -= 1; document.getElementById("list-page").lastChild.replaceChildren(listBody(run, rows)); } }),
    el("span", { id: "page-info", text: `page ${state.page + 1} of ${pages} · ${rows.length} problems` }),
    el("button", { id: "page-next", disabled: state.page >= pages - 1, text: "next ›",
      onclick: () => { state.page += 1; document.getElementById("list-page").lastChild.replaceChildren(listBody(run, rows)); } }),
  ]);
  return el("div", {}, [pager, table(headers, trs, { id: "problem-table" })]);
}

// --- one problem ----------------------------------------------------------------------------------------------
function problemPage(r, i) {
  const run = RUNS[r];
  const p = run && run.problems[i];
  if (!p) return el("p", { text: `no problem ${i + 1} in run ${r + 1}` });
  state.run = r;
  const vote = state.vote in (p.aggregations || {}) ? state.vote : run.headline_vote;
  const order = state.visible && state.visible.includes(i) ? state.visible : run.problems.map((_, j) => j);
  const at = order.indexOf(i);
  const go = (j) => (j === undefined ? null : el("a", { href: `#p/${r}/${j}` }));
  const prev = go(order[at - 1]), next = go(order[at + 1]);
  if (prev) prev.textContent = "‹ previous";
  if (next) next.textContent = "next ›";
  const outcome = outcomeOf(p, vote);
  const parts = [
    el("div", { class: "crumbs" }, [el("a", { href: "#list", text: "← problems" }), prev, next,
      el("span", { class: "muted", text: `${run.label} · problem ${i + 1} of ${run.problems.length}` })]),
    el("h2", { id: "problem-title" }, [`${p.id} `, outcomeBadge(outcome), el("span", { class: "muted small",
      text: `  by ${vote}` })]),
    problemFacts(p),
    el("h3", { text: "Problem" }), el("pre", { class: "problem-text", text: p.problem ?? "" }),
  ];
  if (p.status && p.status !== "ok") {
    parts.push(el("p", { class: "note", text: `not solved (${p.status}): ${JSON.stringify(p.failure || {})}` }));
    return el("div", { id: "problem-page" }, parts);
  }
  const samplesHolder = el("div", { id: "samples" });
  const sampleView = { cls: null, holder: samplesHolder };
  parts.push(
    section("Answer classes", [classesTable(run, p, sampleView)]),
    section("Votes", votesTable(run, p)));
  parts.push(...blockSections(run, p));
  parts.push(section("Samples", [sampleControls(run, p, sampleView), samplesHolder]));
  drawSamples(run, p, sampleView);
  return el("div", { id: "problem-page" }, parts);
}

function problemFacts(p) {
  const c = p.compute || {};
  const rows = [["reference", p.reference ?? "none"]].concat(
    Object.entries(p.fields || {}).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v]),
    [["samples", (p.samples || []).length], ["generated tokens", c.generated_tokens], ["verifier tokens", c.verifier_tokens],
      ["time (s)", p.time_s]]);
  return el("div", { class: "kv", id: "problem-facts" }, rows.filter(([, v]) => v !== undefined)
    .flatMap(([k, v]) => [el("span", { text: k }), el("span", { class: k === "reference" ? "mono" : "", text: String(v) })]));
}

function classesTable(run, p, view) {
  const kind = run.summary.headline_kind;
  const totals = {};
  for (const s of p.samples || []) if (s.answer_class >= 0 && kind && typeof (s.scores || {})[kind] === "number") {
    totals[s.answer_class] = (totals[s.answer_class] || 0) + s.scores[kind];
  }
  const picks = {};
  for (const [key, v] of Object.entries(p.aggregations || {})) (picks[v.answer_class] = picks[v.answer_class] || []).push(key);
  const hasP = (p.classes || []).some((c) => typeof c.p_correct === "number");
  const headers = ["class", { text: "samples", num: true }, "correct"]
    .concat(kind ? [{ text: `Σ ${kind}`, num: true }] : [], hasP ? [{ text: "p_correct", num: true }] : [], ["picked by"]);
  const rows = (p.classes || []).map((c, k) => el("tr", {}, [
    el("td", {}, el("a", { href: "javascript:void 0", title: "show only this class's samples",
      onclick: () => { view.cls = view.cls === k ? null : k; drawSamples(run, p, view); } }, classBadge(k, c.answer))),
    td(String(c.size), "num"), el("td", { text: c.correct === null || c.correct === undefined ? "–" : c.correct ? "✓" : "✗" }),
  ].concat(kind ? [td(totals[k] ?? 0, "num")] : [], hasP ? [td(c.p_correct, "num")] : [],
    [pickedBy(run, picks[k] || [])])));
  const none = (p.samples || []).filter((s) => s.answer_class < 0).length;
  if (none) rows.push(el("tr", {}, [el("td", {}, classBadge(-1)), td(String(none), "num"), el("td", { text: "–" })]));
  return table(headers, rows, { id: "classes-table" });
}

function pickedBy(run, keys) {
  // The votes that pick a class: the run's main ones by name, the rest counted (all in the tooltip).
  const main = new Set(["majority", run.headline_vote].concat(run.headline_rows));
  const named = keys.filter((k) => main.has(k));
  const rest = keys.length - named.length;
  return el("td", { class: "small mono", title: keys.join("\n"),
    text: named.join(", ") + (rest ? `${named.length ? ", " : ""}+${rest} more` : "") });
}

function votesTable(run, p) {
  const all = Object.entries(p.aggregations || {});
  const main = new Set(["majority", run.headline_vote].concat(run.headline_rows));
  const row = ([key, v]) => el("tr", {}, [el("td", { class: "mono", text: key }), el("td", {}, classBadge(v.answer_class, v.answer)),
    td(v.confidence, "num"), td(v.p_correct, "num"), el("td", { text: v.abstained ? "abstained" : "" }),
    el("td", { text: v.correct === null || v.correct === undefined ? "–" : v.correct ? "✓" : "✗" })]);
  const headers = ["vote", "pick", { text: "confidence", num: true }, { text: "p_correct", num: true }, "", "correct"];
  const rest = all.filter(([k]) => !main.has(k));
  return [table(headers, all.filter(([k]) => main.has(k)).map(row), { id: "votes-table" }),
    rest.length ? el("details", {}, [el("summary", { text: `${rest.length} more votes` }), table(headers, rest.map(row))]) : null];
}

// --- samples ---------------------------------------------------------------------------------------------------
function sampleControls(run, p, view) {
  const kinds = Object.keys(((p.samples || [])[0] || {}).scores || {});
  const sort = el("select", { id: "sample-sort", onchange: (e) => { view.sort = e.target.value; drawSamples(run, p, view); } },
    [el("option", { value: "", text: "sample order" })].concat(kinds.flatMap((k) => [
      el("option", { value: `${k}:desc`, text: `${k} ↓` }), el("option", { value: `${k}:asc`, text: `${k} ↑` })])));
  return el("div", { class: "controls" }, [el("label", { text: "sort" }), sort,
    el("span", { class: "note", text: "click an answer class above to show only its samples; the answer is " +
      "highlighted; step scores colour each line (red low, green high), the first step below 0.5 is marked" })]);
}

function drawSamples(run, p, view) {
  let rows = (p.samples || []).map((s, j) => ({ s, j }));
  if (view.cls !== null) rows = rows.filter(({ s }) => s.answer_class === view.cls);
  if (view.sort) {
    const [kind, dir] = view.sort.split(":");
    const value = ({ s }) => ((s.scores || {})[kind] ?? -1);
    rows.sort((a, b) => (dir === "asc" ? value(a) - value(b) : value(b) - value(a)) || a.j - b.j);
  }
  const waves = waveOf(run, p);
  const note = view.cls === null ? null : el("p", { class: "note" }, [`showing class ${view.cls} only (`,
    el("a", { href: "javascript:void 0", text: "show all", onclick: () => { view.cls = null; drawSamples(run, p, view); } }), ")"]);
  view.holder.replaceChildren(...[note].concat(rows.map(({ s, j }) => sampleCard(s, j, waves))).filter(Boolean));
}

function waveOf(run, p) {
  // Sample index -> the label of the round that drew it, where the run's declared view names the settings saying
  // how many samples a round draws (its `warmup` ones first, then `wave` a round); null otherwise.
  const view = run.view;
  if (!view || view.kind !== "rounds" || !isObject(p[view.key])) return null;
  const count = (name) => { const v = settingOf(run, view, name); return typeof v === "number" && v > 0 ? v : 0; };
  const warm = count(view.warmup), wave = count(view.wave);
  if (!warm && !wave) return null;
  const label = roundLabeller(run, view);
  if (!warm) return (j) => label(Math.floor(j / wave));
  return (j) => label(j < warm ? 0 : Math.floor((j - warm) / (wave || 1)) + 1);
}

function sampleCard(s, j, waves) {
  const outcome = s.correct === true ? "right" : s.correct === false ? "wrong" : "";
  const head = el("div", { class: "sample-head" }, [
    el("strong", { text: `#${j}` }), classBadge(s.answer_class, s.answer),
    el("span", { text: s.correct === true ? "✓ right" : s.correct === false ? "✗ wrong" : "ungraded" }),
    el("span", { class: "muted", text: `${s.num_tokens ?? "?"} tokens · ${s.finish_reason || ""}` +
      (s.answer_status && s.answer_status !== "ok" ? ` · ${s.answer_status}` : "") }),
    waves ? el("span", { class: "muted", text: waves(j) }) : null,
    s.node !== undefined ? el("span", { class: "muted", text: `leaf node ${s.node}` }) : null,
  ].concat(Object.entries(s.scores || {}).map(([k, v]) => el("span", { class: "chip", style: `background:${scoreColour(v)}`,
    title: k, text: `${k} ${fmt(v)}` }))));
  const body = [head, sampleText(s)];
  if (s.verifier_text) {
    body.push(el("details", {}, [el("summary", { text: "what the verifier wrote" }),
      el("pre", { class: "sample-text", text: s.verifier_text })]));
  }
  return el("div", { class: `sample ${outcome}`, "data-sample": j }, body);
}

function stepsOf(s) {
  if (Array.isArray(s.steps)) return s.steps;
  const text = s.text || "";
  const tagged = [...text.matchAll(/<step>([\s\S]*?)<\/step>/g)].map((m) => m[1].trim());
  if (tagged.length) return tagged;
  return text.split("\n").map((line) => line.trim()).filter((line) => line);
}

function sampleText(s) {
  const scores = Array.isArray(s.step_scores) ? s.step_scores : null;
  const steps = stepsOf(s);
  if (!scores || scores.length !== steps.length) {
    const block = el("div", { class: "sample-text" }, highlighted(s.text || "", s.answer));
    if (!scores) return block;
    return el("div", {}, [block, el("div", { class: "note" }, [`step scores (${scores.length}, not one per line): `]
      .concat(scores.map((v) => el("span", { class: "chip", style: `background:${scoreColour(v)}`, text: fmt(v, 2) }))))]);
  }
  const first = scores.findIndex((v) => typeof v === "number" && v < ERROR_SCORE);
  const boxed = steps.map((step) => step.includes("\\boxed{")).lastIndexOf(true);
  const final = boxed >= 0 ? boxed : steps.map((step) => !!s.answer && step.includes(s.answer)).lastIndexOf(true);
  return el("div", { class: "steps" }, steps.map((step, k) => el("div", {
    class: "step" + (k === first ? " first-error" : ""), style: `background:${scoreColour(scores[k])}`,
    title: `step ${k + 1}: ${fmt(scores[k])}` }, [
    el("span", { class: "sc", text: fmt(scores[k], 2) }),
    el("span", { class: "st sample-text" }, k === final ? highlighted(step, s.answer) : [step]),
    k === first ? el("span", { class: "flag", text: "← first error" }) : null])));
}

function highlighted(text, answer) {
  // The final answer marked: the last \boxed{...} when there is one, else the last occurrence of the answer.
  let start = text.lastIndexOf("\\boxed{"), end = -1;
  if (start >= 0) {
    let depth = 0;
    for (let k = start + 6; k < text.length; k++) {
      if (text[k] === "{") depth++;
      else if (text[k] === "}" && --depth === 0) { end = k + 1; break; }
    }
  }
  if (end < 0 && answer) { start = text.lastIndexOf(answer); end = start >= 0 ? start + answer.length : -1; }
  if (start < 0 || end < 0) return [text];
  return [text.slice(0, start), el("mark", { class: "answer", text: text.slice(start, end) }), text.slice(end)];
}

// --- a strategy's own block, drawn from what the strategy declares (run.view), never from its name --------------
function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function blockSections(run, p) {
  // One section per block the run's records hold (run.blocks): the declared one as its kind says ("rounds": the
  // stop signal after each round; "tree": the tree), any other (an undeclared strategy's) as plain keys and values.
  const view = run.view;
  return (run.blocks || []).filter((key) => isObject(p[key])).map((key) => {
    const block = p[key];
    const kind = view && key === view.key && (view.kind === "rounds" || view.kind === "tree") ? view.kind : "plain";
    const attrs = { class: "block-section", "data-key": key, "data-kind": kind };
    if (kind === "rounds") return section(view.title, roundsSection(run, view, block), { id: "rounds-section", ...attrs });
    if (kind === "tree") return section(view.title, treeSection(p, block), { id: "tree-section", ...attrs });
    return section(key, [plainBlock(block)], attrs);
  });
}

function factText(v) {
  if (isObject(v) || Array.isArray(v)) {
    const text = JSON.stringify(v);
    return text.length > 400 ? text.slice(0, 400) + "…" : text;
  }
  return typeof v !== "number" ? String(v) : Number.isInteger(v) ? fmtBig(v) : fmt(v);
}

function plainBlock(block) {
  return el("div", { class: "kv block-plain" }, Object.entries(block).flatMap(([k, v]) => [el("span", { text: k }),
    el("span", { class: typeof v === "object" && v !== null ? "mono" : "", text: factText(v) })]));
}

function settingOf(run, view, name) {
  // The run block's setting `name` of the view's block (run.run[view.key][name]); undefined when not named or absent.
  const settings = (run.run || {})[view.key];
  return name && isObject(settings) ? settings[name] : undefined;
}

function roundLabeller(run, view) {
  // Round k (from 0) -> its label: `first_round` for the first where the view declares one; else `round_label` with
  // {i} counting from 1 (from the round after first_round) and {budget} the run block's budgets[i - 1].
  const budgets = settingOf(run, view, "budgets");
  const template = view.round_label || "round {i}";
  return (k) => {
    if (view.first_round && k === 0) return view.first_round;
    const i = view.first_round ? k : k + 1;
    return template.replace(/\{(i|budget)\}/g, (_, name) => (name === "i" ? String(i)
      : String((Array.isArray(budgets) ? budgets[i - 1] : undefined) ?? "?")));
  };
}

function roundsSection(run, view, block) {
  // The block's facts, its stop signal after each round (`confidences`) against the stop threshold (the block's own
  // value of the declared setting, else the run block's), and one row per round with its declared label.
  const own = view.threshold ? block[view.threshold] : undefined;
  const threshold = typeof own === "number" ? own : settingOf(run, view, view.threshold);
  const rows = Object.entries(block).filter(([k, v]) => k !== "confidences" && typeof v !== "object");
  const facts = el("div", { class: "kv", id: "block-facts" }, rows.flatMap(([k, v]) => [el("span", { text: k }),
    el("span", { text: factText(v) })]));
  const confidences = Array.isArray(block.confidences) ? block.confidences : [];
  const label = roundLabeller(run, view);
  const signal = view.signal || "confidence";
  const points = confidences.map((c, i) => ({ x: i + 1, y: c, se: 0 })).filter((pt) => typeof pt.y === "number");
  const plot = linePlot({ series: [{ label: signal, colour: PALETTE[0], dash: "", points }], xLabel: "round",
    yLabel: signal, logX: false, yMin: 0, yMax: 1,
    title: `${signal} after each round; stopped: ${block.stopped_because ?? "–"}` });
  if (typeof threshold === "number") {
    const svgRoot = plot.querySelector("svg");
    const H = 330, T = 24, B = 42, L = 52, W = 560, R = 14;
    const yy = T + (1 - threshold) * (H - T - B);
    svgRoot.append(svg("line", { x1: L, x2: W - R, y1: yy, y2: yy, stroke: "#cf222e", "stroke-dasharray": "5 4",
      class: "threshold-line" }));
    svgRoot.append(svg("text", { x: W - R - 4, y: yy - 4, "font-size": 11, "text-anchor": "end", fill: "#cf222e",
      text: `stop at ${threshold}` }));
  }
  const list = table(["round", { text: signal, num: true }], confidences.map((c, i) => el("tr", {}, [
    el("td", { text: label(i) }), td(c, "num")])), { id: "rounds-table" });
  const warm = settingOf(run, view, view.warmup), wave = settingOf(run, view, view.wave);
  const note = [warm ? `${label(0)}: ${warm} samples` : "", wave ? `${wave} samples per wave` : ""]
    .filter(Boolean).join("; ");
  return [facts, el("div", { class: "grid2" }, [plot, list]), el("p", { class: "note", text: note })];
}

function treeSection(p, tree) {
  const nodes = tree.nodes || [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const children = new Map();
  for (const n of nodes) if (n.parent !== null && n.parent !== undefined) {
    if (!children.has(n.parent)) children.set(n.parent, []);
    children.get(n.parent).push(n.id);
  }
  const leafClass = new Map((p.samples || []).filter((s) => s.node !== undefined).map((s) => [s.node, s.answer_class]));
  const leaves = new Set(leafClass.keys());
  const kept = nodes.filter((n) => n.kept).length, finished = nodes.filter((n) => n.finished).length;
  const rounds = tree.rounds ?? Math.max(0, ...nodes.map((n) => n.round + 1));
  const pruned = nodes.filter((n) => n.parent !== null && n.parent !== undefined && !n.kept && !n.finished).length;
  const summary = el("p", { id: "tree-summary", "data-nodes": nodes.length, "data-rounds": rounds,
    text: `${nodes.length} nodes over ${rounds} rounds: ${kept} kept, ${pruned} pruned, ${finished} finished, ` +
      `${leaves.size} distinct leaves returned as samples` });
  // Layout: depth across, leaves in depth-first order down; a parent sits at the mean of its children.
  const y = new Map();
  let next = 0;
  const depth = new Map();
  const roots = nodes.filter((n) => n.parent === null || n.parent === undefined || !byId.has(n.parent));
  const place = (id, d) => {
    depth.set(id, d);
    const kids = children.get(id) || [];
    if (!kids.length) { y.set(id, next++); return; }
    kids.forEach((k) => place(k, d + 1));
    y.set(id, kids.reduce((a, k) => a + y.get(k), 0) / kids.length);
  };
  // Iterative guard against very deep trees is unnecessary: depth is at most the number of steps.
  roots.forEach((n) => place(n.id, 0));
  const maxDepth = Math.max(1, ...depth.values());
  const DX = Math.max(60, Math.min(140, 900 / maxDepth)), DY = 14, PAD = 20;
  const W = PAD * 2 + maxDepth * DX + 40, H = PAD * 2 + Math.max(1, next) * DY;
  const X = (id) => PAD + depth.get(id) * DX, Y = (id) => PAD + y.get(id) * DY;
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "tree-svg" });
  const detail = el("div", { id: "node-detail", class: "note", text: "click a node to read its step" });
  for (const n of nodes) if (byId.has(n.parent)) {
    root.append(svg("line", { x1: X(n.parent), y1: Y(n.parent), x2: X(n.id), y2: Y(n.id),
      stroke: n.kept || n.finished ? "#57606a" : "#d0d7de", "stroke-width": n.kept ? 1.5 : 1 }));
  }
  for (const n of nodes) {
    const isRoot = !byId.has(n.parent);
    const fill = isRoot ? "#24292f" : n.kept || n.finished ? scoreColourStrong(n.score) : "#fff";
    const stroke = leaves.has(n.id) ? classColour(leafClass.get(n.id)) : scoreColourStrong(n.score);
    const shape = n.finished
      ? svg("rect", { x: X(n.id) - 5, y: Y(n.id) - 5, width: 10, height: 10, fill, stroke, "stroke-width": leaves.has(n.id) ? 3 : 1.5 })
      : svg("circle", { cx: X(n.id), cy: Y(n.id), r: isRoot ? 6 : 5, fill, stroke, "stroke-width": leaves.has(n.id) ? 3 : 1.5 });
    shape.setAttribute("class", "tree-node");
    shape.setAttribute("data-node", n.id);
    shape.append(svg("title", { text: nodeLabel(n, isRoot) }));
    shape.addEventListener("click", () => { detail.textContent = nodeLabel(n, isRoot); });
    root.append(shape);
  }
  const legend = el("p", { class: "note", text: "left to right: rounds (steps); filled: kept (or drawn in a resampling) " +
    "or finished, hollow: pruned; square: finished; thick ring: a returned sample's leaf, in its answer class's " +
    "colour; fill: the node's score (red low, green high)" });
  return [summary, legend, el("div", { class: "tree-wrap" }, root), detail];
}

function scoreColourStrong(score) {
  if (typeof score !== "number") return "#8c959f";
  const s = Math.max(0, Math.min(1, score));
  return `hsl(${Math.round(120 * s)}, 65%, 42%)`;
}

function nodeLabel(n, isRoot) {
  if (isRoot) return `root (node ${n.id})`;
  const state = n.finished ? `finished (${n.finish_reason || ""})` : n.kept ? "kept" : "pruned";
  const steps = (n.step_scores || []).map((v) => fmt(v, 2)).join(" ");
  return `node ${n.id} · round ${n.round} · group ${n.group} · ${state} · score ${fmt(n.score)} · ` +
    `${n.num_tokens ?? "?"} tokens${n.lookahead ? " · lookahead" : ""}\nstep scores: ${steps}\n${n.step || ""}`;
}

// --- start ------------------------------------------------------------------------------------------------------
function start() {
  document.getElementById("runs-label").textContent = RUNS.map((run) =>
    `${run.label}: ${run.problems.length} problems, ${run.strategy}`).join(" · ");
  window.addEventListener("hashchange", route);
  route();
  document.body.setAttribute("data-ready", "1");
  window.ttsViewReadyMs = performance.now(); // read by scripts/bench_view.py: navigation start to first page drawn
}

window.addEventListener("error", (e) => {
  const banner = document.getElementById("error-banner");
  banner.hidden = false;
  banner.textContent = `page error: ${e.message}`;
});
start();
