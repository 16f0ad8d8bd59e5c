#!/usr/bin/env bash
# The GPU check, for a GPU machine without network (the lent H200): every GPU figure of the project beside
# its baseline, in one bounded run (about 8 minutes), written to a JSON report. See docs/gpu.md.
#
#   bash scripts/device_check.sh --prepare    # on a machine with network: download the few wheels the GPU
#                                             # machine lacks (math-verify and its parser, orjson) into wheels/
#   bash scripts/device_check.sh [OPTIONS]    # on the GPU machine: install those wheels and this repository
#                                             # without network, then run every section
#   bash scripts/device_check.sh --dry        # any machine: the same sections on CPU, tiny shapes, Triton's
#                                             # interpreter (the test suite runs this)
#
# OPTIONS go to `python -P -m device_check`: --out PATH (default $OUT/device_check.json when OUT is set, else
# runs/), --budget SECONDS (default 480), --only SECTION (repeatable). Through the device tool, from the
# repository root: command `bash scripts/device_check.sh`, carry ["wheels"], timeout_s 570.
#
# Environment: PYTHON (default: .venv/bin/python for --prepare and --dry when it exists, else python3),
# DEVICE_CHECK_WHEELS (default wheels), DEVICE_CHECK_SITE (where the wheels are installed, default
# /tmp/device_check_site), DEVICE_PYTHON_VERSION (the GPU machine's Python, default 3.12).
set -euo pipefail
cd "$(dirname "$0")/.."

WHEELS=${DEVICE_CHECK_WHEELS:-wheels}
SITE=${DEVICE_CHECK_SITE:-/tmp/device_check_site}
DEVICE_PYTHON_VERSION=${DEVICE_PYTHON_VERSION:-3.12}
# What the GPU machine's image lacks, pinned to the versions the CPU test environment runs (latex2sympy2 and
# antlr4 are math-verify's parser; sympy is there already). setuptools builds the editable install offline.
RUNTIME=(math-verify==0.9.0 latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2 orjson==3.13.0)
BUILD=(setuptools==80.9.0)

local_python() {
    if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"; elif [[ -x .venv/bin/python ]]; then echo .venv/bin/python
    else echo python3; fi
}

prepare() {
    local py
    py=$(local_python)
    mkdir -p "$WHEELS/build"
    rm -f "$WHEELS"/*.whl "$WHEELS"/build/*.whl
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version "$DEVICE_PYTHON_VERSION" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHEELS" "${RUNTIME[@]}"
    "$py" -m pip download -q --no-deps --only-binary=:all: -d "$WHEELS/build" "${BUILD[@]}"
    ls -l "$WHEELS" "$WHEELS/build"
    du -sh "$WHEELS"
    echo "carry [\"$WHEELS\"] with the device tool (at most 64 MiB travel with the working tree)"
}

# shellcheck source=scripts/device_install.sh
source scripts/device_install.sh

case "${1:-}" in
    --prepare)
        prepare
        ;;
    --dry)
        PYTHON=$(local_python)
        export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
        exec "$PYTHON" -P -m device_check "$@"
        ;;
    *)
        PYTHON=${PYTHON:-python3}
        unset TRITON_INTERPRET
        install_offline
        export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
        exec "$PYTHON" -P -m device_check "$@"
        ;;
esac
