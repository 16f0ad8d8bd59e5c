"""What a run starts from: problem files, the model (a checkpoint, the embedded default or a tiny test model) and
the prompts built for it."""
