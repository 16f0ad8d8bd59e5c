"""The GPU check: every GPU figure of the project, each beside its baseline, measured in one bounded run.

    bash scripts/device_check.sh              # on the GPU machine (installs carried wheels, no network)
    bash scripts/device_check.sh --dry        # any machine: the same sections on CPU, tiny shapes
    PYTHONPATH=scripts python -P -m device_check --help

Sections (each in its own process, with its own time limit; a failure loses only that section):
- machine: versions, the GPU, and the two ceilings measured there (bf16 matrix product, device copy);
- score: fused_verifier_score vs its torch reference and the naive full-logits way (time, TFLOP/s, peak
  memory, error against float64);
- vote: subset_vote (Triton) vs its torch reference and the CPU prefix walk of the curves;
- kernel_tests: the suite's kernel tests with their Triton calls compiled for the GPU (pytest_cuda.py);
- generate: a 0.5B-shaped random Qwen2 through the hf backend and the engine vs raw model.generate;
- solve: `tts solve` on the bundled set with the shipped model, on the GPU and on the machine's CPU;
- train: steps/s of the sft, recompute and tango recipes (scripts/bench_train.py) against 2 CPU cores;
- token_scores: the token-score kernel against Cut Cross-Entropy, Liger-Kernel, the naive and the chunked torch
  ways (time, peak memory, error against float64; wheels carried in wheels/compare/), alone with --only.
The report (JSON) holds every figure, its baseline, the goal and whether it was met. docs/gpu.md says more.
"""
