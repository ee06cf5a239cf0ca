#!/usr/bin/env bash
# Miri over the library's unit tests that reach its unsafe code without C:
# ./tests/miri.sh [--install]
#
# Miri interprets Rust and reports undefined behaviour: out-of-bounds or
# misaligned accesses, use after free, invalid pointer provenance, data
# races, leaks. It cannot run foreign (C) code, so it checks the C layer
# (src/ffi: raw pointers and lengths from C turned into slices and strings,
# the handle cells and their debug quarantine, the panic boundary, the
# per-thread last error), driven from Rust by the unit tests in
# src/ffi/tests.rs, including one that calls every pointer-taking function
# with raw blocks; and the safe code those paths run (block wire format and
# byte order, region copies, the worker pool, container options). The codec
# bindings call C, which Miri cannot run; they are covered by
# AddressSanitizer instead (fuzz/run.sh, the CMake preset `sanitize`), and
# the tests that reach them are skipped here, as are src/os.rs's own tests,
# whose buffers of several MiB are far too slow to interpret.
#
# Miri needs a nightly toolchain. This script uses the one pinned in
# tests/toolchains.env, with its `miri` and `rust-src` components, which
# `tests/setup.sh miri` installs (tests/run.sh calls it). Without them the
# script says so and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/toolchains.env
TOOLCHAIN="${N5_MIRI_TOOLCHAIN:-$MIRI_TOOLCHAIN}"
if ! cargo "+$TOOLCHAIN" miri --version >/dev/null 2>&1; then
    echo "tests/miri.sh: Miri is not installed for $TOOLCHAIN: run tests/setup.sh miri" >&2
    exit 1
fi
# Isolation off: the tests create containers in the temporary directory.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
cargo "+$TOOLCHAIN" miri test --lib -- \
    ffi:: block:: os:: parallel:: region:: container::
