"""LLMJudge with a fake backend: prompt building, greedy params, reply parsing, batching and caching."""

import pytest

from tts_engine.answers import TINYV_PROMPT, LLMJudge, grade_answers, parse_verdict
from tts_engine.backends.base import BackendBase, Sample


class FakeBackend(BackendBase):
    """Replies from a function of the prompt; records every generate call."""

    name = "fake"

    def __init__(self, reply, chat_template=None):
        self.reply, self.chat_template, self.calls = reply, chat_template, []

    def generate(self, prompts, params):
        self.calls.append((list(prompts), params))
        return [[Sample(text=self.reply(p), token_ids=[1], finish_reason="stop")] for p in prompts]

    def apply_chat_template(self, messages):
        return None if self.chat_template is None else self.chat_template.format(messages[-1]["content"])


def says_true_if_seven(prompt: str) -> str:
    return "True" if "<model_answer>seven</model_answer>" in prompt else "False"


@pytest.mark.parametrize(
    "reply, verdict",
    [
        ("True", True),
        ("False", False),
        (" true.", True),
        ("FALSE", False),
        ("<think>is it true? no</think> False", False),
        ("The answer is correct: True", True),
        ("maybe", None),
        ("", None),
        ("untrue", None),
        (None, None),
    ],
)
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) is verdict


def test_prompt_has_question_reference_answer():
    judge = LLMJudge(FakeBackend(says_true_if_seven))
    prompt = judge.prompt("What is 3+4?", "7", "seven")
    assert "<question>What is 3+4?</question>" in prompt
    assert "<ground_truth_answer>7</ground_truth_answer>" in prompt
    assert "<model_answer>seven</model_answer>" in prompt
    assert "{{" not in prompt and "True" in prompt and "False" in prompt


def test_placeholders_inside_answers_are_not_substituted():
    judge = LLMJudge(FakeBackend(says_true_if_seven))
    prompt = judge.prompt("q", "{{MODEL_ANSWER}}", "a")
    assert "<ground_truth_answer>{{MODEL_ANSWER}}</ground_truth_answer>" in prompt


def test_chat_template_wraps_the_prompt():
    backend = FakeBackend(says_true_if_seven, chat_template="<user>{}</user><assistant>")
    assert LLMJudge(backend).prompt("q", "7", "7").startswith("<user>You are checking")
    assert LLMJudge(backend, use_chat_template=False).prompt("q", "7", "7").startswith("You are checking")


def test_judge_batches_greedy_and_caches():
    backend = FakeBackend(says_true_if_seven)
    judge = LLMJudge(backend, max_new_tokens=4, batch_size=2)
    items = [("q", "7", "seven"), ("q", "7", "eight"), ("q", "7", "seven"), ("q", "7", "six")]
    assert judge.judge(items) == [True, False, True, False]
    assert [len(prompts) for prompts, _ in backend.calls] == [2, 1]  # 3 distinct items in batches of 2
    params = backend.calls[0][1]
    assert params.n == 1 and params.temperature == 0 and params.max_new_tokens == 4
    assert judge.judge([("q", "7", "eight")]) == [False]
    assert len(backend.calls) == 2  # served from the cache


def test_unparsable_reply_is_undecided():
    judge = LLMJudge(FakeBackend(lambda prompt: "I cannot tell"))
    assert judge.judge([("q", "1", "2")]) == [None]


def test_custom_template_must_have_placeholders():
    with pytest.raises(ValueError, match="prompt_template must contain {{MODEL_ANSWER}}"):
        LLMJudge(FakeBackend(says_true_if_seven), prompt_template="Q: {{QUESTION}} R: {{GROUND_TRUTH_ANSWER}}")
    assert "{{QUESTION}}" in TINYV_PROMPT


def test_hybrid_grading_with_llm_judge():
    backend = FakeBackend(says_true_if_seven)
    verdicts = grade_answers(
        ["7", "7", "7"], ["7.0", "seven", "eight"], questions=["3+4?"] * 3, grader="hybrid", judge=LLMJudge(backend)
    )
    assert verdicts == [True, True, False]
    assert len(backend.calls) == 1 and len(backend.calls[0][0]) == 2  # the rule settled "7.0"


def test_prompt_too_long_gets_no_verdict_and_the_rest_run():
    from tts_engine.backends.base import PromptTooLongError

    class ShortContext(FakeBackend):
        def generate(self, prompts, params):
            for i, prompt in enumerate(prompts):
                if len(prompt) > 600:
                    raise PromptTooLongError(i, len(prompt), 600)
            return super().generate(prompts, params)

    judge = LLMJudge(ShortContext(says_true_if_seven))
    items = [("q", "7", "seven"), ("q" * 1000, "7", "seven"), ("q", "7", "eight")]
    assert judge.judge(items) == [True, None, False]
