# Sourced by the scripts that run on the lent GPU machine (device_check.sh, gpu_train.sh): `install_offline`
# installs the carried wheels (math-verify, its parser, orjson: `bash scripts/device_check.sh --prepare` fetches
# them where there is network) into $SITE and this repository in editable mode, without network.
# Needs PYTHON, WHEELS and SITE set; exports PYTHONPATH.

install_offline() {
    if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
        echo "WARNING: no wheels in $WHEELS/ (run 'bash scripts/device_check.sh --prepare' where there is network" \
             "and carry $WHEELS): the sections that need math-verify or orjson will fail" >&2
    else
        "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
            "$WHEELS"/*.whl
        export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    fi
    # The repository's folders map into tts_engine.* only when installed (package-dir in pyproject.toml).
    if ! "$PYTHON" -c "import importlib.util as u, sys; sys.exit(u.find_spec('tts_engine.kernels') is None)" \
            2>/dev/null; then
        "$PYTHON" -m pip install -q --no-index --find-links "$WHEELS/build" --no-deps -e . ||
            "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation -e .
    fi
}
