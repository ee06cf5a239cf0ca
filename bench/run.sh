#!/usr/bin/env bash
# The libn5 benchmark in one command: bench/run.sh [n5-bench options], e.g.
#
#   bench/run.sh --quick                       # 256³, a few minutes
#   bench/run.sh --markdown bench/RESULTS.md   # 512³, the table for the repository
#
# Installs what it needs with tests/setup.sh: a C compiler and make for the
# codec libraries (`build`, without libhdf5, which the benchmark does not
# use), the project's Python venv .venv with tensorstore and z5py, the peers,
# as ./tests/run.sh does; with --format zarr3-sharded or all also
# .venv-zarr3 with zarr-python 3; with --storage s3 or all the test servers,
# SeaweedFS. Then runs `cargo run --release -p n5-bench -- "$@"` from the
# repository root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/build/tools/bin:$PATH"
components=(build venv)
prev=""
for arg in "$@"; do
    if [ "$prev" = "--format" ] && { [ "$arg" = zarr3-sharded ] || [ "$arg" = all ]; }; then
        components+=(zarr3py)
    fi
    if [ "$prev" = "--storage" ] && { [ "$arg" = s3 ] || [ "$arg" = all ]; }; then
        components+=(servers)
    fi
    prev="$arg"
done
N5_HDF5="${N5_HDF5:-OFF}" "$ROOT/tests/setup.sh" "${components[@]}"

exec cargo run --release -p n5-bench -- "$@"
