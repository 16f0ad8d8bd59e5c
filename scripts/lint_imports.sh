#!/usr/bin/env bash
# The architecture rules of pyproject.toml ([tool.importlinter]: no import cycles, training / eval / server
# independent, the core free of them and of any task pack, kernels using nothing of ours), checked on the
# package as it installs: kernels/, training/ and eval/ laid under tts_engine/ as the wheel lays them. The
# contracts' "@core" and "@all" are expanded from the tree here, so a new module is covered without an edit.
#   bash scripts/lint_imports.sh        (needs .venv with the test extra: lint-imports)
set -euo pipefail
cd "$(dirname "$0")/.."
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r tts_engine "$stage/tts_engine"
for folder in kernels training eval; do cp -r "$folder" "$stage/tts_engine/$folder"; done
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
root="$PWD"
"$root/.venv/bin/python" - "$root/pyproject.toml" "$stage" <<'PY'
import json, pathlib, re, sys
pyproject, stage = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
package = stage / "tts_engine"
children = sorted(
    p.stem if p.is_file() else p.name
    for p in package.iterdir()
    if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
)
everything = [f"tts_engine.{name}" for name in children if name != "kernels"]
core = [m for m in everything if m.split(".")[1] not in ("training", "eval", "serve")]
text = pyproject.read_text()
untasked = [m for m in core if m != "tts_engine.tasks"]
for marker, modules in (("@core", core), ("@core-without-tasks", untasked), ("@all", everything)):
    text = text.replace(f'["{marker}"]', json.dumps(modules))
(stage / "contracts.toml").write_text(text)
PY
cd "$stage"  # lint-imports puts the working folder first on the import path
PYTHONPATH="$stage" "$root/.venv/bin/lint-imports" "$stage/contracts.toml" --no-cache
