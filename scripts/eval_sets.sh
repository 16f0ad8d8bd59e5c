#!/usr/bin/env bash
# A checkpoint on the bundled set and on fresh sets, through the product path: `tts train make-problems`, then
# `tts solve --n 64 --out`, then `tts curve`; each curve table goes to docs/runs/eval_NAME_SET_n64.txt with the
# commands that made it on its first line (the README's tables quote these files).
#   bash scripts/eval_sets.sh NAME [SEED ...]          e.g. bash scripts/eval_sets.sh default 4242 90210
# Env: MODEL (a checkpoint; default: the embedded model), N (64), OUT (runs/eval), SOLVE_ARGS (more tts solve
# options), LEVELS (the fresh sets' levels, e.g. 6-8; default the task's 1-8; sets are then named sSEED_lLEVELS),
# BUNDLED (0 leaves the bundled set out; it is first by default). About 1.5 min per set on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
name="$1"; shift
tts="${TTS:-.venv/bin/tts}"
n="${N:-64}"
out="${OUT:-runs/eval}"
mkdir -p "$out" docs/runs
model_args=()
[ -n "${MODEL:-}" ] && model_args=(--model "$MODEL")
sets=("$@")
[ "${BUNDLED:-1}" != 0 ] && sets=(bundled "${sets[@]}")
level_args=()
[ -n "${LEVELS:-}" ] && level_args=(--levels "$LEVELS")
for set in "${sets[@]}"; do
  problems=()
  make=""
  if [ "$set" != "bundled" ]; then
    seed="$set"
    set="s$seed${LEVELS:+_l$LEVELS}"
    "$tts" train make-problems --seed "$seed" "${level_args[@]}" --out "$out/$set.jsonl" >/dev/null
    problems=("$out/$set.jsonl")
    make="tts train make-problems --seed $seed ${LEVELS:+--levels $LEVELS }--out $set.jsonl; "
  fi
  results="$out/${name}_${set}_n$n.jsonl"
  rm -f "$results"
  "$tts" solve "${problems[@]}" "${model_args[@]}" --n "$n" ${SOLVE_ARGS:-} --out "$results" --quiet \
    > "$out/solve_${name}_${set}_n$n.txt"
  file="docs/runs/eval_${name}_${set}_n$n.txt"
  shown="${problems[*]:+$set.jsonl }"
  echo "# ${make}tts solve ${shown}${MODEL:+--model $MODEL }--n $n ${SOLVE_ARGS:-}--out r.jsonl; tts curve r.jsonl --out-dir curves" > "$file"
  "$tts" curve "$results" --out-dir "$out/${name}_${set}_curves" --label "$set" >> "$file"
  grep "generated tokens / problem" "$out/solve_${name}_${set}_n$n.txt" | tail -1 >> "$file"
  echo "$file"
done
