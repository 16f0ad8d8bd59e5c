#!/usr/bin/env bash
# The architecture rules of pyproject.toml ([tool.importlinter]: no import cycles, training / eval / server
# independent, the core free of them and of any task pack, kernels using nothing of ours), checked on the
# package as it installs: kernels/, training/ and eval/ laid under tts_engine/ as the wheel lays them.
#   bash scripts/lint_imports.sh        (needs .venv with the test extra: lint-imports)
set -euo pipefail
cd "$(dirname "$0")/.."
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r tts_engine "$stage/tts_engine"
for folder in kernels training eval; do cp -r "$folder" "$stage/tts_engine/$folder"; done
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
root="$PWD"
cd "$stage"  # lint-imports puts the working folder first on the import path
PYTHONPATH="$stage" "$root/.venv/bin/lint-imports" "$root/pyproject.toml" --no-cache
