#!/usr/bin/env bash
# The thinker against itself and the default, through `tts solve` and `tts curve`, on fresh sets it never trained on.
#   bash scripts/eval_thinker.sh [THINKER_DIR]        (default: the shipped tts_engine/assets/thinker)
# First, when THINKER_DIR has no calibration.json (or FIT=1): its p_correct fit, by `tts calibrate` over its runs on a
# fit set (seed FIT_SEED, levels 1-8): no budget, --thinking-budget 128 and 512, probe and budget forcing, N = 4, so
# that each thinking strategy has a fit of its own; written to THINKER_DIR/calibration.json. Then, with that fit:
# For each seed of SEEDS, levels 1-8 (PER_LEVEL a level), N = 4 samples a problem: the default (fixed N) and the
# thinker at --thinking-budget 128 and 512; on the first seed also probe at 512 (every 64 tokens, an answer held 3
# probes), budget forcing (at least 256 thinking tokens, up to 2 waits, capped at 1,024) and probe with the same
# forcing (where forcing makes a trace run on after its answer settled, probing stops it), levels 9-10 (past the
# chains either model was trained on: the default and the thinker at 768: their traces run longer), and the two axes
# (`tts curve` of the thinker with no budget and at budgets 64, 128, 256 and 512, AXES_N samples each: parallel,
# sequential and joint; beside it the default's curve at AXES_N); on the first two seeds, the default and the thinker
# at --thinking-budget 512 at each temperature of TEMPS. Every solve resumes: rerun to finish.
# Writes docs/runs/thinker.txt (one part per run, `## sSEED RUN: the command`).
# Env: SEEDS ("8601 8602 8604"), PER_LEVEL (20), AXES_N (8), TEMPS ("0.5 0.3"), FIT_SEED (8611), FIT, OUT (runs/thinker_eval), TTS.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a tts <<< "${TTS:-.venv/bin/tts}"
thinker="${1:-tts_engine/assets/thinker}"
out="${OUT:-runs/thinker_eval}"
axes_n="${AXES_N:-8}"
report="docs/runs/thinker.txt"
mkdir -p "$out" docs/runs
: > "$report"

solve() {  # name, problems file, tts solve options
  local name="$1" problems="$2"; shift 2
  "${tts[@]}" solve "$problems" "$@" --out "$out/$name.jsonl" --quiet > "$out/$name.txt"
  { echo; echo "## $name: tts solve $(basename "$problems") $*"; grep -v "^results:\|^  [a-z_0-9]*:" "$out/$name.txt"; } >> "$report"
}
make_set() {  # file, seed, levels
  [ -f "$1" ] || "${tts[@]}" train make-problems --seed "$2" --levels "$3" --per-level "${PER_LEVEL:-20}" --out "$1" >/dev/null
}
budget_runs() {  # prefix, problems file, extra options: the thinker at thinking budgets 128 and 512, N = 4
  local prefix="$1" problems="$2"; shift 2
  solve "${prefix}_tb128" "$problems" --model "$thinker" --strategy thinking-budget --thinking-budget 128 --n 4 "$@"
  solve "${prefix}_tb512" "$problems" --model "$thinker" --strategy thinking-budget --thinking-budget 512 --n 4 "$@"
}
thinking_runs() {  # prefix, problems file, extra options: the budgets, then probe, forcing and both, N = 4
  local prefix="$1" problems="$2"; shift 2
  budget_runs "$prefix" "$problems" "$@"
  solve "${prefix}_probe512" "$problems" --model "$thinker" --strategy probe --thinking-budget 512 --probe-every 64 --probe-holds 3 --n 4 "$@"
  solve "${prefix}_forcing" "$problems" --model "$thinker" --strategy budget-forcing --min-thinking 256 --max-waits 2 --thinking-budget 1024 --n 4 "$@"
  solve "${prefix}_probe_forcing" "$problems" --model "$thinker" --strategy probe --min-thinking 256 --max-waits 2 --thinking-budget 1024 --probe-every 64 --probe-holds 3 --n 4 "$@"
}

if [ "${FIT:-$([ -f "$thinker/calibration.json" ] && echo 0 || echo 1)}" != 0 ]; then
  fit_seed="${FIT_SEED:-8611}"
  make_set "$out/s$fit_seed.jsonl" "$fit_seed" 1-8
  solve "fit_free" "$out/s$fit_seed.jsonl" --model "$thinker" --max-new-tokens 1024 --n 4 --calibration none
  thinking_runs fit "$out/s$fit_seed.jsonl" --calibration none
  { echo; echo "## fit: tts calibrate fit_{free,tb128,tb512,probe512,forcing,probe_forcing}.jsonl --out $thinker/calibration.json"; } >> "$report"
  "${tts[@]}" calibrate "$out"/fit_{free,tb128,tb512,probe512,forcing,probe_forcing}.jsonl --out "$thinker/calibration.json" \
    --plot "$out/fit_reliability.png" >> "$report"
fi

seeds=(${SEEDS:-8601 8602 8604})
for seed in "${seeds[@]}"; do
  set_file="$out/s$seed.jsonl"
  make_set "$set_file" "$seed" 1-8
  solve "s${seed}_default" "$set_file" --n 4
  if [ "$seed" = "${seeds[0]}" ]; then thinking_runs "s$seed" "$set_file"; else budget_runs "s$seed" "$set_file"; fi
done

first="${seeds[0]}"
for seed in "${seeds[@]:0:2}"; do  # sampling temperature: both models at each of TEMPS, on the first two seeds
  for temp in ${TEMPS:-0.5 0.3}; do
    solve "s${seed}_default_t$temp" "$out/s$seed.jsonl" --n 4 --temperature "$temp"
    solve "s${seed}_tb512_t$temp" "$out/s$seed.jsonl" --model "$thinker" --strategy thinking-budget --thinking-budget 512 --n 4 --temperature "$temp"
  done
done

far="$out/s${first}_far.jsonl"
make_set "$far" "$first" 9-10
solve "s${first}_far_default" "$far" --n 4
solve "s${first}_far_tb768" "$far" --model "$thinker" --strategy thinking-budget --thinking-budget 768 --n 4

solve "s${first}_axes_free" "$out/s$first.jsonl" --model "$thinker" --max-new-tokens 1024 --n "$axes_n"
axes=("$out/s${first}_axes_free.jsonl")
for b in 64 128 256 512; do
  solve "s${first}_axes_tb$b" "$out/s$first.jsonl" --model "$thinker" --strategy thinking-budget --thinking-budget "$b" --n "$axes_n"
  axes+=("$out/s${first}_axes_tb$b.jsonl")
done
solve "s${first}_axes_default" "$out/s$first.jsonl" --n "$axes_n"
{ echo; echo "## s${first} axes: tts curve s${first}_axes_free.jsonl s${first}_axes_tb{64,128,256,512}.jsonl"; } >> "$report"
"${tts[@]}" curve "${axes[@]}" --out-dir "$out/s${first}_axes" --no-plots \
  | awk '/^can these answers/ {skip = 1} /^== |^parallel vs sequential/ {skip = 0} !skip' >> "$report"
{ echo; echo "## s${first} default at N = 1..$axes_n: tts curve s${first}_axes_default.jsonl"; } >> "$report"
"${tts[@]}" curve "$out/s${first}_axes_default.jsonl" --out-dir "$out/s${first}_axes_default" --no-plots | sed '/^can these answers/,$d' >> "$report"
echo "$report"
