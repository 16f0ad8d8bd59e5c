"""A problem that cannot be solved (its prompt does not fit, its rows fail even alone): raised as its failure, so the
run loop records it with its status and goes on with the others."""

from __future__ import annotations

from typing import Any, Sequence

from ..backends.base import PromptFailedError, PromptTooLongError
from ..inputs.problems import Problem


class ProblemFailedError(Exception):
    """One problem that cannot be solved: the run loop records it with `status` and `detail` and goes on with the
    others (raised as a ValueError under `strict`)."""

    def __init__(self, problem_id: str, status: str, detail: dict[str, Any]):
        self.problem_id, self.status, self.detail = problem_id, status, detail
        super().__init__(f"problem {problem_id!r}: {detail['reason']}")


def problem_failure(err: PromptTooLongError | PromptFailedError, problems: Sequence[Problem]) -> ProblemFailedError:
    """The failure of the problem behind a backend's prompt error (`err.index` is its position in `problems`)."""
    problem_id = problems[err.index].id
    if isinstance(err, PromptTooLongError):
        detail = {"reason": str(err), "num_tokens": err.num_tokens, "max_model_len": err.max_model_len}
        return ProblemFailedError(problem_id, "prompt_too_long", detail)
    return ProblemFailedError(problem_id, "failed", {"reason": err.reason})


def generate_or_fail(backend, problems: Sequence[Problem], prompts: Sequence[str], params) -> list:
    """`backend.generate(prompts, params)` `# (P, n)`, with a prompt error named as its problem's failure."""
    try:
        return backend.generate(prompts, params)
    except (PromptTooLongError, PromptFailedError) as err:
        raise problem_failure(err, problems) from err
