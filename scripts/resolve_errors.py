"""How often a re-solving verifier's re-solve, written after a RIGHT solution, reaches another answer.

Reads `tts solve --out` results of a checkpoint that re-solves (its `verifier_text` holds the re-solve); counts,
per distinct right solution text of a problem, whether the re-solve's last line (`resolved_prefix`: the number
after its last "=") is the reference. Those are the re-solve errors that weighted voting cannot outvote: every
right sample of the problem then scores ~0 together. Prints one line per file.

    python scripts/resolve_errors.py r.jsonl [more.jsonl ...]
"""

from __future__ import annotations

import argparse

from tts_engine.running.results import read_results
from tts_engine.verifiers.checking import resolved_prefix


def resolved_answer(check: str | None) -> str | None:
    """The re-solve's own answer: what follows its last "=" (None without a re-solved line)."""
    prefix = resolved_prefix(check or "")
    return None if prefix is None else check[len(prefix) :].split("\n", 1)[0].strip()


def count(path: str) -> tuple[int, int, int, int]:
    """(distinct right texts, those whose re-solve reaches another answer, problems with one, problems)."""
    texts = wrong = problems = 0
    bad_problems = set()
    for record in read_results(path):
        problems += 1
        seen = set()
        for sample in record["samples"]:
            if not sample.get("correct") or sample["text"] in seen:
                continue
            seen.add(sample["text"])
            texts += 1
            if resolved_answer(sample.get("verifier_text")) != record["reference"]:
                wrong += 1
                bad_problems.add(record["id"])
    return texts, wrong, len(bad_problems), problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="tts solve --out files")
    for path in parser.parse_args().results:
        texts, wrong, bad, problems = count(path)
        share = wrong / texts if texts else 0.0
        print(
            f"{path}: right texts {texts}, re-solve reaches another answer {wrong} ({share:.3f}), "
            f"problems {bad}/{problems}"
        )


if __name__ == "__main__":
    main()
