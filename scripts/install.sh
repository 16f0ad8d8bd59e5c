#!/usr/bin/env bash
# Set up .venv on a fresh machine: CPU torch first (an unpinned torch pulls a multi-GB CUDA build), then the
# package. `bash scripts/install.sh test` adds the test tools and Triton (kernel tests run in its interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
if [ "$extras" = "test" ]; then
  .venv/bin/python -m pip install -q -e ".[test,triton]"
else
  .venv/bin/python -m pip install -q -e .
fi
