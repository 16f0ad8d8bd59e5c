"""Run the sections, each in its own process under its own time limit, and write one JSON report.

    PYTHONPATH=scripts python -P -m device_check [--dry] [--out PATH] [--budget SECONDS] [--only SECTION ...]

The report is rewritten after every section, so a run killed midway still leaves the sections it finished.
The sections' own output (pytest, tts solve, progress) goes to a log beside the report; the terminal gets
one line per section and, last, the table of every figure beside its baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .plan import DRY_PLAN, GPU_PLAN, SECTIONS, Plan
from .recorder import Recorder

SCRIPTS = Path(__file__).resolve().parents[1]
NO_DEVICE_EXIT = 3
"""Exit status of a section process that found no CUDA device in a GPU run."""
KILL_GRACE_S = 10.0
"""A section process is killed this long after its deadline (sections stop cooperatively at the deadline)."""


def section_function(name: str):
    """The function that measures section `name`: (recorder, plan, context) -> None."""
    from . import kernel_sections, serving_sections, train_sections

    functions = {
        "machine": kernel_sections.machine,
        "score": kernel_sections.score,
        "vote": kernel_sections.vote,
        "kernel_tests": kernel_sections.kernel_tests,
        "generate": serving_sections.generate,
        "solve": serving_sections.solve,
        "e2e": serving_sections.e2e,
        "train": train_sections.train,
        "token_scores": kernel_sections.token_scores,
    }
    return functions[name]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -P -m device_check", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--dry", action="store_true", help="CPU, tiny shapes, Triton's interpreter (the test suite's run)"
    )
    parser.add_argument(
        "--out", help="JSON report (default: $OUT/device_check.json when OUT is set, else runs/device_check[_dry].json)"
    )
    parser.add_argument("--budget", type=float, help="total seconds (default: 480 on a GPU, 240 dry)")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only this section (repeatable)")
    parser.add_argument(
        "--keep",
        metavar="REPORT",
        help="start from an earlier report's sections (e.g. docs/gpu_report.json, which travels with the tree): the "
        "sections this run runs replace theirs, the others are kept as they were",
    )
    parser.add_argument("--markdown", metavar="REPORT", help="print a report's figures as Markdown tables and exit")
    parser.add_argument("--section", choices=SECTIONS, help=argparse.SUPPRESS)  # a section's own process
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--context", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.budget is not None and args.budget <= 0:
        parser.error(f"--budget must be > 0 seconds, got {args.budget}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    plan = DRY_PLAN if args.dry else GPU_PLAN
    if args.section:
        return run_section_here(
            args.section,
            plan,
            Path(args.part),
            args.deadline,
            json.loads(Path(args.context).read_text()) if args.context else {},
        )
    if args.markdown:
        print(format_markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    out = Path(args.out) if args.out else default_out(args.dry)
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = None
    if args.keep and Path(args.keep).is_file():
        kept = json.loads(Path(args.keep).read_text())
        if kept.get("mode") != ("dry" if args.dry else "gpu"):
            raise SystemExit(
                f"--keep {args.keep}: a {kept.get('mode')} report cannot be kept in a {plan_mode(plan)} run"
            )
    report = run_all(plan, out, args.budget or plan.total_budget_s, args.only or SECTIONS, kept)
    print(format_report(report))
    print(f"report: {out}\nlog: {out.with_suffix('.log')}")
    return 0 if all(s["status"] == "ok" for s in report["sections"].values()) else 1


def default_out(dry: bool) -> Path:
    """$OUT/device_check[_dry].json under the device tool (it brings $OUT back: commit a GPU report as
    docs/gpu_report.json); elsewhere docs/gpu_report.json for a GPU run, runs/device_check_dry.json for a dry one."""
    name = "device_check_dry.json" if dry else "device_check.json"
    if os.environ.get("OUT"):
        return Path(os.environ["OUT"]) / name
    return Path("runs") / name if dry else Path("docs") / "gpu_report.json"


def plan_mode(plan: Plan) -> str:
    return "dry" if plan.dry else "gpu"


def run_section_here(name: str, plan: Plan, part: Path, deadline: float, context: dict) -> int:
    """The section's own process: measure, recording into `part` as it goes."""
    from .kernel_sections import NoDeviceError

    rec = Recorder(part, deadline)
    try:
        section_function(name)(rec, plan, context)
    except NoDeviceError as err:
        rec.error(name, str(err))
        return NO_DEVICE_EXIT
    except Exception as err:  # noqa: BLE001 - recorded; the orchestrator reports it with the section
        rec.error(name, f"{type(err).__name__}: {err}")
        raise
    return 0


def run_all(plan: Plan, out: Path, budget: float, only, kept: dict | None = None) -> dict:
    """Every section in order within `budget` seconds; the report, also written to `out` after each one. The
    sections of `kept` (an earlier report) that this run does not run are carried over, marked `kept: true`."""
    started = time.time()
    report = {
        "device_check": 1,
        "mode": plan_mode(plan),
        "budget_s": budget,
        "elapsed_s": 0.0,
        "sections": {},
    }
    log = out.with_suffix(".log")
    log.write_text("")
    stop_reason = None
    for name in SECTIONS:
        left = started + budget - time.time()
        if name not in only:
            if kept and name in kept.get("sections", {}):
                report["sections"][name] = {**kept["sections"][name], "kept": True}
            continue
        if stop_reason or left < plan.min_start_s:
            reason = stop_reason or f"{left:.0f} s of the {budget:.0f} s budget left"
            report["sections"][name] = skipped(name, reason)
        else:
            report["sections"][name] = run_section(
                name, plan, min(plan.budgets_s[name], left), out, log, report["sections"]
            )
            if report["sections"][name].get("no_device"):
                stop_reason = "no CUDA device"
        section = report["sections"][name]
        print(f"{name}: {section['status']} in {section['elapsed_s']:.1f} s", flush=True)
        report["elapsed_s"] = round(time.time() - started, 1)
        write_json(out, report)
    write_json(out, report)  # with the kept sections that follow the last one run
    return report


