#!/usr/bin/env bash
# The project's one test command:
#
#   ./tests/run.sh                       every step
#   ./tests/run.sh STEP ...              only these steps (./tests/run.sh --list names them)
#   ./tests/run.sh rust -- --test corpus extra arguments for `cargo test` in the rust step
#
# First it installs what the chosen steps need and the machine lacks, with
# tests/setup.sh (system packages, the Python venv .venv with the peer
# implementations, .venv-zarr3 with zarr-python 3, cargo-fuzz, the pinned
# Miri toolchain); a second run installs nothing. Then it runs the steps:
#
#   rust       cargo check -p n5 --lib (the library without HDF5 support
#              builds), then cargo test --all-targets --features hdf5 with
#              N5_PEER_PYTHON pointing at the venv, so tests/peers.rs checks
#              that the peers read what libn5 writes (and h5py the HDF5 files
#              it writes), and N5_ZARR3_PYTHON at .venv-zarr3, so
#              tests/zarr_peers.rs checks Zarr both ways with zarr-python 3;
#              N5_NWB_PYTHON at .venv-nwb (zarr-python 3.4, hdmf-zarr, pynwb),
#              so tests/zarr_types.rs checks every Zarr data type both ways
#              and tests/nwb_roundtrip.rs that pynwb reads libn5's NWB files;
#              N5_NWB_LEGACY_PYTHON at .venv-nwb-legacy (hdmf-zarr 0.13,
#              zarr-python 2.18), so it checks the legacy Zarr v2 ones too;
#              tests/zarr_hdf5_write.rs checks the HDF5 shards libn5 writes
#              with h5py, hdf5plugin, h5dump and h5repack (hdf5-tools);
#              the storage tests start SeaweedFS, fake-gcs-server and nginx
#              on loopback (testkit/)
#   cli        cargo test -p n5-cli --all-targets --features n5/hdf5: every
#              subcommand of the n5 tool against the peer corpus and
#              containers the tests write (on disk, and on the loopback
#              servers through testkit/); the library with HDF5 support,
#              as the rust step and CMake build it
#   c          cmake --workflow --preset ci: the release library through CMake
#              and every ctest test (C tests, the same under valgrind,
#              examples, packaging, the Python cffi and Octave MEX tests)
#   c-debug    cmake --workflow --preset debug: the same with cargo's dev
#              profile, where freed handles are detected
#   sanitize   cmake --workflow --preset sanitize: the C tests and examples
#              built with AddressSanitizer and UndefinedBehaviorSanitizer
#   fuzz       fuzz/run.sh 15: every fuzz target for 15 seconds, after the
#              inputs kept in fuzz/regressions
#   miri       tests/miri.sh: the C layer's unit tests under Miri
#   viewer     tests/viewer/check_pyramid.py: neuroglancer 2.41.2 (.venv-viewer)
#              in headless Chromium opens an N5 and an OME-NGFF 0.5 pyramid
#              that `n5 pyramid` built, served on 127.0.0.1 and must report each level's scale and
#              origin as the pyramid contract says, and read back the stored
#              values; the pyramids and the report are in build/viewer
#
# Every step runs even after another failed; a summary comes last, and the
# exit status is non-zero when any step failed. A step whose tools are
# missing fails; nothing is skipped silently: N5_REQUIRE_SERVERS=1 makes a
# test whose server binary is missing fail instead of skipping. Set PYTHON to
# choose the interpreter that creates the venv (default: python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/build/tools/bin:$PATH"

say() { printf '[run.sh] %s\n' "$*" >&2; }

STEPS=(rust cli c c-debug sanitize fuzz miri viewer)
# What tests/setup.sh installs for each step.
needs() {
    case $1 in
        rust) echo build cxx hdf5-tools venv zarr3py nwb nwblegacy servers ;;
        cli) echo build servers ;;
        c | c-debug) echo build cxx binutils valgrind octave venv ;;
        sanitize) echo build cxx ;;
        fuzz) echo build cxx fuzz ;;
        miri) echo miri ;;
        viewer) echo build viewer ;;
    esac
}
describe() {
    case $1 in
        rust) echo "Rust tests: cargo test --all-targets --features hdf5 (peers from .venv, .venv-zarr3, .venv-nwb and .venv-nwb-legacy)" ;;
        cli) echo "n5 tool tests: cargo test -p n5-cli --all-targets --features n5/hdf5" ;;
        c) echo "C library, release: cmake --workflow --preset ci" ;;
        c-debug) echo "C library, debug: cmake --workflow --preset debug" ;;
        sanitize) echo "C library, ASan and UBSan: cmake --workflow --preset sanitize" ;;
        fuzz) echo "fuzzing, 15 s per target: fuzz/run.sh 15" ;;
        miri) echo "Miri: tests/miri.sh" ;;
        viewer) echo "neuroglancer in headless Chromium reads N5 and OME-NGFF 0.5 pyramids: tests/viewer/check_pyramid.py" ;;
    esac
}

chosen=()
cargo_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --list)
            for s in "${STEPS[@]}"; do printf '%-9s %s (needs: %s)\n' "$s" "$(describe "$s")" "$(needs "$s")"; done
            exit 0 ;;
        --)
            shift
            cargo_args=("$@")
            break ;;
        -*)
            # Arguments for cargo test, as before steps had names.
            cargo_args=("$@")
            break ;;
        *)
            case " ${STEPS[*]} " in
                *" $1 "*) chosen+=("$1") ;;
                *) say "unknown step '$1' (steps: ${STEPS[*]})"; exit 2 ;;
            esac ;;
    esac
    shift
