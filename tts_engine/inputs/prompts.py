"""How a problem becomes a prompt, and a (prompt, solution) pair a verification prompt.

A checkpoint may carry its own templates in `tts_engine.json` beside its weights (the embedded default does);
otherwise a tokenizer's chat template is applied with the usual step-by-step system prompt, and a model
without one gets the plain template.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

DEFAULT_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."
VERIFY_QUESTION = "Is this solution correct? Answer Yes or No."
CHECK_REQUEST = "\n\nCheck each step.\n"
PROMPT_CONFIG_FILE = "tts_engine.json"


@dataclass
class PromptConfig:
    """Templates that turn problems into prompts and solutions into verification prompts."""

    template: str = "{problem}\n"
    """Generation prompt for models without a chat template; `{problem}` is replaced by the problem text."""
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """System message when the tokenizer has a chat template."""
    use_chat_template: bool = True
    """Apply the tokenizer's chat template when it has one."""
    verify_suffix: str = "\n\n" + VERIFY_QUESTION + "\n"
    """Appended to prompt + solution to ask for a verdict (plain models); the next token is scored."""
    yes_token: str = "Yes"
    """Token whose probability is the verifier score."""
    no_token: str = "No"
    """Token of the negative verdict (the `yes_no` normalisation)."""
    stop: tuple[str, ...] = ()
    """Stop strings for generation (besides the end-of-sequence token)."""
    step_delimiter: str = "\n\n"
    """What ends one step of a solution, for step-level search and step scorers: a blank line for chat models
    (search-and-learn's separator); a line break for checkpoints that write one operation per line."""
    verify_form: str = "yes_no"
    """How the checkpoint verifies its own solutions, a form of the verifier registry
    (`tts_engine.verifiers.registry`): `yes_no`, one verdict token right after `verify_suffix` (RL^V); `check`,
    it first writes a check of every step after `check_suffix`, then the verdict; `resolve`, its check solves
    the problem again and two reads compare the solution with it (`verifier_answer`, `verifier_path`); task packs
    add theirs (`recompute`: the arithmetic task's units-first recompute check). An unknown form fails when the
    verifier is built (`make_verifier`), naming the registered ones."""
    check_suffix: str = CHECK_REQUEST
    """Appended to prompt + solution to ask for a step-by-step check (plain models; the `check` form and
    process verifiers); `{problem}` in it is replaced by the problem (restated next to the check; units digit
    first in the `recompute` form)."""
    check_max_tokens: int = 256
    """Longest check a verifier may write, in tokens."""
    check_answer_score: bool = False
    """Deprecated spelling of `verify_form: resolve` (stored by older checkpoints as `check` + this flag); kept
    equal to `verify_form == "resolve"`."""
    check_temperature: float = 0.0
    """Temperature of the check. 0: greedy, so every sample of a problem is checked by nearly the same re-solve
    and shares its errors; above 0 each distinct solution's check is sampled (seeded by its text), so the
    check's errors differ from sample to sample and average out in a vote."""
    check_resolve: bool = True
    """Write the re-solve before reading (`check_answer_score`): the verdict, marks, `verifier_answer` and the check
    text come from it. false: read `verifier_path` alone, one teacher-forced pass per distinct solution and no
    generation (a fraction of the verifier's tokens and time)."""
    check_samples: int = 1
    """Re-solves per distinct solution (`check_answer_score`); `verifier_answer` is their mean. More than 1 only
    with `check_temperature` > 0 (greedy re-solves are all the same)."""
    think_start: str = "<think>"
    """Where a thinking model's trace starts (R1 and Qwen3 write `<think>`). A sample with neither marker has no
    trace and is read whole; answers are read after the trace. Empty (with `think_end` set): every sample thinks
    from its first token until `think_end`."""
    think_end: str = "</think>"
    """Where its trace ends."""
    answer_forcing: str = "\n</think>\n\nFinal answer: \\boxed{"
    """Appended to a trace cut at a thinking budget (or probed) to make the model answer at once (s1's forced
    answer); it ends the trace."""
    continue_text: str = "Wait"
    """What replaces the end of a trace that ends too early under budget forcing (s1's "Wait")."""

    def __post_init__(self) -> None:
        if "{problem}" not in self.template:
            raise ValueError(f"template must contain '{{problem}}', got {self.template!r}")
        if not self.step_delimiter:
            raise ValueError("step_delimiter must be a non-empty string, got ''")
        if self.verify_form == "check" and self.check_answer_score:
            self.verify_form = "resolve"  # the older spelling of the re-solving form
        self.check_answer_score = self.verify_form == "resolve"
        if self.check_max_tokens < 1:
            raise ValueError(f"check_max_tokens must be >= 1, got {self.check_max_tokens}")
        if not 0.0 <= self.check_temperature <= 2.0:
            raise ValueError(f"check_temperature must be in [0, 2], got {self.check_temperature}")
        if self.check_samples < 1:
            raise ValueError(f"check_samples must be >= 1, got {self.check_samples}")
        if self.check_samples > 1 and self.check_temperature == 0:
            raise ValueError(
                f"check_samples = {self.check_samples} needs check_temperature > 0: greedy re-solves are all the same"
            )
        if self.think_end and self.think_end not in self.answer_forcing:
            raise ValueError(f"answer_forcing must end the trace: it must contain think_end {self.think_end!r}")
        if not self.check_resolve and self.verify_form != "resolve":
            raise ValueError(
                "check_resolve = false reads verifier_path, which needs a re-solving checkpoint (verify_form resolve)"
            )
        self.stop = tuple(self.stop)

    @property
    def markers(self):
        """The thinking markers (`tts_engine.answers.thinking.ThinkingMarkers`)."""
        from ..answers.thinking import ThinkingMarkers

        return ThinkingMarkers(self.think_start, self.think_end)

    def with_check_options(self, options: dict) -> "PromptConfig":
        """A copy with check settings (`check_*` fields) overridden, validated as at construction."""
        known = sorted(f.name for f in fields(self) if f.name.startswith("check_"))
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"--check-option: unknown check settings {unknown}; known: {known}")
        return replace(self, **options)

    @classmethod
    def load(cls, model_dir: str | Path | None) -> "PromptConfig":
        """The templates stored with a checkpoint (`tts_engine.json`), else the defaults."""
        path = Path(model_dir) / PROMPT_CONFIG_FILE if model_dir else None
        if path is None or not path.is_file():
            return cls()
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object of prompt settings, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{path}: unknown prompt settings {sorted(unknown)}; known: {sorted(known)}")
        try:
            return cls(**data)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path}: {err}") from None

    def save(self, model_dir: str | Path) -> Path:
        path = Path(model_dir) / PROMPT_CONFIG_FILE
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path


