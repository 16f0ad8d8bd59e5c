#!/usr/bin/env bash
# Fit p_correct for a shipped checkpoint under every strategy family and check it on sets it never saw, through the
# product path: `tts train make-problems`, `tts solve --calibration none` of each strategy on the fit sets (fixed at
# N = 8 and 64: the long runs teach the futility stop's rescue fit), one
# `tts calibrate` over all of them (a fit per strategy family: fixed, adaptive, deepconf, search), then `tts solve`
# of each strategy with the fit on fresh test sets and `tts curve` (its selective view: ECE, AUROC, AURC, wrong
# answers at p >= .9, and the share of right answers that --abstain-below 0.5 would withhold).
#   bash scripts/calibrate_shipped.sh default   -> tts_engine/assets/default_model/calibration.json
#   bash scripts/calibrate_shipped.sh tango     -> tts_engine/assets/tango/verifier/calibration.json
# Fit sets: seed 8101 (levels 1-10, 15 a level) and 8103 (levels 1-10, 10 a level, values up to 99999). Test sets,
# never used to choose anything: 8301 (levels 1-10, 15 a level) and 8304 (values up to 99999). The checkpoints were
# trained on levels 1-8 with values up to 9999, so levels 9-10 and the large values lie past them. Every solve
# resumes (rerun to finish); the fit's report goes to docs/runs/trust_NAME_fit.txt, each test table to
# docs/runs/trust_NAME_strategies.txt, one part (`## STRATEGY SET`) each.
# Env: N (8), STRATEGIES ("fixed adaptive-n deepconf beam particle"), OUT (runs/cal), TEST_SETS ("8301 8304"),
# FIT=0 (keep the shipped fit, only test), TTS (the tts command).
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: calibrate_shipped.sh default|tango}"
read -r -a tts <<< "${TTS:-.venv/bin/tts}"
n="${N:-8}"
out="${OUT:-runs/cal}"
strategies="${STRATEGIES:-fixed adaptive-n deepconf beam particle}"
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
    8103|8304) file="$out/s${seed}_big.jsonl"; [ -f "$file" ] || "${tts[@]}" train make-problems --seed "$seed" --levels 1-10 --per-level 10 --max-value 99999 --out "$file" >/dev/null ;;
    *) file="$out/s$seed.jsonl"; [ -f "$file" ] || "${tts[@]}" train make-problems --seed "$seed" --levels 1-10 --per-level 15 --out "$file" >/dev/null ;;
  esac
  echo "$file"
}

fit_runs() {  # strategy, calibration[, n, label] -> the strategy's results on both fit sets (made once; printed)
  local strategy="$1" calibration="$2" samples="${3:-$n}" label="${4:-$1}" seed set_file results
  for seed in 8101 8103; do
    set_file=$(make_set "$seed")
    results="$out/${name}_${label}_$(basename "$set_file")"
    "${tts[@]}" solve "$set_file" "${args[@]}" --strategy "$strategy" --n "$samples" --calibration "$calibration" \
      --out "$results" --quiet > "${results%.jsonl}.txt"
    echo "$results"
  done
}

if [ "${FIT:-1}" != 0 ]; then
  # Fixed sampling first: its fit starts the strategies that stop on p_correct (adaptive, deepconf), so that their
  # fit runs stop the way they will stop once calibrated; their own fit is then made on those runs.
  read -r -a fixed_runs <<< "$(fit_runs fixed none | tr '\n' ' ')"
  # N = 64 too: the futility stop's rescue fit learns from long runs of rejected samples (and p_correct sees N = 64)
  read -r -a long_runs <<< "$(fit_runs fixed none 64 fixed64 | tr '\n' ' ')"
  fits=("${fixed_runs[@]}" "${long_runs[@]}")
  for strategy in $strategies; do
    [ "$strategy" = fixed ] && continue
    family=$("${PY:-.venv/bin/python}" -P -c "from tts_engine.strategies.registry import family_of; print(family_of('$strategy'))")
    start="$out/${name}_start_${family}.json"
    [ -f "$start" ] || "${tts[@]}" calibrate "${fixed_runs[@]}" --family "$family" --holdout 0 --out "$start" > /dev/null
    read -r -a runs <<< "$(fit_runs "$strategy" "$start" | tr '\n' ' ')"
    fits+=("${runs[@]}")
  done
  "${tts[@]}" calibrate "${fits[@]}" --out "$target" --plot "$out/${name}_calibration.png" | tee "docs/runs/trust_${name}_fit.txt"
fi
file="docs/runs/trust_${name}_strategies.txt"
: > "$file"
for seed in ${TEST_SETS:-8301 8304}; do
  set_file=$(make_set "$seed")
  set=$(basename "$set_file" .jsonl)
  for strategy in $strategies; do
    results="$out/${name}_${strategy}_test_$set.jsonl"
    "${tts[@]}" solve "$set_file" "${args[@]}" --strategy "$strategy" --n "$n" --calibration "$target" --out "$results" \
      --quiet > "${results%.jsonl}.txt"
    {
      echo "## $strategy $set"
      echo "# tts train make-problems --seed $seed ...; tts solve $set.jsonl ${args[*]} --strategy $strategy --n $n --out r.jsonl; tts curve r.jsonl"
      grep -A3 "^p_correct of" "${results%.jsonl}.txt" || true
      "${tts[@]}" curve "$results" --out-dir "$out/${name}_${strategy}_${set}_curves" --label "$set" --no-plots \
        | sed -n '/^can these answers/,/^  \*/p'
      echo
    } >> "$file"
  done
done
echo "$file"
