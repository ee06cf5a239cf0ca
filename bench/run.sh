#!/usr/bin/env bash
# The libn5 benchmark in one command: bench/run.sh [n5-bench options], e.g.
#
#   bench/run.sh --quick                       # 256³, a few minutes
#   bench/run.sh --markdown bench/RESULTS.md   # 512³, the table for the repository
#
# Makes sure the project's Python venv (.venv, with tensorstore and z5py, the
# peers) exists, creating it as ./tests/run.sh does when it is missing, then
# runs `cargo run --release -p n5-bench -- "$@"` from the repository root.
# Without Python the benchmark still runs, with the peers' columns empty.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"

if ! "$VENV/bin/python" -c 'import tensorstore, z5py, numpy' 2>/dev/null; then
    if command -v "$PYTHON" >/dev/null; then
        echo "[bench/run.sh] creating $VENV with the peers (tests/peers/requirements.txt)" >&2
        [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r tests/peers/requirements.txt \
            || echo "[bench/run.sh] installing the peers failed; running without them" >&2
    else
        echo "[bench/run.sh] no $PYTHON: running without the peers" >&2
    fi
fi

exec cargo run --release -p n5-bench -- "$@"
