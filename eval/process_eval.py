"""Step-level evaluation of process verifiers, as ProcessBench scores it, and the Tango comparison table.

First-error detection (ProcessBench, arXiv 2412.06559): a verifier names the first wrong step of a solution,
or says there is none. Accuracy on erroneous solutions = the index it names is the labelled one; accuracy on
correct solutions = it says "no error"; F1 = their harmonic mean.

Labels: on the arithmetic task every step can be checked by recomputation (`arith_first_error`); on
ProcessBench (`load_processbench`) they come with the data (label -1 = no error).

The table: `python -P -m tts_engine.eval.process_eval --generator G --verifier name=DIR ... --out DIR` samples N
solutions per bundled problem from each generator, scores those of the first with each verifier, and writes
metrics.json and table.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from tts_engine.answers import extract_answer
from tts_engine.answers.rewards import answer_reward, solution_reward
from tts_engine.pipeline.aggregate import majority_vote, weighted_vote
from tts_engine.tasks.arith.chain import StepLine, apply, is_task_problem, problem_steps, read_step_line
from tts_engine.tasks.arith.recompute import SCORE_KIND
from tts_engine.verifiers.base import score_each_text_once
from tts_engine.verifiers.process import PROCESS_HEADLINES
from tts_engine.verifiers.steps import reduce_steps, split_steps

from .verifier_metrics import auroc, balanced_accuracy

NO_ERROR = -1


# --- labels ------------------------------------------------------------------------------------------------
def parse_arith_problem(problem: str) -> tuple[int, list[tuple[str, int]]] | None:
    """(start, [(op, operand), ...]) of an arithmetic-task problem; None if it is not one."""
    return problem_steps(problem) if is_task_problem(problem) else None


def arith_first_error(problem: str, solution: str) -> int | None:
    """0-based index of the first wrong step of a task solution, NO_ERROR (-1) if none, None if incomplete.

    Step k < L (L operations) is right when it reads "a op b=c" with a the true running value, (op, b) the
    problem's k-th operation and c = a op b; step L is right when it is \\boxed{true answer}; any further step
    is wrong. A solution whose steps are all right but too few is incomplete (None): it has no first error.
    """
    parsed = parse_arith_problem(problem)
    if parsed is None:
        raise ValueError(f"not an arithmetic-task problem: {problem[:60]!r}")
    value, operations = parsed
    steps = split_steps(solution)
    for k, step in enumerate(steps):
        if k < len(operations):
            op, operand = operations[k]
            expected = apply(value, op, operand)
            if read_step_line(step) != StepLine(value, op, operand, expected):
                return k
            value = expected
        elif k == len(operations):
            if not step.strip().startswith("\\boxed") or extract_answer(step) != str(value):
                return k
        else:
            return k
    return NO_ERROR if len(steps) == len(operations) + 1 else None


# --- metrics -----------------------------------------------------------------------------------------------
def first_error_metrics(predicted: Sequence[int | None], labels: Sequence[int]) -> dict[str, Any]:
    """ProcessBench metrics: accuracy on erroneous / correct solutions and their harmonic mean (F1).

    A prediction of None (nothing readable, or not one verdict per step) counts as wrong.
    """
    if len(predicted) != len(labels):
        raise ValueError(f"predicted and labels must have the same length, got {len(predicted)} and {len(labels)}")
    err = [p == y for p, y in zip(predicted, labels) if y != NO_ERROR]
    ok = [p == NO_ERROR for p, y in zip(predicted, labels) if y == NO_ERROR]
    acc_error = sum(err) / len(err) if err else None
    acc_correct = sum(ok) / len(ok) if ok else None
    f1 = None
    if acc_error is not None and acc_correct is not None:
        f1 = 0.0 if acc_error + acc_correct == 0 else 2 * acc_error * acc_correct / (acc_error + acc_correct)
    return {
        "acc_erroneous": acc_error,
        "acc_correct": acc_correct,
        "f1": f1,
        "num_erroneous": len(err),
        "num_correct": len(ok),
        "unreadable": sum(p is None for p in predicted),
    }


# --- ProcessBench ------------------------------------------------------------------------------------------
def load_processbench(path: str | Path) -> list[dict[str, Any]]:
    """Records of a ProcessBench split (JSON list): problem, steps (list of str), label (int), final_answer_correct."""
    records = json.loads(Path(path).read_text())
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    out = []
    for i, r in enumerate(records):
        missing = {"problem", "steps", "label"} - set(r)
        if missing:
            raise ValueError(f"{path}: record {i} lacks {sorted(missing)}")
        out.append(
            {
                "id": r.get("id", str(i)),
                "problem": r["problem"],
                "steps": list(r["steps"]),
                "label": int(r["label"]),
                "final_answer_correct": str(r.get("final_answer_correct")) == "True",
            }
        )
    return out


def tagged_solution(steps: Sequence[str]) -> str:
    """Steps joined in <step> tags, so split_steps recovers them even when a step spans lines."""
    return "\n".join(f"<step>{s}</step>" for s in steps)


def score_processbench(
    verifier, records: Sequence[dict], prompt_for=lambda problem: problem + "\n", batch_size: int = 64
) -> dict[str, Any]:
    """First-error metrics of a process verifier (its ProcessSampleScore.first_error) on ProcessBench records."""
    predicted: list[int | None] = []
    for start in range(0, len(records), batch_size):
        part = records[start : start + batch_size]
        scored = verifier.score(
            [r["problem"] for r in part],
            [prompt_for(r["problem"]) for r in part],
            [[tagged_solution(r["steps"])] for r in part],
        )
        predicted.extend(getattr(row[0], "first_error", None) for row in scored)
    return first_error_metrics(predicted, [r["label"] for r in records])


# --- the table on the bundled task ---------------------------------------------------------------------------
def sample_solutions(generator_dir: str, problems: list[dict], n: int, max_new_tokens: int = 96, seed: int = 0):
    """N solutions per problem from a checkpoint (hf backend, temperature 1): prompts and texts `# (P, N)`."""
    from tts_engine.backends.hf import HFBackend
    from tts_engine.inputs.prompts import PromptConfig, build_prompt
    from tts_engine.params import SamplingParams

    backend = HFBackend(generator_dir, device="cpu", max_batch_rows=512)
    config = PromptConfig.load(generator_dir)
    prompts = [build_prompt(config, p["problem"], backend) for p in problems]
    samples = backend.generate(
        prompts, SamplingParams(n=n, temperature=1.0, max_new_tokens=max_new_tokens, seed=seed, stop=list(config.stop))
    )
    return prompts, [[s.text for s in row] for row in samples]


def read_samples(path: str | Path, problems: int) -> tuple[list[str], list[list[str]]]:
    """Prompts and texts `# (P, N)` of a samples file (`samples_NAME.json` of an earlier table, or any JSON object
    {"prompts": [P], "texts": [P][N]}) written for `problems` problems."""
    try:
        data = json.loads(Path(path).read_text())
        prompts, texts = data["prompts"], data["texts"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise SystemExit(f"{path}: not a samples file of process_eval ({err})") from None
    if len(prompts) != problems or len(texts) != problems:
        raise SystemExit(f"{path}: samples of {len(texts)} problems, the problem set has {problems}")
    return prompts, texts


def correctness(problems: list[dict], texts: list[list[str]]) -> list[list[bool]]:
    """Rule-based correctness of every sample (the training reward, answers.rewards)."""
    return [[solution_reward(p["answer"], t) > 0.5 for t in row] for p, row in zip(problems, texts)]


def _vote_right(problem: dict, vote) -> bool:
    return vote.answer is not None and answer_reward(problem["answer"], vote.answer) > 0.5


def generator_metrics(problems, texts) -> dict[str, float]:
    """pass@1 (mean sample accuracy) and majority-vote accuracy over the N samples (tts_engine.pipeline.aggregate)."""
    right = correctness(problems, texts)
    maj = [_vote_right(p, majority_vote([extract_answer(t) for t in row])) for p, row in zip(problems, texts)]
    flat = [x for row in right for x in row]
    return {"pass_at_1": sum(flat) / len(flat), "majority": sum(maj) / len(maj)}


def weighted_vote_accuracy(problems, texts, scores: list[list[float]]) -> float:
    """Accuracy of weighted voting (tts_engine.pipeline.aggregate: samples without an answer vote for nothing)."""
    right = [
        _vote_right(p, weighted_vote([extract_answer(t) for t in row], srow))
        for p, row, srow in zip(problems, texts, scores)
    ]
    return sum(right) / len(problems)


def score_samples(verifier, problems, prompts, texts, batch_problems: int = 16) -> list[list]:
    """The verifier's score of every sample `# (P, N)`, scored `batch_problems` problems at a time."""
    scored = []
    for start in range(0, len(problems), batch_problems):
        sl = slice(start, start + batch_problems)
        scored.extend(score_each_text_once(verifier, [p["problem"] for p in problems[sl]], prompts[sl], texts[sl]))
    return scored


