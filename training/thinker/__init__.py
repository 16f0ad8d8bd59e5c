"""The thinker: a checkpoint that solves, checks its solution units digit first inside `<think>`, fixes the first
wrong line and checks again (`tts_engine.tasks.arith.thinking` defines the trace). `data` samples the chains its
traces are built from (`tts train thinker-chains`); `trainer` trains it (`tts train thinker`)."""
