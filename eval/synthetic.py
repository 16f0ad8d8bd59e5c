"""Synthetic results records in the results format, for tests and benchmarks of the curve code.

Each problem has a difficulty; a sample is right with that probability, otherwise it gives one of a few common
wrong answers (skewed, so wrong answers can out-vote the right one), a wrong answer of its own (the long tail
of distinct wrong answers real models produce), or no answer at all. Verifier scores lean
towards 1 on right samples and towards 0 on wrong ones, with `separation` setting how much; the likelihood
score leans less. Classes are numbered in order of first appearance, as the engine numbers them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

SUBJECTS = ("Algebra", "Geometry", "Number Theory", "Precalculus")


def synthetic_records(
    num_problems: int = 20,
    num_samples: int = 16,
    *,
    seed: int = 0,
    separation: float = 1.2,
    no_answer_rate: float = 0.08,
    tail_rate: float = 0.3,
    text_chars: int = 40,
    num_parameters: int = 1_500_000_000,
    score_kinds: tuple[str, ...] = ("likelihood", "verifier_vocab", "verifier_yes_no"),
) -> list[dict[str, Any]]:
    """`num_problems` results records with `num_samples` samples each (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    run = {
        "model": "synthetic-1.5b",
        "num_parameters": num_parameters,
        "backend": "synthetic",
        "n": num_samples,
        "temperature": 1.0,
        "top_p": 1.0,
        "max_new_tokens": 1024,
        "seed": seed,
        "verifier": "unified",
        "score_norm": "yes_no",
        "grader": "rule",
    }
    return [
        _problem(i, num_samples, rng, separation, no_answer_rate, tail_rate, text_chars, score_kinds, run)
        for i in range(num_problems)
    ]


def _problem(i, n, rng, separation, no_answer_rate, tail_rate, text_chars, score_kinds, run) -> dict[str, Any]:
    level = int(rng.integers(1, 6))
    p_right = float(np.clip(rng.beta(4.0 - 0.6 * level, 0.5 + 0.5 * level), 0.0, 1.0))
    wrong_weights = rng.dirichlet(np.full(4, 0.6))
    draws = rng.random(n)
    common = 1 + rng.choice(4, size=n, p=wrong_weights)  # 1..4: common wrong answers
    own = 5 + np.arange(n)  # a wrong answer no other sample gives
    wrong = np.where(rng.random(n) < tail_rate, own, common)
    labels = np.where(draws < p_right, 0, wrong)  # 0: right
    labels = np.where(rng.random(n) < no_answer_rate, -1, labels)
    order = {}
    for label in labels:
        if label >= 0 and label not in order:
            order[label] = len(order)
    tokens = np.maximum(8, rng.lognormal(np.log(300 + 80 * level), 0.4, size=n)).astype(int)
    samples = [
        _sample(label, order, tokens[j], rng, separation, text_chars, score_kinds) for j, label in enumerate(labels)
    ]
    classes = [
        {"answer": _answer(label), "size": int((labels == label).sum()), "correct": bool(label == 0)} for label in order
    ]
    return {
        "id": f"synthetic/{i}",
        "problem": f"Problem {i}.",
        "reference": _answer(0),
        "fields": {"level": level, "subject": SUBJECTS[i % len(SUBJECTS)]},
        "prompt": f"Solve problem {i}.",
        "samples": samples,
        "classes": classes,
        "aggregations": {},
        "compute": {
            "prompt_tokens": 40,
            "generated_tokens": int(tokens.sum()),
            "verifier_tokens": int(sum(s["verifier_tokens"] for s in samples)),
        },
        "run": run,
        "time_s": 0.0,
    }


def _sample(label, order, num_tokens, rng, separation, text_chars, score_kinds) -> dict[str, Any]:
    right = label == 0
    lean = separation if right else -separation
    scores = {}
    for kind in score_kinds:
        strength = 0.4 if kind == "likelihood" else 1.0
        logit = rng.normal(lean * strength, 1.0)
        scores[kind] = round(float(1.0 / (1.0 + np.exp(-logit))), 4)
    return {
        "text": "x" * text_chars,
        "answer": _answer(label) if label >= 0 else None,
        "answer_class": order[label] if label >= 0 else -1,
        "answer_status": "ok" if label >= 0 else "no_answer",
        "correct": bool(right),
        "num_tokens": int(num_tokens),
        "finish_reason": "stop" if label >= 0 else "length",
        "scores": scores,
        "verifier_tokens": int(num_tokens) + 60,
    }


def _answer(label: int) -> str | None:
    return None if label < 0 else str(42 + 7 * int(label))


def records_from_arrays(
    class_ids,
    class_correct,
    scores: dict[str, Any] | None = None,
    *,
    num_tokens=None,
    verifier_tokens=None,
    fields=None,
    num_parameters: int | None = 1000,
) -> list[dict[str, Any]]:
    """Results records for hand-made cases: class_ids (P, N) (-1: no answer), class_correct (P, C) booleans
    (None for a problem: no reference), scores kind -> (P, N), token counts (P, N) (default 10 and 20)."""
    class_ids = np.asarray(class_ids, dtype=np.int64)
    p, n = class_ids.shape
    scores = {kind: np.asarray(v, dtype=np.float64) for kind, v in (scores or {}).items()}
    num_tokens = np.full((p, n), 10) if num_tokens is None else np.asarray(num_tokens)
    verifier_tokens = np.full((p, n), 20) if verifier_tokens is None else np.asarray(verifier_tokens)
    run = {"model": "hand-made", "num_parameters": num_parameters, "n": n}
    records = []
    for i in range(p):
        correct = class_correct[i]
        samples = [
            {
                "answer": None if c < 0 else f"a{c}",
                "answer_class": int(c),
                "correct": None if correct is None else bool(c >= 0 and correct[c]),
                "num_tokens": int(num_tokens[i, j]),
                "verifier_tokens": int(verifier_tokens[i, j]),
                "scores": {kind: float(v[i, j]) for kind, v in scores.items()},
            }
            for j, c in enumerate(class_ids[i])
        ]
        width = int(class_ids[i].max()) + 1
        classes = [
            {
                "answer": f"a{c}",
                "size": int((class_ids[i] == c).sum()),
                "correct": None if correct is None else bool(correct[c]),
            }
            for c in range(width)
        ]
        records.append(
            {
                "id": f"case/{i}",
                "reference": None if correct is None else "a",
                "fields": dict(fields[i]) if fields else {},
                "samples": samples,
                "classes": classes,
                "run": run,
            }
        )
    return records
