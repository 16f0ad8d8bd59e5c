"""Answer-equivalence benchmark: false-negative and false-positive rates of the project's checker
beside plain math-verify and a string match, in one run, as one markdown table per data set.

Data sets: HardVerify-Math dev (the shared data) and the project's own corpus
(eval/equivalence_corpus/, made by scripts/make_equivalence_corpus.py): its held-out split, on which
no rule was tuned, and its dev split. Each row is (question, ground_truth, model_answer,
is_equivalent). A false negative is an equivalent answer judged not equivalent (undecided counts as
not equivalent, as a reward would); a false positive is a wrong answer judged equivalent. Model
answers go through extract_answer only when they contain a \\boxed{...}. Below each table: why the
project's undecided verdicts are undecided.

    python -P -m tts_engine.eval.equivalence_bench                       # HardVerify dev + corpus held-out
    python -P -m tts_engine.eval.equivalence_bench --sets hardverify,heldout,dev
    python -P -m tts_engine.eval.equivalence_bench --judge-model PATH   # adds the hybrid (TinyV) line
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from tts_engine.answers import CheckPool, LLMJudge, extract_answer, grade_answers_report
from tts_engine.answers.extract import BOX_COMMANDS

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hardverify_math_dev.jsonl"
CORPUS = Path(__file__).resolve().parent / "equivalence_corpus"
SETS = {"hardverify": DEFAULT_DATA, "heldout": CORPUS / "heldout.jsonl", "dev": CORPUS / "dev.jsonl"}


@dataclass
class Row:
    question: str
    reference: str
    answer: str
    equivalent: bool
    pair_id: str


@dataclass
class Score:
    method: str
    false_negatives: int
    positives: int
    false_positives: int
    negatives: int
    undecided: int
    seconds: float

    def markdown(self) -> str:
        fnr = 100 * self.false_negatives / max(self.positives, 1)
        fpr = 100 * self.false_positives / max(self.negatives, 1)
        return (
            f"| {self.method} | {fnr:.1f}% ({self.false_negatives}/{self.positives}) | "
            f"{fpr:.1f}% ({self.false_positives}/{self.negatives}) | {self.undecided} | {self.seconds:.1f} |"
        )


def load_rows(path: Path) -> list[Row]:
    if not path.exists():
        raise FileNotFoundError(f"data file {path} not found (pass --data PATH to hardverify_math_dev.jsonl)")
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            rows.append(
                Row(
                    item["question"],
                    _final(item["ground_truth"]),
                    _final(item["model_answer"]),
                    bool(item["is_equivalent"]),
                    str(item.get("pair_id", len(rows))),
                )
            )
    return rows


def _final(text: str) -> str:
    """The boxed answer when there is a box, else the text as it is."""
    if any(command in text for command in BOX_COMMANDS):
        return extract_answer(text) or text
    return text


def score(method: str, rows: Sequence[Row], verdicts: Sequence[bool | None], seconds: float) -> Score:
    positives = [v for r, v in zip(rows, verdicts) if r.equivalent]
    negatives = [v for r, v in zip(rows, verdicts) if not r.equivalent]
    return Score(
        method,
        sum(v is not True for v in positives),
        len(positives),
        sum(v is True for v in negatives),
        len(negatives),
        sum(v is None for v in verdicts),
        seconds,
    )


def timed(fn: Callable[[], list]) -> tuple[list, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def string_match(rows: Sequence[Row]) -> list[bool]:
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    return [squash(r.reference) == squash(r.answer) for r in rows]


def plain_math_verify(rows: Sequence[Row], wrap: Callable[[str], str] = lambda s: s) -> list[bool]:
    """math_verify.verify(parse(reference), parse(answer)) with default settings (main thread)."""
    from math_verify import parse, verify

    return [bool(verify(parse(wrap(r.reference)), parse(wrap(r.answer)))) for r in rows]


def project_verdicts(rows: Sequence[Row], grader: str, judge, pool: CheckPool, timeout: float):
    """The project's GradingReport for the rows (verdicts, reasons, pairs judged)."""
    return grade_answers_report(
        [r.reference for r in rows],
        [r.answer for r in rows],
        questions=[r.question for r in rows],
        grader=grader,
        judge=judge,
        pool=pool,
        timeout=timeout,
    )


