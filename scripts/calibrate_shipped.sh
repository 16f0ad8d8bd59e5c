#!/usr/bin/env bash
# Fit p_correct for a shipped checkpoint and check it on sets it never saw, through the product path:
# `tts train make-problems`, `tts solve --calibration none` on the fit sets, `tts calibrate`, then `tts solve` with
# the fit on fresh test sets and `tts curve` (its selective view: ECE, AUROC, AURC, wrong answers at p >= .9).
#   bash scripts/calibrate_shipped.sh default   -> tts_engine/assets/default_model/calibration.json
#   bash scripts/calibrate_shipped.sh tango     -> tts_engine/assets/tango/verifier/calibration.json
# Fit sets: seed 8101 (levels 1-10, 15 a level) and 8103 (levels 1-10, 10 a level, values up to 99999). Test sets,
# never used to choose anything: 8301 and 8302 (levels 1-10, 15 a level) and 8304 (values up to 99999). The
# checkpoints were trained on levels 1-8 with values up to 9999, so levels 9-10 and the large values lie past
# them. Every solve resumes (rerun to finish); tables go to docs/runs/trust_NAME_SET.txt. Env: N (16), OUT
# (runs/cal), TEST_SETS (the test seeds to run, e.g. "8301"), FIT=0 (keep the shipped fit, only test).
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: calibrate_shipped.sh default|tango}"
tts="${TTS:-.venv/bin/tts}"
n="${N:-16}"
out="${OUT:-runs/cal}"
case "$name" in
  default) args=(); target=tts_engine/assets/default_model/calibration.json ;;
  tango)
    args=(--model tts_engine/assets/tango/generator --verifier-kind process --verifier-model tts_engine/assets/tango/verifier)
    target=tts_engine/assets/tango/verifier/calibration.json ;;
  *) echo "unknown checkpoint $name: default or tango" >&2; exit 2 ;;
esac
mkdir -p "$out" docs/runs

make_set() {  # seed -> the set's file (made once)
  local seed="$1" file
  case "$seed" in
    8103|8304) file="$out/s${seed}_big.jsonl"; [ -f "$file" ] || "$tts" train make-problems --seed "$seed" --levels 1-10 --per-level 10 --max-value 99999 --out "$file" >/dev/null ;;
    *) file="$out/s$seed.jsonl"; [ -f "$file" ] || "$tts" train make-problems --seed "$seed" --levels 1-10 --per-level 15 --out "$file" >/dev/null ;;
  esac
  echo "$file"
}

if [ "${FIT:-1}" != 0 ]; then
  fits=()
  for seed in 8101 8103; do
    set_file=$(make_set "$seed")
    results="$out/${name}_$(basename "$set_file")"
    "$tts" solve "$set_file" "${args[@]}" --n "$n" --calibration none --out "$results" --quiet > "${results%.jsonl}.txt"
    fits+=("$results")
  done
  "$tts" calibrate "${fits[@]}" --out "$target" --plot "$out/${name}_calibration.png" | tee "docs/runs/trust_${name}_fit.txt"
fi
for seed in ${TEST_SETS:-8301 8302 8304}; do
  set_file=$(make_set "$seed")
  set=$(basename "$set_file" .jsonl)
  results="$out/${name}_test_$set.jsonl"
  "$tts" solve "$set_file" "${args[@]}" --n "$n" --out "$results" --quiet > "${results%.jsonl}.txt"
  file="docs/runs/trust_${name}_$set.txt"
  echo "# tts train make-problems --seed $seed ...; tts solve $set.jsonl ${args[*]} --n $n --out r.jsonl; tts curve r.jsonl" > "$file"
  grep -A3 "^p_correct of" "${results%.jsonl}.txt" >> "$file" || true
  "$tts" curve "$results" --out-dir "$out/${name}_${set}_curves" --label "$set" --no-plots | sed -n '/^can these answers/,/^  \*/p' >> "$file"
  echo "$file"
done
