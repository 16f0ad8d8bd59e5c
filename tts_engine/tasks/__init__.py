"""Task packs: each folder here is one task (problem generator, task-specific check forms) that registers what
it adds with the core's registries when imported; `tts_engine.verifiers.registry` imports every pack the first
time a verification form is looked up. The core names no task."""
