#!/usr/bin/env bash
# The libn5 benchmark in one command: bench/run.sh [n5-bench options], e.g.
#
#   bench/run.sh --quick                       # 256³, a few minutes
#   bench/run.sh --markdown bench/RESULTS.md   # 512³, the table for the repository
#
# Installs what it needs with tests/setup.sh: a C compiler and make for the
# codec libraries (`build`; libhdf5 too only with --format hdf5), the
# project's Python venv .venv with tensorstore, z5py and h5py, the peers, as
# ./tests/run.sh does; with --format zarr3-sharded or all also .venv-zarr3
# with zarr-python 3; with --format nwb .venv-nwb and .venv-zarrs (zarr-python
# 3.4, zarrs); with --storage s3 or all the test servers, SeaweedFS.
# Then runs `cargo run --release -p n5-bench -- "$@"` from the repository
# root (with --format hdf5 built with the bench's feature hdf5: libn5's HDF5
# support).
#
#   bench/run.sh --format hdf5 --repeats 5 --markdown bench/RESULTS-hdf5.md
#
# --format nwb also makes .venv-nwb (zarr-python 3.4, which writes the
# arrays) and .venv-zarrs (zarr-python 3.4 with zarrs, which read them):
#
#   bench/run.sh --format nwb --repeats 7 --markdown bench/RESULTS-nwb.md
#
# --format pyramid also builds the n5 tool (cargo build --release -p n5-cli)
# and installs zarrs_ome from zarrs_tools (version below, feature ome) with
# cargo install into build/tools when it is missing:
#
#   bench/run.sh --format pyramid --repeats 5 --markdown bench/RESULTS-pyramid.md
set -euo pipefail

# The zarrs_tools release whose zarrs_ome the pyramid mode measures.
ZARRS_TOOLS_VERSION=0.8.1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/build/tools/bin:$PATH"
components=(build venv)
features=()
hdf5=OFF
pyramid=no
prev=""
for arg in "$@"; do
    if [ "$prev" = "--format" ] && { [ "$arg" = zarr3-sharded ] || [ "$arg" = all ]; }; then
        components+=(zarr3py)
    fi
    if [ "$prev" = "--storage" ] && { [ "$arg" = s3 ] || [ "$arg" = all ]; }; then
        components+=(servers)
    fi
    if [ "$prev" = "--format" ] && [ "$arg" = nwb ]; then
        components+=(nwb zarrs)
    fi
    if [ "$prev" = "--format" ] && [ "$arg" = pyramid ]; then
        pyramid=yes
    fi
    if [ "$prev" = "--format" ] && [ "$arg" = hdf5 ]; then
        hdf5=ON
        features=(--features hdf5)
    fi
    prev="$arg"
done
N5_HDF5="${N5_HDF5:-$hdf5}" "$ROOT/tests/setup.sh" "${components[@]}"

if [ "$pyramid" = yes ]; then
    cargo build --release -p n5-cli
    zarrs_ome="$ROOT/build/tools/bin/zarrs_ome"
    if ! "$zarrs_ome" --version 2>/dev/null | grep -q "$ZARRS_TOOLS_VERSION"; then
        echo "[bench] installing zarrs_ome (zarrs_tools $ZARRS_TOOLS_VERSION) into build/tools" >&2
        cargo install zarrs_tools --version "$ZARRS_TOOLS_VERSION" --locked \
            --features ome --bin zarrs_ome --root "$ROOT/build/tools"
    fi
fi

exec cargo run --release -p n5-bench "${features[@]}" -- "$@"
