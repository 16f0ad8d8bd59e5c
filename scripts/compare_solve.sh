#!/usr/bin/env bash
# A refactor changes no answer: `tts solve --all` on the bundled set at an earlier commit and at the working tree,
# side by side in one run (the earlier commit's code from a git worktree, on the same venv). Prints whether the
# tables are identical (every line but the time), whether the results files agree problem by problem (every
# sample's text and answer, every class's and vote's answer and p_correct), and both wall times.
#   bash scripts/compare_solve.sh REV [more tts solve options]     e.g. bash scripts/compare_solve.sh 59ea30f
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:?usage: compare_solve.sh REV [tts solve options]}"; shift
python="$(pwd)/.venv/bin/python"
out=$(mktemp -d)
git worktree add --detach "$out/before" "$rev" >/dev/null 2>&1
trap 'git worktree remove --force "$out/before" >/dev/null 2>&1 || true' EXIT
# Only the package goes on the path (a checkout's root would put its kernels/ folder before the kernels distribution).
mkdir -p "$out/src_before" "$out/src_now"
ln -s "$out/before/tts_engine" "$out/src_before/tts_engine"
ln -s "$(pwd)/tts_engine" "$out/src_now/tts_engine"
run() {  # source folder, label, tts solve options
  local src="$1" label="$2" start end
  shift 2
  start=$EPOCHREALTIME
  (cd "$out" && "$python" -P -c "import sys; sys.path.insert(0, '$src'); import tts_engine; assert tts_engine.__file__.startswith('$src'), tts_engine.__file__; from tts_engine.cli import main; sys.argv = ['tts', 'solve', '--all', '--quiet', *sys.argv[1:]]; main()" --out "$out/$label.jsonl" "$@" > "$out/$label.txt" 2> "$out/$label.log") || { echo "$label failed:"; tail -3 "$out/$label.log"; }
  end=$EPOCHREALTIME
  echo "$label: $(awk "BEGIN {printf \"%.1f\", $end - $start}") s wall"
}
run "$out/src_before" before "$@"
run "$out/src_now" now "$@"
strip() { grep -v "time: \|^results:\|calibration.json" "$1"; }
if diff <(strip "$out/before.txt") <(strip "$out/now.txt") >/dev/null; then
  echo "tables identical ($(strip "$out/now.txt" | wc -l) lines compared)"
else
  echo "tables DIFFER:"; diff <(strip "$out/before.txt") <(strip "$out/now.txt") || true
fi
"$python" -P - "$out/before.jsonl" "$out/now.jsonl" <<'PY'
import json, sys
def lines(path):
    return {r["id"]: r for r in map(json.loads, open(path))}
before, now = lines(sys.argv[1]), lines(sys.argv[2])
def view(r):  # what must not change: every sample's text and answer, every class's and vote's answer and p_correct
    return (
        [(s["text"], s["answer"]) for s in r["samples"]],
        [(c["answer"], c.get("p_correct")) for c in r["classes"]],
        {k: (v["answer"], v.get("p_correct")) for k, v in r["aggregations"].items()},
    )
differ = [i for i in before if i not in now or view(before[i]) != view(now[i])]
print(f"results files: {len(before)} problems before, {len(now)} now; {len(differ)} differ" + (f" (e.g. {differ[:3]})" if differ else ""))
PY
grep "time: " "$out/before.txt" | sed 's/^/before: /'
grep "time: " "$out/now.txt" | sed 's/^/now:    /'