def make_judge(model_path: str, max_new_tokens: int) -> LLMJudge:
    from tts_engine.backends.hf import HFBackend

    return LLMJudge(HFBackend(model_path), max_new_tokens=max_new_tokens)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="one JSONL file to score instead of --sets")
    ap.add_argument(
        "--sets",
        default="hardverify,heldout",
        help=f"comma-separated data sets among {', '.join(SETS)} (default: hardverify,heldout)",
    )
    ap.add_argument(
        "--judge-model", help="local Hugging Face checkpoint of a judge (TinyV-style); adds hybrid and judge lines"
    )
    ap.add_argument("--judge-max-new-tokens", type=int, default=8)
    ap.add_argument("--processes", type=int, default=2, help="check worker processes")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per check")
    ap.add_argument("--no-baselines", action="store_true", help="only the project's checker (faster)")
    ap.add_argument("--show-errors", action="store_true", help="list the items the project's rule checker gets wrong")
    args = ap.parse_args(argv)
    unknown = [name for name in args.sets.split(",") if name not in SETS]
    if unknown and args.data is None:
        ap.error(f"--sets must name data sets among {', '.join(SETS)}, got {', '.join(unknown)}")
    return args


def bench(path: Path, args: argparse.Namespace, pool: CheckPool, judge) -> list[Score]:
    """Score every method on one data set and print its table."""
    rows = load_rows(path)
    scores = []
    if not args.no_baselines:
        verdicts, seconds = timed(lambda: string_match(rows))
        scores.append(score("string match (whitespace-insensitive)", rows, verdicts, seconds))
        verdicts, seconds = timed(lambda: plain_math_verify(rows))
        scores.append(score("math-verify parse + verify (defaults)", rows, verdicts, seconds))
        verdicts, seconds = timed(lambda: plain_math_verify(rows, lambda s: "\\boxed{" + s + "}"))
        scores.append(score("math-verify, both wrapped in \\boxed{}", rows, verdicts, seconds))
    rule, seconds = timed(lambda: project_verdicts(rows, "rule", None, pool, args.timeout))
    scores.append(score("tts-engine rule (normalisation + math-verify)", rows, rule.verdicts, seconds))
    judged = {}
    if judge is not None:
        for grader in ("hybrid", "judge"):
            report, seconds = timed(lambda: project_verdicts(rows, grader, judge, pool, args.timeout))
            name = "hybrid (rule + judge)" if grader == "hybrid" else "judge only"
            scores.append(score(f"tts-engine {name}, {Path(args.judge_model).name}", rows, report.verdicts, seconds))
            judged[grader] = report.judged
    print(f"\n{path.name}: {len(rows)} rows, {scores[0].positives} equivalent, {scores[0].negatives} not\n")
    print("| method | false negatives | false positives | undecided | seconds |")
    print("|---|---:|---:|---:|---:|")
    for s in scores:
        print(s.markdown())
    reasons = Counter(reason for reason in rule.reasons if reason is not None)
    print(
        f"\nundecided (rule): {sum(reasons.values())}/{len(rows)}"
        + "".join(f"; {reason}: {count}" for reason, count in reasons.most_common())
    )
    for grader, count in judged.items():
        print(f"pairs sent to the judge ({grader}): {count}/{len(rows)}")
    if args.show_errors:
        print()
        for row, verdict, reason in zip(rows, rule.verdicts, rule.reasons):
            if (verdict is True) != row.equivalent:
                print(
                    f"- {row.pair_id}: {row.reference!r} vs {row.answer!r} -> {verdict}"
                    + (f" ({reason})" if reason else "")
                )
    return scores


def main(argv: Sequence[str] | None = None) -> list[Score]:
    args = parse_args(argv)
    paths = [args.data] if args.data is not None else [SETS[name] for name in args.sets.split(",")]
    judge = make_judge(args.judge_model, args.judge_max_new_tokens) if args.judge_model else None
    scores = []
    with CheckPool(processes=args.processes) as pool:
        for path in paths:
            scores += bench(path, args, pool, judge)
    return scores


if __name__ == "__main__":
    main()
