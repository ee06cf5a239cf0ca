#!/usr/bin/env bash
# Fuzz libn5: ./fuzz/run.sh [SECONDS per target, default 60] [TARGET ...]
#
# Seeds each target from the peer corpus (fuzz/seeds.py, ../shared/corpus),
# then runs cargo fuzz (libFuzzer with AddressSanitizer) on every target in
# fuzz/fuzz_targets but hdf5_open, or on the ones named, for SECONDS each. A crash, a
# panic, a timeout of 10 s on one input, or a single allocation over 32 MiB
# (the largest block the targets use is 16 KiB, but a compressed varlength
# block may decode to 16 MiB) stops the run and fails it, leaving the input in fuzz/artifacts/<target>/. The inputs kept
# in fuzz/regressions/<target>/ (what earlier runs found) are run first,
# every time.
#
# Needs cargo-fuzz (`tests/setup.sh fuzz` installs the pinned version). cargo fuzz uses
# unstable compiler flags (-Zsanitizer); on a stable toolchain
# RUSTC_BOOTSTRAP=1 allows them, and this script sets it.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_EACH="${1:-60}"
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz is not installed: run tests/setup.sh fuzz" >&2
    exit 1
fi
export RUSTC_BOOTSTRAP=1
# A benign leak report from threads finishing their exit (see lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# Targets run only when named: hdf5_open hands libhdf5 damaged files, and
# libhdf5 1.10.8 crashes on some within seconds (fuzz/README.md), so a run
# of every target would fail by chance.
BY_NAME_ONLY=(hdf5_open)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list | grep -vxF -f <(printf '%s\n' "${BY_NAME_ONLY[@]}"))
fi
# seeds.py makes the HDF5 files of hdf5_open only when it runs.
export FUZZ_TARGETS="${targets[*]}"
python3 seeds.py
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" artifacts
    log="artifacts/$t.log"
    echo "fuzz/run.sh: $t for ${SECONDS_EACH} s"
    dirs=("corpus/$t")
    [ -d "regressions/$t" ] && dirs+=("regressions/$t")
    rc=0
    cargo fuzz run "$t" "${dirs[@]}" -- \
        -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=32 \
        -print_final_stats=1 > "$log" 2>&1 || rc=$?
    grep -E "^(Done|stat::number_of_executed_units)" "$log" || true
    if [ "$rc" -ne 0 ]; then
        tail -n 60 "$log" >&2
        echo "fuzz/run.sh: $t failed (exit $rc); the input is in fuzz/artifacts/$t/, the log in $log" >&2
        exit 1
    fi
done