def skipped(name: str, reason: str) -> dict:
    return {
        "status": "skipped",
        "elapsed_s": 0.0,
        "limit_s": 0.0,
        "info": {},
        "figures": [],
        "rows": [],
        "errors": [],
        "notes": [f"skipped: {reason}"],
    }


def run_section(name: str, plan: Plan, limit: float, out: Path, log: Path, done: dict) -> dict:
    """One section in its own process group, killed KILL_GRACE_S after its deadline; its recorded results."""
    part, context = out.with_name(f"{out.stem}.{name}.part.json"), out.with_name(f"{out.stem}.context.json")
    write_json(context, done)
    deadline = time.time() + limit
    command = [
        sys.executable,
        "-P",
        "-m",
        "device_check",
        "--section",
        name,
        "--part",
        str(part),
        "--context",
        str(context),
        "--deadline",
        str(deadline),
    ] + (["--dry"] if plan.dry else [])
    started = time.perf_counter()
    with log.open("a") as sink:
        sink.write(f"\n===== {name} (limit {limit:.0f} s)\n")
        sink.flush()
        proc = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env=section_env(plan), start_new_session=True
        )
        try:
            returncode = proc.wait(timeout=limit + KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            returncode = None
    result = (
        json.loads(part.read_text())
        if part.is_file()
        else {"info": {}, "figures": [], "rows": [], "errors": [], "notes": []}
    )
    for path in (part, context):
        path.unlink(missing_ok=True)
    if returncode is None:
        result["errors"].append({"step": name, "error": f"killed after its {limit:.0f} s limit"})
    elif returncode != 0 and not result["errors"]:
        result["errors"].append({"step": name, "error": f"exit status {returncode} (see the log)"})
    status = "timeout" if returncode is None else "failed" if returncode != 0 or result["errors"] else "ok"
    result.update(
        status=status,
        elapsed_s=round(time.perf_counter() - started, 1),
        limit_s=round(limit, 1),
        no_device=returncode == NO_DEVICE_EXIT,
    )
    return result


def section_env(plan: Plan) -> dict:
    """The sections' environment: this package importable; the interpreter on (dry) or off (GPU)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SCRIPTS), env.get("PYTHONPATH")) if p)
    if plan.dry:
        env.update(TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def write_json(path: Path, data) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def format_report(report: dict) -> str:
    """Every figure beside its baseline, section by section, with errors and notes."""
    lines = [f"\ndevice check ({report['mode']}), {report['elapsed_s']:.0f} s of {report['budget_s']:.0f} s"]
    if report["mode"] == "dry":
        lines.append(
            "  dry run: CPU, tiny shapes, Triton's interpreter; its times say nothing of a GPU and its goals do not apply"
        )
    machine = report["sections"].get("machine", {}).get("info", {})
    if machine:
        lines.append(
            "  "
            + ", ".join(
                f"{k} {machine[k]}"
                for k in ("gpu", "torch", "cuda", "triton", "transformers", "date", "commit")
                if machine.get(k)
            )
        )
    for name, section in report["sections"].items():
        kept = ", kept from an earlier run" if section.get("kept") else ""
        lines.append(
            f"== {name}: {section['status']} ({section['elapsed_s']:.0f} s of {section['limit_s']:.0f} s{kept})"
        )
        lines += ["  " + format_figure(f) for f in section["figures"]]
        lines += [
            f"  ERROR [{e['step']}] {e['error'].splitlines()[0] if e['error'] else ''}" for e in section["errors"]
        ]
        lines += [f"  note: {n}" for n in section["notes"]]
    return "\n".join(lines)


def format_markdown(report: dict) -> str:
    """A report's figures as one Markdown table per section (for docs/gpu.md)."""
    lines = []
    for name, section in report["sections"].items():
        kept = " (kept from an earlier run)" if section.get("kept") else ""
        lines += [f"### {name}: {section['status']}{kept}", "", "| figure | value | baseline | ratio | goal | note |"]
        lines.append("|---|---:|---|---:|---|---|")
        for f in section["figures"]:
            baseline = f"{f['baseline']} {fmt(f['baseline_value'])}" if f["baseline"] else ""
            ratio = f"{f['ratio']:.3g}" if f["ratio"] is not None else ""
            goal = f"{f['goal']}: {'met' if f['met'] else 'missed'}" if f["goal"] else ""
            note = (f["note"] or "").replace("|", "/")
            lines.append(f"| {f['name']} | {fmt(f['value'])} {f['unit']} | {baseline} | {ratio} | {goal} | {note} |")
        lines += [
            f"- error [{e['step']}]: {e['error'].splitlines()[0] if e['error'] else ''}" for e in section["errors"]
        ]
        lines += [f"- note: {n}" for n in section["notes"]] + [""]
    return "\n".join(lines)


def format_figure(figure: dict) -> str:
    """`name  value unit | baseline  value  xratio  goal: met`, then the note."""
    text = f"{figure['name']:<50} {fmt(figure['value']):>9} {figure['unit']:<8}"
    if figure["baseline"]:
        ratio = f"x{figure['ratio']:.3g}" if figure["ratio"] is not None else ""
        text += f"| {figure['baseline']:<36} {fmt(figure['baseline_value']):>9} {ratio:>7}"
    if figure["goal"]:
        text += f"  goal {figure['goal']}: {'MET' if figure['met'] else 'MISSED'}"
    if figure["note"]:
        text += f"  ({figure['note']})"
    return text


def fmt(value) -> str:
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"
