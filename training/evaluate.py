"""Evaluate a reasoner-verifier checkpoint on the bundled problem set.

For each problem, N samples at temperature 1 through the HF backend; each sample gets three scores:
the unified verifier's P(Yes) under both normalisations (`yes_no`: P(Yes)/(P(Yes)+P(No)); `vocab`: softmax
over the whole vocabulary) from build_verify_prompt(...), and the free `likelihood` = exp(mean token logprob).
Accuracy of majority / weighted / best-of-N voting at N = 4, 16, 64 averages over disjoint subsets of the
samples (64 samples: 16 subsets of 4, 4 of 16, 1 of 64). Verifier quality: balanced accuracy (threshold 0.5)
and AUROC, pooled over all samples and within each problem (mean over problems with both outcomes).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from tts_engine.backends.hf import HFBackend
from tts_engine.params import SamplingParams
from tts_engine.prompts import build_prompt, build_verify_prompt

from .checkpoint import load_model
from .grading import answer_key, extract, reward

SCORES = ("yes_no", "vocab", "likelihood")


@dataclass
class ScoredSample:
    """One sample of one problem with its answer class, correctness and scores."""

    key: str | None
    correct: bool
    scores: dict[str, float]
    num_tokens: int


def verifier_logprobs(backend: HFBackend, prompts: list[str], yes_id: int, no_id: int, batch: int = 256):
    """log P(Yes), log P(No) `# (B,)` each, under the full-vocabulary softmax at each prompt's next token."""
    weight = backend.model.get_output_embeddings().weight  # (V, D)
    out_yes, out_no = [], []
    with torch.inference_mode():
        for start in range(0, len(prompts), batch):
            hidden = backend.final_hidden_states(prompts[start:start + batch])  # (b, D)
            logp = torch.log_softmax(hidden.float() @ weight.float().T, dim=-1)  # (b, V)
            out_yes.append(logp[:, yes_id])
            out_no.append(logp[:, no_id])
    return torch.cat(out_yes), torch.cat(out_no)