def _outcome_metrics(verifier, problems, prompts, texts, outcome_kind: str, batch_problems: int):
    """Scores of every sample (batched by problem) and the metrics every verifier kind shares."""
    scored = score_samples(verifier, problems, prompts, texts, batch_problems)
    right = [x for row in correctness(problems, texts) for x in row]
    flat = [s for row in scored for s in row]
    metrics = {
        "outcome_bal_acc": balanced_accuracy([s.scores[outcome_kind] for s in flat], right),
        "outcome_auroc": {kind: auroc([s.scores[kind] for s in flat], right) for kind in flat[0].scores},
        "verifier_tokens_per_sample": sum(s.tokens for s in flat) / max(1, len(flat)),
        "weighted": {
            kind: weighted_vote_accuracy(problems, texts, [[s.scores[kind] for s in row] for row in scored])
            for kind in flat[0].scores
        },
    }
    return metrics, flat


class RecomputeAsProcess:
    """A recompute verifier (`tts_engine.tasks.arith.recompute`) scored as a process verifier: its verdict
    (`process_final`) is P(transcript), its step scores P(each line), aggregated as the process verifier's are."""

    def __init__(self, verifier):
        self.verifier = verifier
        self.name = verifier.name

    def score(self, questions, prompts, outputs):
        rows = self.verifier.score(questions, prompts, outputs)
        for row in rows:
            for score in row:
                whole = score.scores[SCORE_KIND]
                steps = score.step_scores or [whole]
                score.scores = {"process_final": whole, "process": whole}
                score.scores.update({f"process_{how}": reduce_steps(steps, how) for how in PROCESS_HEADLINES[1:]})
        return rows


