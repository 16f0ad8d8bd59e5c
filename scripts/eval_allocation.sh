#!/usr/bin/env bash
# Where compute goes, through `tts solve` and `tts curve` on fresh mixed sets (levels 1-10; levels 9-10 lie past the
# default's training) that nothing was tuned on: fixed N = 64 (its curve gives fixed N = 1..64 and their tokens),
# adaptive-n with its defaults (the p_correct stop, the futility stop and the plateau stop), without the plateau
# stop, and without either (as before they existed), and runs under one token budget at fixed N = 4's, 8's, 16's and
# 32's total tokens; then adaptive-n on the bundled set with its defaults and without the stops.
#   bash scripts/eval_allocation.sh            -> docs/runs/allocation.txt
# Env: SEEDS ("8501 8502 8503"), PER_LEVEL (20), OUT (runs/allocation), MODEL_ARGS (more tts solve options). Every
# solve resumes: rerun to finish.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a tts <<< "${TTS:-.venv/bin/tts}"
out="${OUT:-runs/allocation}"
read -r -a model_args <<< "${MODEL_ARGS:-}"
python="${PY:-.venv/bin/python}"
mkdir -p "$out" docs/runs
report="docs/runs/allocation.txt"
: > "$report"

total_at() {  # curves.json of fixed N = 64, n -> fixed N = n's expected generated + verifier tokens over the set
  "$python" -P - "$1" "$2" <<'PY'
import json, sys
from tts_engine.pipeline.aggregate import headline_vote
curve = json.load(open(sys.argv[1]))["curves"][0]
key = headline_vote(curve["run"].get("headline_kind"))
tokens = curve["aggregations"][key]["compute"]["tokens"][curve["k"].index(int(sys.argv[2]))]
print(int(tokens * curve["num_problems_scored"]))
PY
}

for seed in ${SEEDS:-8501 8502 8503}; do
  problems="$out/s${seed}.jsonl"
  [ -f "$problems" ] || "${tts[@]}" train make-problems --seed "$seed" --levels 1-10 --per-level "${PER_LEVEL:-20}" --out "$problems" >/dev/null
  run() {  # name, tts solve options
    local name="$1"; shift
    "${tts[@]}" solve "$problems" "${model_args[@]}" "$@" --out "$out/${name}_s$seed.jsonl" --quiet > "$out/${name}_s$seed.txt"
    { echo; echo "## s$seed $name: tts solve s$seed.jsonl ${model_args[*]} $*"; awk '!/^results:/ && (!/^  [a-z_0-9]+:/ || /^  stopped:/)' "$out/${name}_s$seed.txt"; } >> "$report"
  }
  run fixed64 --n 64
  { echo; echo "## s$seed fixed N = k: tts curve fixed64_s$seed.jsonl"; } >> "$report"
  "${tts[@]}" curve "$out/fixed64_s$seed.jsonl" --out-dir "$out/fixed64_s${seed}_curves" --label "s$seed" --no-plots \
    | sed '/^can these answers/,$d' >> "$report"
  run adaptive --strategy adaptive-n
  run adaptive_no_plateau --strategy adaptive-n --plateau-waves 0
  run adaptive_no_futility --strategy adaptive-n --futility 0 --plateau-waves 0
  for n in 4 8 16 32; do
    budget=$(total_at "$out/fixed64_s${seed}_curves/curves.json" "$n")
    run "budget_n$n" --strategy adaptive-n --budget-tokens "$budget"
  done
done
# The bundled set (levels 1-8, every problem within the model's reach): what the stops cost where none is futile.
for variant in "defaults" "no_stops --futility 0 --plateau-waves 0"; do
  read -r name opts <<< "$variant"
  read -r -a opts <<< "${opts:-}"
  "${tts[@]}" solve --strategy adaptive-n "${model_args[@]}" "${opts[@]}" --out "$out/bundled_$name.jsonl" --quiet > "$out/bundled_$name.txt"
  { echo; echo "## bundled adaptive-n $name: tts solve --strategy adaptive-n ${model_args[*]} ${opts[*]}"; awk '!/^results:/ && (!/^  [a-z_0-9]+:/ || /^  stopped:/)' "$out/bundled_$name.txt"; } >> "$report"
done
echo "$report"
