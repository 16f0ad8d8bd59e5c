#!/usr/bin/env bash
# adaptive-n's stop on p_correct (the default) against the vote-share stop and fixed N, side by side on one fresh
# set of level 7-10 problems (levels 9-10 lie past the default's training), through `tts solve` and `tts curve`:
#   bash scripts/eval_adaptive_stop.sh            -> docs/runs/adaptive_stop_l7-10.txt
# Env: SEED (8401), PER_LEVEL (12), MAX_N (64), OUT (runs/adaptive_stop), MODEL_ARGS (more tts solve options, e.g.
# the Tango pair's). Every solve resumes: rerun to finish.
set -euo pipefail
cd "$(dirname "$0")/.."
tts="${TTS:-.venv/bin/tts}"
seed="${SEED:-8401}"
max_n="${MAX_N:-64}"
out="${OUT:-runs/adaptive_stop}"
read -r -a model_args <<< "${MODEL_ARGS:-}"
mkdir -p "$out" docs/runs
problems="$out/s${seed}_l7-10.jsonl"
[ -f "$problems" ] || "$tts" train make-problems --seed "$seed" --levels 7-10 --per-level "${PER_LEVEL:-12}" --out "$problems" >/dev/null
report="docs/runs/adaptive_stop_l7-10.txt"
echo "# tts train make-problems --seed $seed --levels 7-10 --per-level ${PER_LEVEL:-12}; then each command below" > "$report"
run() {  # name, tts solve options
  local name="$1"; shift
  "$tts" solve "$problems" "${model_args[@]}" "$@" --out "$out/$name.jsonl" --quiet > "$out/$name.txt"
  { echo; echo "## tts solve ${model_args[*]} $*"; grep -v "^results:\|^  [a-z_]*:" "$out/$name.txt"; } >> "$report"
}
run adaptive_p_correct --strategy adaptive-n --max-n "$max_n"
run adaptive_share --strategy adaptive-n --max-n "$max_n" --stop-on share
run fixed --n "$max_n"
{ echo; echo "## tts curve fixed.jsonl (fixed N = k: expected accuracy over subsets of the $max_n samples)"; } >> "$report"
"$tts" curve "$out/fixed.jsonl" --out-dir "$out/fixed_curves" --label "fixed" --no-plots | sed '/^can these answers/,$d' >> "$report"
echo "$report"