def load_process_verifier(path: str, max_new_tokens: int | None = None):
    """A checkpoint's process verifier on the hf backend: its recompute check scored as a process verifier when the
    checkpoint serves that form (`verify_form: recompute`), else its written step verdicts."""
    from tts_engine.backends.hf import HFBackend
    from tts_engine.inputs.prompts import PromptConfig
    from tts_engine.tasks.arith.recompute import RecomputeVerifier
    from tts_engine.verifiers.process import ProcessVerifier

    backend, config = HFBackend(path, device="cpu", max_batch_rows=512), PromptConfig.load(path)
    if config.verify_form == "recompute":
        return RecomputeAsProcess(RecomputeVerifier(backend, config))
    return ProcessVerifier(backend, config, max_new_tokens=max_new_tokens)


def verifier_metrics(verifier, problems, prompts, texts, batch_problems: int = 16) -> dict[str, Any]:
    """Outcome balanced accuracy of process_final, step-level first-error metrics, weighted voting per score kind."""
    out, flat = _outcome_metrics(verifier, problems, prompts, texts, "process_final", batch_problems)
    labels = [arith_first_error(p["problem"], t) for p, row in zip(problems, texts) for t in row]
    complete = [k for k, y in enumerate(labels) if y is not None]
    out["step"] = first_error_metrics([flat[k].first_error for k in complete], [labels[k] for k in complete])
    out["incomplete_solutions"] = len(labels) - len(complete)
    out["status"] = {st: sum(s.status == st for s in flat) for st in sorted({s.status for s in flat})}
    return out


def unified_metrics(verifier, problems, prompts, texts, batch_problems: int = 16) -> dict[str, Any]:
    """A single-token (Yes/No) verifier on the same samples: outcome balanced accuracy and weighted voting."""
    return _outcome_metrics(verifier, problems, prompts, texts, "verifier_yes_no", batch_problems)[0]