class Prompts:
    """A model's prompt settings and the exact generation prompt of each problem (its chat template when its
    tokenizer has one)."""

    def __init__(self, config: PromptConfig, backend=None):
        self.config, self.backend = config, backend

    def build(self, problems) -> list[str]:
        """The generation prompt of each problem (`tts_engine.inputs.problems.Problem`)."""
        return [build_prompt(self.config, p.text, self.backend) for p in problems]

    def of_text(self, text: str) -> str:
        """The generation prompt of a problem text."""
        return build_prompt(self.config, text, self.backend)


def build_prompt(config: PromptConfig, problem: str, backend=None) -> str:
    """The generation prompt for one problem (chat template when the backend's tokenizer has one)."""
    if config.use_chat_template and backend is not None:
        messages = [{"role": "system", "content": config.system_prompt}, {"role": "user", "content": problem}]
        chat = backend.apply_chat_template(messages)
        if chat is not None:
            return chat
    return config.template.replace("{problem}", problem)


def build_verify_prompt(config: PromptConfig, problem: str, prompt: str, solution: str, backend=None) -> str:
    """prompt + solution + the verification question, so it shares the generation prompt's prefix.

    With a chat template, the solution closes the assistant turn and the question opens a new user turn.
    """
    chat = follow_up_chat(config, problem, solution, VERIFY_QUESTION, backend)
    return chat if chat is not None else prompt + solution + config.verify_suffix


def follow_up_chat(config: PromptConfig, problem: str, solution: str, question: str, backend=None) -> str | None:
    """The chat form of a question about a solution: the solution closes the assistant turn and the question opens
    a new user turn; None when the prompts are plain text or the model has no chat template."""
    if not config.use_chat_template or backend is None:
        return None
    messages = [
        {"role": "system", "content": config.system_prompt},
        {"role": "user", "content": problem},
        {"role": "assistant", "content": solution},
        {"role": "user", "content": question},
    ]
    return backend.apply_chat_template(messages)
