"""The thinker: a checkpoint that solves the problem, then checks its solution by writing the problem and every step
units digit first, and answers with the check's answer (`tts_engine.tasks.arith.thinking` defines the trace). `data`
samples the default's own solutions its traces start from (`tts train thinker-chains`); `trainer` trains it
(`tts train thinker`)."""
