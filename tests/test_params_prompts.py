import pytest

from tts_engine.backends.base import BackendBase
from tts_engine.inputs.prompts import PromptConfig, build_prompt, build_verify_prompt
from tts_engine.params import SamplingParams


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"top_p": 1.5}, r"top_p must be in \(0, 1\], got 1.5"),
        ({"n": 0}, "n must be an integer >= 1, got 0"),
        ({"temperature": -1}, "temperature must be >= 0, got -1"),
        ({"max_new_tokens": 0}, "max_new_tokens must be an integer >= 1, got 0"),
        ({"stop": [""]}, "stop strings must be non-empty"),
    ],
)
def test_sampling_params_validation_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SamplingParams(**kwargs)


def test_prompt_config_round_trip_and_templates(tmp_path):
    config = PromptConfig(template="Q: {problem}\nA:", verify_suffix="\nOK?", stop=("\n\n",))
    config.save(tmp_path)
    loaded = PromptConfig.load(tmp_path)
    assert loaded == config
    prompt = build_prompt(loaded, "1+1")
    assert prompt == "Q: 1+1\nA:"
    assert build_verify_prompt(loaded, "1+1", prompt, " 2") == "Q: 1+1\nA: 2\nOK?"
    assert PromptConfig.load(tmp_path / "missing") == PromptConfig()
    with pytest.raises(ValueError, match="must contain"):
        PromptConfig(template="no placeholder")


class ChatBackend(BackendBase):
    """A backend whose tokenizer has a chat template (Qwen-style turns)."""

    def apply_chat_template(self, messages):
        turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return turns + "<|im_start|>assistant\n"


def test_chat_template_used_with_step_by_step_system_prompt():
    config = PromptConfig()
    prompt = build_prompt(config, "What is 1+1?", ChatBackend())
    assert prompt.startswith("<|im_start|>system\nPlease reason step by step, and put your final answer within")
    verify = build_verify_prompt(config, "What is 1+1?", prompt, "It is \\boxed{2}.", ChatBackend())
    assert verify.startswith(prompt + "It is \\boxed{2}.")
    assert verify.endswith("Is this solution correct? Answer Yes or No.<|im_end|>\n<|im_start|>assistant\n")