def sample_and_score(model_dir: str | Path, problems: list[dict], n: int = 64, max_new_tokens: int = 96,
                     seed: int = 0, threads: int = 1, progress: bool = True) -> list[list[ScoredSample]]:
    """N scored samples per problem, in problem order."""
    from tqdm import tqdm

    torch.set_num_threads(threads)
    model, tokenizer, prompt_config = load_model(model_dir)
    backend = HFBackend(model, tokenizer, device="cpu", max_batch_rows=512)
    yes_id = tokenizer.convert_tokens_to_ids(prompt_config.yes_token)
    no_id = tokenizer.convert_tokens_to_ids(prompt_config.no_token)
    params = SamplingParams(n=n, temperature=1.0, max_new_tokens=max_new_tokens, seed=seed,
                            stop=list(prompt_config.stop))
    results = []
    chunk = max(1, 512 // n)
    for start in tqdm(range(0, len(problems), chunk), disable=not progress, desc="evaluate"):
        part = problems[start:start + chunk]
        prompts = [build_prompt(prompt_config, p["problem"]) for p in part]
        samples = backend.generate(prompts, params)
        verify = [build_verify_prompt(prompt_config, p["problem"], prompt, s.text)
                  for p, prompt, row in zip(part, prompts, samples) for s in row]
        lp_yes, lp_no = verifier_logprobs(backend, verify, yes_id, no_id)
        k = 0
        for p, row in zip(part, samples):
            scored = []
            for s in row:
                mean_lp = sum(s.logprobs) / max(1, len(s.logprobs))
                scores = {"yes_no": torch.sigmoid(lp_yes[k] - lp_no[k]).item(), "vocab": math.exp(lp_yes[k].item()),
                          "likelihood": math.exp(mean_lp)}
                scored.append(ScoredSample(answer_key(extract(s.text)), reward(s.text, p["answer"]) > 0.5, scores,
                                           s.num_tokens))
                k += 1
            results.append(scored)
    return results


# --- aggregation ------------------------------------------------------------------------------------------
def vote(samples: list[ScoredSample], score: str | None) -> str | None:
    """Winning answer class: by count (score None) or by summed score; ties: larger count, then first seen."""
    totals: dict[str, list] = {}
    for index, s in enumerate(samples):
        if s.key is None:
            continue
        entry = totals.setdefault(s.key, [0.0, 0, index])
        entry[0] += 1.0 if score is None else s.scores[score]
        entry[1] += 1
    if not totals:
        return None
    return max(totals.items(), key=lambda kv: (kv[1][0], kv[1][1], -kv[1][2]))[0]


def best_of_n(samples: list[ScoredSample], score: str) -> str | None:
    """Answer class of the single highest-scored sample (first seen on ties)."""
    best = max(range(len(samples)), key=lambda i: (samples[i].scores[score], -i))
    return samples[best].key


def strategy_accuracy(results: list[list[ScoredSample]], references: list[str], sizes=(4, 16, 64)) -> dict:
    """Accuracy of every strategy at each N, averaged over disjoint subsets of N samples per problem."""
    table: dict[str, dict[int, float]] = {}
    strategies = {"majority": lambda s: vote(s, None), "pass@N (oracle)": None}
    for score in SCORES:
        strategies[f"weighted ({score})"] = lambda s, sc=score: vote(s, sc)
        strategies[f"best-of-N ({score})"] = lambda s, sc=score: best_of_n(s, sc)
    for n in sizes:
        for name, fn in strategies.items():
            hits, count = 0.0, 0
            for samples, ref in zip(results, references):
                for start in range(0, len(samples) - n + 1, n):
                    subset = samples[start:start + n]
                    if fn is None:
                        hits += any(s.correct for s in subset)
                    else:
                        hits += vote_is_correct(fn(subset), subset)
                    count += 1
            table.setdefault(name, {})[n] = hits / count if count else float("nan")
    return table


def vote_is_correct(key: str | None, subset: list[ScoredSample]) -> bool:
    """Whether the chosen class is the correct one (a class is correct iff its samples are)."""
    return key is not None and any(s.key == key and s.correct for s in subset)


# --- verifier metrics -------------------------------------------------------------------------------------
def auroc(scores: list[float], labels: list[bool]) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties count half); None if a class is missing."""
    pos = [s for s, l in zip(scores, labels) if l]
    neg = [s for s, l in zip(scores, labels) if not l]
    if not pos or not neg:
        return None
    ranked = sorted((s, l) for s, l in zip(scores, labels))
    ranks: list[float] = [0.0] * len(ranked)
    i = 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, (_, l) in zip(ranks, ranked) if l)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def balanced_accuracy(scores: list[float], labels: list[bool], threshold: float = 0.5) -> float | None:
    pos = [s > threshold for s, l in zip(scores, labels) if l]
    neg = [s <= threshold for s, l in zip(scores, labels) if not l]
    if not pos or not neg:
        return None
    return 0.5 * (sum(pos) / len(pos) + sum(neg) / len(neg))


def verifier_metrics(results: list[list[ScoredSample]]) -> dict[str, dict[str, float | None]]:
    """Balanced accuracy and AUROC of each score, pooled and within-problem."""
    table = {}
    for score in SCORES:
        flat = [(s.scores[score], s.correct) for row in results for s in row]
        scores, labels = [x for x, _ in flat], [y for _, y in flat]
        within = [auroc([s.scores[score] for s in row], [s.correct for s in row]) for row in results]
        within = [w for w in within if w is not None]
        within_ba = [balanced_accuracy([s.scores[score] for s in row], [s.correct for s in row]) for row in results]
        within_ba = [w for w in within_ba if w is not None]
        table[score] = {"balanced_acc": balanced_accuracy(scores, labels), "auroc": auroc(scores, labels),
                        "balanced_acc_within": sum(within_ba) / len(within_ba) if within_ba else None,
                        "auroc_within": sum(within) / len(within) if within else None,
                        "problems_with_both": len(within)}
    return table


def evaluate(model_dir, problems: list[dict], n: int = 64, threads: int = 1, progress: bool = True) -> dict:
    """All figures for one checkpoint (also per level pass@1)."""
    results = sample_and_score(model_dir, problems, n=n, threads=threads, progress=progress)
    references = [p["answer"] for p in problems]
    levels: dict[str, list[float]] = {}
    for p, row in zip(problems, results):
        levels.setdefault(f"L{p.get('level', '?')}", []).extend(s.correct for s in row)
    all_correct = [s.correct for row in results for s in row]
    sizes = tuple(k for k in (4, 16, 64) if k <= n)
    return {"model": str(model_dir), "problems": len(problems), "n": n,
            "pass@1": sum(all_correct) / len(all_correct),
            "pass@1_by_level": {k: sum(v) / len(v) for k, v in sorted(levels.items())},
            "mean_tokens": sum(s.num_tokens for row in results for s in row) / len(all_correct),
            "strategies": strategy_accuracy(results, references, sizes),
            "verifier": verifier_metrics(results)}


def to_markdown(report: dict) -> str:
    """The two tables of one report."""
    # sizes are ints in a fresh report and strings after a JSON round trip
    strategies = {name: {int(n): v for n, v in row.items()} for name, row in report["strategies"].items()}
    sizes = sorted({n for row in strategies.values() for n in row})
    by_level = ", ".join(f"{k} {v:.2f}" for k, v in report["pass@1_by_level"].items())
    lines = [f"pass@1 = {report['pass@1']:.3f} ({by_level}); "
             f"{report['problems']} problems x {report['n']} samples, T=1", "",
             "| strategy | " + " | ".join(f"N={n}" for n in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for name, row in strategies.items():
        lines.append(f"| {name} | " + " | ".join(f"{row[n]:.3f}" for n in sizes) + " |")
    lines += ["", "| score | balanced acc (pooled) | AUROC (pooled) | balanced acc (within) | AUROC (within) |",
              "|---|---|---|---|---|"]
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    for score, m in report["verifier"].items():
        lines.append(f"| {score} | {fmt(m['balanced_acc'])} | {fmt(m['auroc'])} | {fmt(m['balanced_acc_within'])} "
                     f"| {fmt(m['auroc_within'])} |")
    return "\n".join(lines) + "\n"


def save_report(report: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, indent=2) + "\n")
