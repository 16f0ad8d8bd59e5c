"""An LLM judge for answer equivalence, in the form TinyV (arXiv 2505.14625) uses: the model sees the
question, the ground-truth answer and the model's answer, and replies True or False.

Any generation backend works (tts_engine.backends.base.Backend): prompts are sent in batches with
greedy decoding, replies are parsed, and verdicts are cached by (question, reference, answer).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Sequence

from ..backends.base import PromptTooLongError
from ..params import SamplingParams

QUESTION, REFERENCE, ANSWER = "{{QUESTION}}", "{{GROUND_TRUTH_ANSWER}}", "{{MODEL_ANSWER}}"

TINYV_PROMPT = f"""You are checking answers for false negatives. A false negative is a model answer that \
is correct but was marked wrong because it is written differently from the ground truth: another form \
of the same value, another order of an unordered list, extra words or units, rounding within 5%. \
Compare the model answer with the ground truth answer for the question below.

<question>{QUESTION}</question>

<ground_truth_answer>{REFERENCE}</ground_truth_answer>

<model_answer>{ANSWER}</model_answer>

Reply "True" if the model answer is correct, otherwise reply "False"."""
"""Default judge prompt, with TinyV's placeholders ({{QUESTION}}, {{GROUND_TRUTH_ANSWER}},
{{MODEL_ANSWER}}) and its True/False reply; a checkpoint trained on another wording (e.g. TinyV's
released verifier) should be given that wording as `prompt_template`."""

_VERDICT = re.compile(r"\b(true|false)\b", re.IGNORECASE)


def parse_verdict(reply: str) -> bool | None:
    """True/False from a judge reply (the first "true"/"false" word after any </think>), else None."""
    if not isinstance(reply, str):
        return None
    reply = reply.rsplit("</think>", 1)[-1]
    match = _VERDICT.search(reply)
    if match is None:
        return None
    return match.group(1).lower() == "true"


class LLMJudge:
    """Judge equivalence with a language model behind a generation backend.

    backend: an object with generate(prompts, SamplingParams) -> list[list[Sample]].
    prompt_template: text with {{QUESTION}}, {{GROUND_TRUTH_ANSWER}} and {{MODEL_ANSWER}}.
    max_new_tokens: reply budget (a few tokens for a True/False model; more for a thinking one).
    batch_size: prompts per backend call.
    use_chat_template: send the prompt as a user turn through the backend's chat template (when it
        has one), as TinyV's verifier was trained; otherwise the raw text.
    """

    def __init__(
        self,
        backend,
        *,
        prompt_template: str = TINYV_PROMPT,
        max_new_tokens: int = 8,
        batch_size: int = 64,
        use_chat_template: bool = True,
        cache_size: int = 100_000,
    ):
        missing = [p for p in (QUESTION, REFERENCE, ANSWER) if p not in prompt_template]
        if missing:
            raise ValueError(f"prompt_template must contain {', '.join(missing)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.backend = backend
        self.prompt_template = prompt_template
        self.params = SamplingParams(n=1, temperature=0.0, max_new_tokens=max_new_tokens)
        self.batch_size = batch_size
        self.use_chat_template = use_chat_template
        self._cache: OrderedDict[tuple[str, str, str], bool | None] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def prompt(self, question: str, reference: str, answer: str) -> str:
        """The judge prompt for one item (placeholders replaced in one pass, so an answer that
        contains a placeholder string is not substituted again)."""
        values = {QUESTION: question or "", REFERENCE: reference, ANSWER: answer}
        pattern = "|".join(re.escape(p) for p in values)
        text = re.sub(pattern, lambda m: values[m.group(0)], self.prompt_template)
        if self.use_chat_template:
            chat = self.backend.apply_chat_template([{"role": "user", "content": text}])
            if chat is not None:
                return chat
        return text

    def judge(self, items: Sequence[tuple[str, str, str]]) -> list[bool | None]:
        """Verdicts for (question, reference, answer) items, in input order."""
        keys = [(q or "", r, a) for q, r, a in items]
        verdicts: dict[tuple[str, str, str], bool | None] = {}
        with self._lock:
            for key in keys:
                if key in self._cache:
                    verdicts[key] = self._cache[key]
        todo = list(dict.fromkeys(k for k in keys if k not in verdicts))
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            replies = self._generate([self.prompt(*key) for key in chunk])
            for key, reply in zip(chunk, replies):
                verdicts[key] = parse_verdict(reply)
            self._remember({key: verdicts[key] for key in chunk})
        return [verdicts[key] for key in keys]

    def _generate(self, prompts: list[str]) -> list[str | None]:
        """One reply per prompt; a prompt longer than the model's context gets None (the rest still run)."""
        replies: list[str | None] = [None] * len(prompts)
        pending = list(range(len(prompts)))
        while pending:
            try:
                outputs = self.backend.generate([prompts[i] for i in pending], self.params)
            except PromptTooLongError as exc:
                pending.pop(exc.index)
                continue
            if len(outputs) != len(pending):
                raise ValueError(f"backend returned {len(outputs)} outputs for {len(pending)} prompts")
            for i, samples in zip(pending, outputs):
                replies[i] = samples[0].text if samples else None
            break
        return replies

    def _remember(self, verdicts: dict) -> None:
        with self._lock:
            self._cache.update(verdicts)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
