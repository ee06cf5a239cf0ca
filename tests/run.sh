#!/usr/bin/env bash
# The project's one test command: ./tests/run.sh [extra cargo test args]
#
# 1. Creates (or reuses) a Python venv at .venv in the repository root and
#    installs the peer N5 implementations listed in tests/peers/requirements.txt
#    (tensorstore, z5py, zarr 2, numcodecs, numpy, fsspec). The install is
#    skipped when .venv already holds exactly these requirements (a marker file
#    records the hash of the requirements and the Python version).
# 2. Runs `cargo test --all-targets --no-fail-fast` (every test binary runs,
#    even after a failure) with N5_PEER_PYTHON pointing at the venv's python,
#    so that tests/peers.rs checks that the peers read what libn5 writes.
#
# Exits with cargo's status. Set PYTHON to choose the interpreter that creates
# the venv (default: python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
REQ="$ROOT/tests/peers/requirements.txt"
MARKER="$VENV/.n5-peers-requirements.sha256"
PYTHON="${PYTHON:-python3}"

say() { printf '[run.sh] %s\n' "$*" >&2; }

if [[ -e "$VENV" ]] && ! "$VENV/bin/python" -c 'pass' 2>/dev/null; then
    say "removing broken venv $VENV (its python does not run)"
    rm -rf "$VENV"
fi

want_hash="$( { cat "$REQ"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"

if [[ -x "$VENV/bin/python" ]] && [[ -f "$MARKER" ]] && [[ "$(cat "$MARKER")" == "$want_hash" ]] \
    && "$VENV/bin/python" -c 'import tensorstore, z5py, zarr, numcodecs, numpy, fsspec' 2>/dev/null; then
    say "reusing $VENV (peers already installed for this requirements.txt)"
else
    if [[ ! -x "$VENV/bin/python" ]]; then
        say "creating venv: $PYTHON -m venv $VENV"
        "$PYTHON" -m venv "$VENV"
    else
        say "venv $VENV exists but its peers are missing or out of date"
    fi
    say "installing peers: $VENV/bin/python -m pip install -r tests/peers/requirements.txt"
    rm -f "$MARKER"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQ"
    "$VENV/bin/python" -c 'import tensorstore, z5py, zarr, numcodecs, numpy, fsspec'
    echo "$want_hash" > "$MARKER"
fi
"$VENV/bin/python" - <<'PY' >&2
import importlib.metadata as m
print("[run.sh] peers: " + ", ".join(
    "%s %s" % (p, m.version(p)) for p in ("tensorstore", "z5py", "zarr", "numcodecs", "numpy", "fsspec")))
PY

export N5_PEER_PYTHON="$VENV/bin/python"
say "running: N5_PEER_PYTHON=$N5_PEER_PYTHON cargo test --all-targets --no-fail-fast $*"
exec cargo test --all-targets --no-fail-fast "$@"