def run_table(
    generators: dict[str, str],
    verifiers: dict[str, str],
    out_dir: str,
    n: int = 16,
    limit_per_level: int | None = None,
    seed: int = 0,
    verifier_max_new_tokens: int | None = None,
    unified: dict[str, str] | None = None,
    problems_path: str | None = None,
    max_new_tokens: int = 96,
    sample_files: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Generator metrics of every sample file and generator; verifier metrics of every verifier on the first sample
    file's samples, else the first generator's. Problems: the bundled set, or the task's problems at
    `problems_path` (from `tts train make-problems`)."""
    from tts_engine.backends.hf import HFBackend
    from tts_engine.inputs.prompts import PromptConfig

    problems = task_problems(problems_path, limit_per_level)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"n": n, "problems": len(problems), "generators": {}, "verifiers": {}, "unified": {}}
    result["problems_file"] = problems_path or "bundled"
    first = None
    sampled = {name: lambda path=path: read_samples(path, len(problems)) for name, path in (sample_files or {}).items()}
    sampled.update(
        {
            name: lambda path=path: sample_solutions(path, problems, n, max_new_tokens, seed=seed)
            for name, path in generators.items()
        }
    )
    for name, draw in sampled.items():
        prompts, texts = draw()
        (out / f"samples_{name}.json").write_text(json.dumps({"prompts": prompts, "texts": texts}))
        result["generators"][name] = generator_metrics(problems, texts)
        first = first or (name, prompts, texts)
        _write(out, result)
    _, prompts, texts = first
    for name, path in verifiers.items():
        verifier = load_process_verifier(path, verifier_max_new_tokens)
        result["verifiers"][name] = verifier_metrics(verifier, problems, prompts, texts)
        _write(out, result)
    for name, path in (unified or {}).items():
        from tts_engine.verifiers import UnifiedVerifier

        verifier = UnifiedVerifier(HFBackend(path, device="cpu", max_batch_rows=512), PromptConfig.load(path))
        result["unified"][name] = unified_metrics(verifier, problems, prompts, texts)
        _write(out, result)
    return result


def task_problems(path: str | None = None, limit_per_level: int | None = None) -> list[dict]:
    """The task's problems at `path` (default: the bundled set) as records, optionally the first
    `limit_per_level` of each level."""
    from tts_engine.tasks.arith.generator import bundled_problems_path, first_per_level, load_problems

    records = load_problems(path or bundled_problems_path())
    return records if limit_per_level is None else first_per_level(records, limit_per_level)


def _fmt(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def markdown_table(result: dict[str, Any]) -> str:
    lines = [
        f"N = {result['n']} samples per problem, {result['problems']} problems "
        f"({result.get('problems_file', 'bundled')}).",
        "",
        "| generator | pass@1 | majority@N |",
        "|---|---|---|",
    ]
    for name, m in result["generators"].items():
        lines.append(f"| {name} | {_fmt(m['pass_at_1'])} | {_fmt(m['majority'])} |")
    lines += [
        "",
        "| verifier | outcome bal. acc | outcome AUROC | step acc (erroneous) | step acc (correct) | step F1 | "
        "weighted@N final | weighted@N min | weighted@N prod | weighted@N mean | weighted@N last |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, m in result["verifiers"].items():
        w, s = m["weighted"], m["step"]
        lines.append(
            f"| {name} | {_fmt(m['outcome_bal_acc'])} | {_fmt(m['outcome_auroc']['process_final'])} | "
            f"{_fmt(s['acc_erroneous'])} | {_fmt(s['acc_correct'])} | "
            f"{_fmt(s['f1'])} | "
            + " | ".join(_fmt(w.get(f"process_{k}")) for k in ("final", "min", "prod", "mean", "last"))
            + " |"
        )
    for name, m in result.get("unified", {}).items():
        lines.append(
            f"| {name} (Yes/No) | {_fmt(m['outcome_bal_acc'])} | {_fmt(m['outcome_auroc']['verifier_yes_no'])} "
            "| - | - | - | "
            f"{_fmt(m['weighted'].get('verifier_yes_no'))} | - | - | - | - |"
        )
    return "\n".join(lines) + "\n"


def _write(out: Path, result: dict[str, Any]) -> None:
    (out / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "table.md").write_text(markdown_table(result))


def _named(values: Sequence[str], flag: str) -> dict[str, str]:
    out = {}
    for v in values:
        if "=" not in v:
            raise SystemExit(f"{flag} takes NAME=PATH, got {v!r}")
        name, path = v.split("=", 1)
        out[name] = path
    return out


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Generator and process-verifier metrics on the bundled task.")
    parser.add_argument(
        "--generator", action="append", default=[], help="NAME=DIR (the first one's samples are verified)"
    )
    parser.add_argument(
        "--samples",
        action="append",
        default=[],
        help="NAME=FILE of samples written before (samples_NAME.json of a table); verified before any generator's",
    )
    parser.add_argument("--verifier", action="append", default=[], help="NAME=DIR of a process verifier")
    parser.add_argument("--unified", action="append", default=[], help="NAME=DIR of a Yes/No verifier, for comparison")
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--per-level", type=int, default=None, help="Only the first K problems of each level.")
    parser.add_argument("--problems", default=None, help="The task's problems (JSONL; default: the bundled set).")
    parser.add_argument("--max-new-tokens", type=int, default=96, help="Longest sampled solution.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--verifier-max-new-tokens", type=int, default=None, help="Longest verification (default: each verifier's own)."
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    result = run_table(
        _named(args.generator, "--generator"),
        _named(args.verifier, "--verifier"),
        args.out,
        n=args.n,
        limit_per_level=args.per_level,
        unified=_named(args.unified, "--unified"),
        verifier_max_new_tokens=args.verifier_max_new_tokens,
        problems_path=args.problems,
        max_new_tokens=args.max_new_tokens,
        sample_files=_named(args.samples, "--samples"),
    )
    print(markdown_table(result))


if __name__ == "__main__":
    main()
