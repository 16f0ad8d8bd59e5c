"""tts-engine: test-time scaling inference with verifiers."""
