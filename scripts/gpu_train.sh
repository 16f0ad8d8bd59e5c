#!/usr/bin/env bash
# A training run on the lent GPU machine in calls of bounded length, brought back as files the device tool returns.
#
#   bash scripts/gpu_train.sh RUN_DIR SECONDS TRAINER [OPTIONS...]
#       on the GPU machine: install the carried wheels and this repository without network (as device_check.sh
#       does), restore RUN_DIR from the parts in runs/gpu_parts/ when they were carried, run
#       `tts train TRAINER OPTIONS --out-dir RUN_DIR --device cuda --stop-after-s SECONDS` (it stops with a
#       checkpoint after the first step past SECONDS, or at its end), then pack RUN_DIR (checkpoints, optimizer
#       state, log) into $OUT/gpu_parts/ as parts of at most 15 MiB.
#   bash scripts/gpu_train.sh --unpack PARTS_DIR
#       here: restore the run the parts hold at its own path, to evaluate or export it, or to go on with
#       `tts train ... --device cpu` (a run saved on a GPU resumes on a CPU).
#   bash scripts/gpu_train.sh --pack RUN_DIR PARTS_DIR      the parts of a run, e.g. one started here
#   bash scripts/gpu_train.sh --dry RUN_DIR SECONDS TRAINER [OPTIONS...]
#       here: the same round trip with --device cpu and this checkout's environment, parts in runs/gpu_parts_dry/.
#
# Through the device tool, from the repository root (docs/training.md, "A run on the lent GPU machine"):
#   command  mkdir -p runs && cp -rn tts_engine/assets/default_model runs/default_l8 && bash scripts/gpu_train.sh
#            runs/tango_l8_gpu 480 tango --config training/recipes/tango_recompute_levels8.yaml
#   carry    ["wheels"]      timeout_s 570
# then `bash scripts/gpu_train.sh --unpack FILES_AT/gpu_parts`. To go on on the GPU machine, copy those parts to
# runs/gpu_parts/ and carry that too; but what travels is at most 64 MiB with the working tree, so a Tango pair's
# state (two models with their optimizer state, about 43 MB) does not fit beside this repository (about 41 MiB):
# such a run goes on here on the CPU instead.
set -euo pipefail
cd "$(dirname "$0")/.."

PART_BYTES=${GPU_TRAIN_PART_BYTES:-$((15 * 1024 * 1024))}

pack() {  # pack RUN_DIR DEST: RUN_DIR as a tar split into parts of at most PART_BYTES, and its path
    rm -rf "$2" && mkdir -p "$2"
    tar -cf - -C "$(dirname "$1")" "$(basename "$1")" | split -b "$PART_BYTES" -d -a 2 - "$2/run.tar.part"
    echo "$1" > "$2/run_dir"
    ls -l "$2"
}

unpack() {  # unpack PARTS_DIR: the run back at its own path (replaced, not merged)
    local run
    run=$(cat "$1/run_dir")
    rm -rf "$run" && mkdir -p "$(dirname "$run")"
    cat "$1"/run.tar.part* | tar -xf - -C "$(dirname "$run")"
    echo "restored $run from $1"
}

train() {  # train DEVICE PARTS_IN PARTS_OUT RUN_DIR SECONDS TRAINER OPTIONS...
    local device=$1 parts_in=$2 parts_out=$3 run=$4 seconds=$5
    shift 5
    if [[ -f "$parts_in/run_dir" ]]; then
        unpack "$parts_in"
    fi
    "$PYTHON" -P -c "from tts_engine.training.cli import train; train()" "$@" \
        --out-dir "$run" --device "$device" --stop-after-s "$seconds"
    tail -n 1 "$run/log.jsonl"
    pack "$run" "$parts_out"
}

case "${1:-}" in
    --unpack)
        unpack "$2"
        ;;
    --pack)
        pack "$2" "$3"
        ;;
    --dry)
        shift
        PYTHON=${PYTHON:-.venv/bin/python}
        train cpu runs/gpu_parts_dry runs/gpu_parts_dry "$@"
        ;;
    ""|-h|--help)
        sed -n '2,24p' "$0"
        ;;
    *)
        PYTHON=${PYTHON:-python3}
        WHEELS=${DEVICE_CHECK_WHEELS:-wheels}
        SITE=${DEVICE_CHECK_SITE:-/tmp/device_check_site}
        # shellcheck source=scripts/device_install.sh
        source scripts/device_install.sh
        install_offline
        export PYTHONUNBUFFERED=1
        train cuda runs/gpu_parts "${OUT:?set by the device tool: where files come back}/gpu_parts" "$@"
        ;;
esac
