"""The thinker: a checkpoint that solves inside `<think>`, then solves again until two solutions agree, and answers
with the agreed answer (`tts_engine.tasks.arith.thinking` defines the trace). `data` samples the default's own
solutions its traces start from (`tts train thinker-chains`); `trainer` trains it (`tts train thinker`)."""
