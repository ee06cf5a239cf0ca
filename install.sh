#!/usr/bin/env bash
# Build libn5, install it into a prefix, and run an example against the
# installed copy, end to end:
#
#   ./install.sh [PREFIX]        (default: $HOME/.local)
#
# 0. installs what the build needs and the machine lacks (a C compiler, make,
#    CMake >= 3.25, pkg-config, libhdf5-dev) with `tests/setup.sh build`:
#    system packages as root or with passwordless sudo, otherwise CMake and
#    pkg-config from PyPI into build/tools; when neither works it stops with
#    the commands to run;
# 1. configures and builds the release library with CMake (cargo underneath),
#    in build/install, with HDF5 support (libn5.so then depends on the
#    system libhdf5; N5_HDF5=OFF ./install.sh builds it without, for
#    machines without libhdf5);
# 2. installs include/n5.h, libn5.so (with its SONAME links), libn5.a, the
#    pkg-config file and the CMake package into PREFIX;
# 3. compiles examples-c/write_read_volume.c and examples-c/n5ls.c against
#    PREFIX with pkg-config only, runs the first (it writes a gzip volume and
#    checks a sub-region read back) and lists the container with the second;
# 4. with the installed command-line tool PREFIX/bin/n5 (cli/), imports a
#    small generated raw volume as zstd into the same container, then shows
#    it with `n5 tree` and `n5 info --stats` and checks it with `n5 verify`.
#
# Needs cargo (Rust); everything else comes from step 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PREFIX="${1:-$HOME/.local}"
BUILD="$ROOT/build/install"
say() { printf '[install.sh] %s\n' "$*" >&2; }

# CMake and pkg-config from PyPI, when tests/setup.sh had to put them there.
export PATH="$ROOT/build/tools/bin:$PATH"
export N5_HDF5="${N5_HDF5:-ON}"
"$ROOT/tests/setup.sh" build
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"

say "building the release library in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DN5_BUILD_EXAMPLES=OFF "-DN5_HDF5=$N5_HDF5" >/dev/null
cmake --build "$BUILD" -j "$(nproc)"

say "installing into $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX"

LIBDIR="$(dirname "$(find "$PREFIX" -path '*/pkgconfig/n5.pc' -print -quit)")"
export PKG_CONFIG_PATH="$LIBDIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
DEMO="$BUILD/demo"
rm -rf "$DEMO" && mkdir -p "$DEMO"
RPATH="-Wl,-rpath,$(pkg-config --variable=libdir n5)"
for example in write_read_volume n5ls; do
    say "cc -std=c99 examples-c/$example.c \$(pkg-config --cflags --libs n5)"
    # shellcheck disable=SC2046
    cc -std=c99 -Wall -Wextra -o "$DEMO/$example" "$ROOT/examples-c/$example.c" \
        $(pkg-config --cflags --libs n5) "$RPATH"
done

say "running $DEMO/write_read_volume $DEMO/example.n5"
"$DEMO/write_read_volume" "$DEMO/example.n5"
say "running $DEMO/n5ls $DEMO/example.n5"
"$DEMO/n5ls" "$DEMO/example.n5"
N5="$PREFIX/bin/n5"
say "the n5 tool: $N5 (see cli/README.md)"
# A 64 x 48 x 16 uint16 ramp, little-endian, made without any other tool.
RAMP="$DEMO/ramp.raw"
LC_ALL=C awk 'BEGIN { for (i = 0; i < 64 * 48 * 16; i++) {
    v = i % 4096; printf "%c%c", v % 256, int(v / 256) } }' > "$RAMP" || true
if [[ "$(wc -c < "$RAMP")" -ne $((64 * 48 * 16 * 2)) ]]; then
    head -c $((64 * 48 * 16 * 2)) /dev/zero > "$RAMP"    # an awk that cannot write NUL
fi
say "$N5 import ramp.raw $DEMO/example.n5/ramp --dtype uint16 --shape 64,48,16 -b 32,32,8 -c zstd"
"$N5" import "$RAMP" "$DEMO/example.n5/ramp" --dtype uint16 --shape 64,48,16 -b 32,32,8 -c zstd
say "$N5 tree $DEMO/example.n5"
"$N5" tree "$DEMO/example.n5"
say "$N5 info --stats $DEMO/example.n5/ramp"
"$N5" info --stats "$DEMO/example.n5/ramp"
say "$N5 verify $DEMO/example.n5"
"$N5" verify "$DEMO/example.n5"
say "libn5 $(pkg-config --modversion n5) is installed in $PREFIX, the n5 tool in $PREFIX/bin"
say "use it with: pkg-config --cflags --libs n5 (PKG_CONFIG_PATH=$LIBDIR),"
say "or from CMake: find_package(n5 CONFIG REQUIRED) with CMAKE_PREFIX_PATH=$PREFIX"
