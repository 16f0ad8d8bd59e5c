#!/usr/bin/env bash
# A refactor changes no answer: `tts solve --all` on the bundled set at an earlier commit and at the working tree,
# side by side in one run (the earlier commit's code from a git worktree, on the same venv). Prints whether the
# tables are identical (every line but the time) and both wall times (ratio: now / before).
#   bash scripts/compare_solve.sh REV [more tts solve options]     e.g. bash scripts/compare_solve.sh 59ea30f
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:?usage: compare_solve.sh REV [tts solve options]}"; shift
python=.venv/bin/python
out=$(mktemp -d)
git worktree add --detach "$out/before" "$rev" >/dev/null 2>&1
trap 'git worktree remove --force "$out/before" >/dev/null 2>&1 || true' EXIT
run() {  # source folder, label
  local start end
  start=$EPOCHREALTIME
  (cd "$out" && "$python" -P -c "import sys; sys.path.insert(0, '$1'); import tts_engine; assert tts_engine.__file__.startswith('$1'), tts_engine.__file__; from tts_engine.cli import main; sys.argv = ['tts', 'solve', '--all', '--quiet', *sys.argv[1:]]; main()" "$@" > "$out/$2.txt" 2>/dev/null) || true
  end=$EPOCHREALTIME
  echo "$2: $(awk "BEGIN {printf \"%.1f\", $end - $start}") s wall"
}
run "$out/before" before "$@"
run "$(pwd)" now "$@"
strip() { grep -v "time: \|^results:\|calibration.json" "$1"; }
if diff <(strip "$out/before.txt") <(strip "$out/now.txt") >/dev/null; then
  echo "tables identical ($(strip "$out/now.txt" | wc -l) lines compared)"
else
  echo "tables DIFFER:"; diff <(strip "$out/before.txt") <(strip "$out/now.txt") || true
fi
grep "time: " "$out/before.txt" | sed 's/^/before: /'
grep "time: " "$out/now.txt" | sed 's/^/now:    /'
