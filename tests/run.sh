#!/usr/bin/env bash
# The project's one test command: ./tests/run.sh [extra cargo test args]
#
# 1. Creates (or reuses) a Python venv at .venv in the repository root and
#    installs the peer N5 implementations and FFI tools listed in
#    tests/peers/requirements.txt (tensorstore, z5py, zarr 2, numcodecs,
#    numpy, fsspec, cffi). The install is skipped when .venv already holds
#    exactly these requirements (a marker file records the hash of the
#    requirements and the Python version).
# 2. Runs the Rust tests: `cargo test --all-targets --no-fail-fast` with
#    N5_PEER_PYTHON pointing at the venv's python, so that tests/peers.rs
#    checks that the peers read what libn5 writes.
#    Then the `n5` command-line tool's tests: `cargo test -p n5-cli
#    --all-targets` (cli/tests: every subcommand against the peer corpus and
#    against containers the tests write).
# 3. Runs `cmake --workflow --preset ci`: builds the release library through
#    CMake and runs every ctest test: the C tests (and again under valgrind),
#    the examples, the packaging tests (symbols, SONAME, install, CMake and
#    pkg-config consumers), the Python cffi ABI test and the Octave MEX test.
# 4. Runs `cmake --workflow --preset debug`: the same with cargo's dev
#    profile, where freed handles are detected (N5_ERR_INVALID_HANDLE).
# 5. Runs `cmake --workflow --preset sanitize`: the C tests and examples
#    built with AddressSanitizer and UndefinedBehaviorSanitizer against the
#    dev-profile library.
# 6. Runs `fuzz/run.sh 15`: every fuzz target for 15 seconds (a minute in
#    all), seeded from the peer corpus, after the inputs kept in
#    fuzz/regressions (needs cargo-fuzz; see fuzz/README.md).
# 7. Runs `tests/miri.sh`: the C layer's unit tests under Miri (needs the
#    pinned nightly toolchain with Miri; see the script).
#
# Every step runs even after a failure; a summary comes last, and the exit
# status is non-zero when any step failed. Set PYTHON to choose the
# interpreter that creates the venv (default: python3).
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
    && "$VENV/bin/python" -c 'import tensorstore, z5py, zarr, numcodecs, numpy, fsspec, cffi' 2>/dev/null; then
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
    "$VENV/bin/python" -c 'import tensorstore, z5py, zarr, numcodecs, numpy, fsspec, cffi'
    echo "$want_hash" > "$MARKER"
fi
"$VENV/bin/python" - <<'PY' >&2
import importlib.metadata as m
print("[run.sh] peers: " + ", ".join(
    "%s %s" % (p, m.version(p)) for p in ("tensorstore", "z5py", "zarr", "numcodecs", "numpy", "fsspec", "cffi")))
PY

export N5_PEER_PYTHON="$VENV/bin/python"
results=()
failed=0
step() {
    local name=$1
    shift
    say "== $name: $*"
    if "$@"; then
        results+=("passed  $name: $*")
    else
        results+=("FAILED  $name: $*")
        failed=1
    fi
}

step "Rust tests" cargo test --all-targets --no-fail-fast "$@"
step "n5 tool tests" cargo test -p n5-cli --all-targets --no-fail-fast
step "C library, release" cmake --workflow --preset ci
step "C library, debug" cmake --workflow --preset debug
step "C library, ASan and UBSan" cmake --workflow --preset sanitize
step "fuzzing, 15 s per target" ./fuzz/run.sh 15
step "Miri" ./tests/miri.sh

say "summary:"
for r in "${results[@]}"; do say "  $r"; done
exit "$failed"
