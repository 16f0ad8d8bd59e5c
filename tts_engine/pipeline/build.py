"""The pipeline: a batch of problems' samples in, their typed records out. Every strategy builds its records here.

samples `# (P, N)` -> answers read and grouped into classes of equivalent answers -> classes graded against the
references -> every sample verified (each distinct text once) -> every vote over every score kind -> p_correct of
every class and vote -> one `ProblemRecord` per problem
"""

from __future__ import annotations

import copy
import time
from typing import Any, Callable, Sequence

from ..answers.thinking import ThinkingMarkers, answer_after_thinking, split_thinking
from ..backends.base import PromptFailedError, PromptTooLongError, Sample
from ..inputs.problems import Problem
from ..params import SamplingParams
from ..verifiers import likelihood_score, score_each_text_once
from .aggregate import vote_predictions
from .calibration import Calibration
from .confidence import confidence_scores
from .failures import problem_failure
from .records import AnswerClass, Compute, ProblemRecord, SampleRecord, voting_samples

NO_TRACE_MARKERS = ThinkingMarkers()
"""R1's and Qwen3's markers: a sample with neither is read whole."""


class Pipeline:
    """Grades, verifies, votes and calibrates samples the same way for every strategy."""

    def __init__(
        self,
        calibration: Calibration,
        *,
        grader: str = "rule",
        judge=None,
        markers: ThinkingMarkers = NO_TRACE_MARKERS,
        count_tokens: Callable[[str], int] | None = None,
    ):
        """`markers`: where a thinking model's trace starts and ends (answers are read after it); `count_tokens`:
        the model's token count of a text (a sample's thinking tokens are recorded apart where it is given)."""
        self.calibration, self.grader, self.judge = calibration, grader, judge
        self.markers, self.count_tokens = markers, count_tokens

    def with_calibration(self, calibration: Calibration) -> "Pipeline":
        """This pipeline with another calibration (a strategy family's, `Calibration.for_family`)."""
        other = copy.copy(self)
        other.calibration = calibration
        return other

    def records(
        self,
        problems: Sequence[Problem],
        prompts: Sequence[str],
        samples: Sequence[Sequence[Sample]],
        params: SamplingParams,
        *,
        verifier: Any,
        started: float | None = None,
        votes_from: Callable[[SampleRecord], bool] | None = None,
        compute: Sequence[Compute] | None = None,
        extra_tokens: Sequence[int] | None = None,
    ) -> list[ProblemRecord]:
        """One record per problem of `samples` `# (P, N)`, scored by `verifier` (the engine's, a strategy's wrapper
        of it, or None for likelihood only). `votes_from`: which samples vote (the others keep their answer in the
        record but vote for nothing, e.g. samples a strategy stopped early); default all. `compute`: what each
        problem cost where the strategy counted more than its samples (a search's whole tree); default: the
        samples' own tokens, plus each problem's `extra_tokens` that the strategy generated beside them (probes)."""
        from ..answers import group_answers_batch

        started = time.perf_counter() if started is None else started
        answers = [[answer_after_thinking(s.text, self.markers) for s in row] for row in samples]  # (P, N)
        classes = group_answers_batch(answers)
        grades, reasons, judged = self._grade(problems, classes)
        verify_started = time.perf_counter()
        verdicts = verify(verifier, problems, prompts, samples) if verifier is not None else [None] * len(problems)
        verify_elapsed = (time.perf_counter() - verify_started) / max(1, len(problems))
        elapsed = (time.perf_counter() - started) / max(1, len(problems))
        records = []
        for i, problem in enumerate(problems):
            rows = _sample_records(problem, samples[i], answers[i], classes[i], grades[i], verdicts[i], params)
            self._count_thinking(rows)
            answer_classes = [
                AnswerClass(rep, size, grade, undecided_because=reason)
                for rep, size, grade, reason in zip(
                    classes[i].representatives, classes[i].sizes(), grades[i], reasons[i]
                )
            ]
            if votes_from is not None:
                for row in rows:
                    row.votes = votes_from(row)
            voters = voting_samples(rows)
            record = ProblemRecord(
                problem,
                prompt=prompts[i],
                samples=rows,
                classes=answer_classes,
                aggregations=vote_predictions(voters, grades[i], has_reference=problem.reference is not None),
                compute=compute[i]
                if compute is not None
                else _compute(samples[i], rows, extra_tokens[i] if extra_tokens is not None else 0),
                time_s=round(elapsed, 4),
                verify_time_s=round(verify_elapsed, 4),
                judged_pairs=judged[i],
            )
            self.calibration.annotate(record, voters)
            records.append(record)
        return records

    def _count_thinking(self, rows: list[SampleRecord]) -> None:
        """Each thinking sample's trace tokens (the rest of its tokens are its answer's)."""
        if self.count_tokens is None:
            return
        for row in rows:
            trace, _ = split_thinking(row.text, self.markers)
            if trace is not None:
                row.thinking_tokens = min(row.num_tokens, self.count_tokens(trace))

    def _grade(self, problems, classes):
        """Per problem: each class's grade, why grading could not decide (None where it did), and how many of its
        classes the LLM judge decided."""
        from ..answers import grade_answers_report

        reps = [(p, rep) for p, c in zip(problems, classes) for rep in c.representatives]
        if not any(p.reference is not None for p in problems):
            return (
                [[None] * len(c.representatives) for c in classes],
                [[None] * len(c.representatives) for c in classes],
                [0] * len(problems),
            )
        report = grade_answers_report(
            [p.reference for p, _ in reps],
            [rep for _, rep in reps],
            questions=[p.text for p, _ in reps],
            grader=self.grader,
            judge=self.judge,
        )
        judged_set = set(report.judged_indices)
        grades, reasons, judged, offset = [], [], [], 0
        for problem, c in zip(problems, classes):
            span = range(offset, offset + len(c.representatives))
            offset += len(c.representatives)
            has_reference = problem.reference is not None
            grades.append([report.verdicts[k] if has_reference else None for k in span])
            reasons.append([report.reasons[k] if has_reference and report.verdicts[k] is None else None for k in span])
            judged.append(sum(k in judged_set for k in span))
        return grades, reasons, judged


