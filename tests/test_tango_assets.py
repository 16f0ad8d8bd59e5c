"""The shipped Tango pair loads and serves: the generator answers in the task's format, the verifier scores it."""

from __future__ import annotations

from pathlib import Path

import pytest

import tts_engine

ASSETS = Path(tts_engine.__file__).resolve().parent / "assets" / "tango"


@pytest.mark.skipif(not (ASSETS / "verifier" / "config.json").is_file(), reason="Tango pair not shipped")
def test_shipped_pair_serves():
    from tts_engine.backends.hf import HFBackend
    from tts_engine.params import SamplingParams
    from tts_engine.prompts import PromptConfig, build_prompt
    from tts_engine.verifiers.process import ProcessVerifier

    generator = HFBackend(str(ASSETS / "generator"), device="cpu")
    config = PromptConfig.load(ASSETS / "generator")
    problem = "Compute left to right: 18+7*3."
    prompt = build_prompt(config, problem, generator)
    samples = generator.generate([prompt], SamplingParams(n=2, temperature=0.0, max_new_tokens=64))[0]
    assert "\\boxed{" in samples[0].text
    verifier = ProcessVerifier(
        HFBackend(str(ASSETS / "verifier"), device="cpu"), PromptConfig.load(ASSETS / "verifier"), max_new_tokens=48
    )
    scored = verifier.score([problem], [prompt], [[s.text for s in samples] + ["18+7=25\n25*3=75\n\\boxed{75}"]])[0]
    assert len(scored) == 3
    for s in scored:
        assert set(s.scores) == set(ProcessVerifier.kinds)
        assert all(0.0 <= v <= 1.0 for v in s.scores.values())
        assert s.tokens > 0