done
[ ${#chosen[@]} -gt 0 ] || chosen=("${STEPS[@]}")

components=()
for s in "${chosen[@]}"; do
    # shellcheck disable=SC2207
    components+=($(needs "$s"))
done
mapfile -t components < <(printf '%s\n' "${components[@]}" | awk '!seen[$0]++')
say "tests/setup.sh ${components[*]}"
"$ROOT/tests/setup.sh" "${components[@]}"

if [ -x "$ROOT/.venv/bin/python" ]; then
    export N5_PEER_PYTHON="$ROOT/.venv/bin/python"
    "$N5_PEER_PYTHON" - <<'PY' >&2
import importlib.metadata as m
print("[run.sh] peers: " + ", ".join(
    "%s %s" % (p, m.version(p)) for p in ("tensorstore", "z5py", "zarr", "numcodecs", "numpy", "fsspec", "cffi", "h5py", "hdf5plugin")))
PY
fi
if [ -x "$ROOT/.venv-zarr3/bin/python" ]; then
    export N5_ZARR3_PYTHON="$ROOT/.venv-zarr3/bin/python"
    "$N5_ZARR3_PYTHON" - <<'PY' >&2
import importlib.metadata as m
print("[run.sh] zarr-python 3 peer: " + ", ".join(
    "%s %s" % (p, m.version(p)) for p in ("zarr", "numcodecs", "numpy", "crc32c")))
PY
fi

if [ -x "$ROOT/.venv-nwb/bin/python" ]; then
    export N5_NWB_PYTHON="$ROOT/.venv-nwb/bin/python"
    "$N5_NWB_PYTHON" - <<'PY' >&2
import importlib.metadata as m
print("[run.sh] NWB peers: " + ", ".join(
    "%s %s" % (p, m.version(p)) for p in ("pynwb", "hdmf-zarr", "zarr", "numcodecs", "numpy")))
PY
fi

if [ -x "$ROOT/.venv-nwb-legacy/bin/python" ]; then
    export N5_NWB_LEGACY_PYTHON="$ROOT/.venv-nwb-legacy/bin/python"
    "$N5_NWB_LEGACY_PYTHON" - <<'PY' >&2
import importlib.metadata as m
print("[run.sh] legacy NWB peers: " + ", ".join(
    "%s %s" % (p, m.version(p)) for p in ("pynwb", "hdmf-zarr", "zarr", "numcodecs", "numpy")))
PY
fi

# The pyramids the viewer step opens, written under $1: sets VIEWER_N5 and
# VIEWER_NGFF (the multiscale groups) and VIEWER_EXPECT (their levels, as
# tests/viewer/check_pyramid.py reads them): `n5 pyramid` of the volume
# tests/viewer/make_fixture.py writes, into N5 and into sharded Zarr v3.
viewer_pyramids() {
    local out=$1
    "$ROOT/.venv-viewer/bin/python" tests/viewer/make_fixture.py "$out" || return
    # The tool as the cli step builds it (dev profile, HDF5 support): no
    # second build of the workspace.
    cargo build -p n5-cli --features n5/hdf5 || return
    rm -rf "$out/pyramid.n5" "$out/pyramid.zarr"
    "$ROOT/target/debug/n5" -q pyramid "$out/source.n5/raw" "$out/pyramid.n5/raw" || return
    "$ROOT/target/debug/n5" -q pyramid "$out/source.n5/raw" "$out/pyramid.zarr/raw" \
        --shard 128,128,64 -c zstd || return
    VIEWER_N5="$out/pyramid.n5/raw"
    VIEWER_NGFF="$out/pyramid.zarr/raw"
    VIEWER_EXPECT="$out/expect.json"
}

run_viewer() {
    local out="$ROOT/build/viewer"
    mkdir -p "$out"
    viewer_pyramids "$out" || return
    say "viewer: report in ${out#"$ROOT"/}/report.json"
    "$ROOT/.venv-viewer/bin/python" tests/viewer/check_pyramid.py \
        --n5 "$VIEWER_N5" --ngff "$VIEWER_NGFF" --expect "$VIEWER_EXPECT" > "$out/report.json"
}

run_step() {
    case $1 in
        rust)
            cargo check -p n5 --lib &&
                cargo test --all-targets --features hdf5 --no-fail-fast ${cargo_args[@]+"${cargo_args[@]}"} ;;
        cli) cargo test -p n5-cli --all-targets --features n5/hdf5 --no-fail-fast ;;
        c) cmake --workflow --preset ci ;;
        c-debug) cmake --workflow --preset debug ;;
        sanitize) cmake --workflow --preset sanitize ;;
        fuzz) ./fuzz/run.sh 15 ;;
        miri) ./tests/miri.sh ;;
        viewer) run_viewer ;;
    esac
}

# Tests that need a server (testkit/) fail, instead of skipping, when its
# binary is missing: setup.sh has installed them for these steps.
export N5_REQUIRE_SERVERS=1
# The same for the peers' interpreters tests/zarr_peers.rs runs (.venv and
# .venv-zarr3, installed above for the rust step).
export N5_REQUIRE_PEERS=1

results=()
failed=0
for s in "${chosen[@]}"; do
    say "== $s: $(describe "$s")"
    start=$SECONDS
    if run_step "$s"; then
        results+=("passed  $s ($((SECONDS - start)) s): $(describe "$s")")
    else
        results+=("FAILED  $s ($((SECONDS - start)) s): $(describe "$s")")
        failed=1
    fi
done

say "summary:"
for r in "${results[@]}"; do say "  $r"; done
exit "$failed"
