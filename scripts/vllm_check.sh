#!/usr/bin/env bash
# Check of the vllm backend on a CUDA machine that has torch and network: installs vLLM if it is missing
# (nothing else), installs this project without dependencies, then runs scripts/vllm_check.py. A vLLM wheel
# is far larger than what travels to the lent GPU machine, which has no network: there, run
# scripts/device_check.sh (docs/gpu.md) instead.
#
#   bash scripts/vllm_check.sh [CHECKPOINT_DIR] [vllm_check.py options]
#
# CHECKPOINT_DIR defaults to the embedded default model (tts_engine/assets/default_model). It prints the
# largest |vllm - hf| of the verifier's log-probs and scores (fails above --tolerance) and the generated
# tokens/s of the engine's vllm backend beside raw LLM.generate on the same requests.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "no CUDA device visible to torch: run this on a GPU machine" >&2
    exit 2
fi
python -c "import vllm" 2>/dev/null || python -m pip install vllm
python -c "import tts_engine.kernels" 2>/dev/null || python -m pip install --no-deps --no-build-isolation -e .

args=()
if [[ $# -gt 0 && "$1" != -* ]]; then
    args+=(--model "$1")
    shift
fi
exec python scripts/vllm_check.py ${args[@]+"${args[@]}"} "$@"