def _compute(samples: Sequence[Sample], rows: Sequence[SampleRecord], extra: int = 0) -> Compute:
    """The tokens of a problem's samples: its prompt, what they (and `extra` generation beside them) generated,
    what the verifier computed of them."""
    prompt_tokens = samples[0].num_prompt_tokens if samples else 0
    return Compute(prompt_tokens, sum(s.num_tokens for s in samples) + extra, sum(s.verifier_tokens for s in rows))


def _sample_records(problem, samples, answers, classes, grades, verdicts, params) -> list[SampleRecord]:
    """The sample records of one problem: answer, class, grade, tokens and every score."""
    # The confidence kinds where every sample has its token confidences (a problem's samples carry the same kinds:
    # votes need a score of each sample).
    with_confidence = any(s.confidences for s in samples) and all(len(s.confidences) == s.num_tokens for s in samples)
    rows = []
    for j, sample in enumerate(samples):
        scores = {"likelihood": likelihood_score(sample.logprobs)}
        if with_confidence:
            scores.update(confidence_scores(sample.confidences, params.confidence_window, params.confidence_tail))
        c = classes.class_ids[j]
        row = SampleRecord(
            text=sample.text,
            answer=answers[j],
            answer_class=c,
            answer_status=classes.statuses[j],
            correct=grades[c] if c >= 0 else (False if problem.reference is not None else None),
            num_tokens=sample.num_tokens,
            finish_reason=sample.finish_reason,
            scores=scores,
        )
        if verdicts is not None:
            verdict = verdicts[j]
            scores.update(verdict.scores)
            row.verifier_tokens = verdict.tokens
            row.verifier_status = verdict.status if verdict.status not in (None, "ok") else None
            row.verifier_text = verdict.text or None
            if row.verifier_text is not None and verdict.step_scores is not None:
                row.step_scores = [round(x, 6) for x in verdict.step_scores]
        rows.append(row)
    return rows


def verify(verifier, problems, prompts, samples) -> list[list[Any]]:
    """The verifier's score of every sample `# (P, N)`. Where a verification prompt does not fit or a row fails even
    alone, the problems are verified one by one to find the one at fault, which fails alone (`ProblemFailedError`:
    the run loop records it and solves the others again)."""
    try:
        return _verify_all(verifier, problems, prompts, samples)
    except (PromptTooLongError, PromptFailedError) as err:
        if len(problems) == 1:
            err.index = 0  # the verifier's row; the problem is the one verified
            raise problem_failure(err, problems) from err
        for i in range(len(problems)):  # the one that fails alone raises its ProblemFailedError
            verify(verifier, problems[i : i + 1], prompts[i : i + 1], samples[i : i + 1])
        raise


def _verify_all(verifier, problems, prompts, samples) -> list[list[Any]]:
    """Each distinct text of a problem scored once (`score_each_text_once`); a verifier whose scores belong to
    samples rather than texts (`scores_by_text = False`, e.g. a search's beams) scores every sample."""
    questions, texts = [p.text for p in problems], [[s.text for s in row] for row in samples]
    if not verifier.scores_by_text:
        return verifier.score(questions, prompts, texts)
    return score_each_text_once(verifier, questions, prompts, texts)
