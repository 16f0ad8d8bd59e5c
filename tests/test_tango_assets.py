"""The shipped Tango pair loads and serves: the generator answers in the task's format, the verifier scores it."""

from __future__ import annotations

import pytest


@pytest.mark.weights
def test_shipped_pair_serves(tango_pair):
    from tts_engine.backends.hf import HFBackend
    from tts_engine.params import SamplingParams
    from tts_engine.prompts import PromptConfig, build_prompt
    from tts_engine.verifiers.process import ProcessVerifier

    generator_dir, verifier_dir = tango_pair
    generator = HFBackend(generator_dir, device="cpu")
    config = PromptConfig.load(generator_dir)
    problem = "Compute left to right: 18+7*3."
    prompt = build_prompt(config, problem, generator)
    samples = generator.generate([prompt], SamplingParams(n=2, temperature=0.0, max_new_tokens=64))[0]
    assert "\\boxed{" in samples[0].text
    verifier = ProcessVerifier(
        HFBackend(verifier_dir, device="cpu"), PromptConfig.load(verifier_dir), max_new_tokens=48
    )
    scored = verifier.score([problem], [prompt], [[s.text for s in samples] + ["18+7=25\n25*3=75\n\\boxed{75}"]])[0]
    assert len(scored) == 3
    for s in scored:
        assert set(s.scores) == set(ProcessVerifier.kinds)
        assert all(0.0 <= v <= 1.0 for v in s.scores.values())
        assert s.tokens > 0
