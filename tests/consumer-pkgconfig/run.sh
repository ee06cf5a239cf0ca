#!/bin/sh
# Builds and runs tests/consumer-cmake/n5_consumer.c against an installed libn5
# found through pkg-config only, as a Makefile-based project would:
#
#   tests/consumer-pkgconfig/run.sh <prefix>/lib/pkgconfig <work dir> shared|static
#
# shared: cc ... $(pkg-config --cflags --libs n5), run with LD_LIBRARY_PATH;
#         the program must NEED libn5.so.<soversion> and load it from the prefix.
# static: cc ... $(pkg-config --cflags n5) $(pkg-config --static --libs n5) with
#         -ln5 turned into -l:libn5.a; the program must not NEED libn5.
# CC, PKG_CONFIG and READELF may name the tools.
set -eu

if [ $# -ne 3 ]; then
    echo "usage: $0 <pkgconfig dir> <work dir> shared|static" >&2
    exit 2
fi
pcdir=$1 work=$2 mode=$3
src=$(cd "$(dirname "$0")/../consumer-cmake" && pwd)/n5_consumer.c
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
READELF=${READELF:-readelf}

# Only the installed prefix: nothing from the system's pkg-config path.
PKG_CONFIG_LIBDIR=$pcdir
PKG_CONFIG_PATH=
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH

rm -rf "$work"
mkdir -p "$work"
version=$($PKG_CONFIG --modversion n5)
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
if [ "$major" = 0 ]; then soname=libn5.so.0.$minor; else soname=libn5.so.$major; fi
libdir=$($PKG_CONFIG --variable=libdir n5)
echo "n5 $version from $pcdir (libdir $libdir)"

run() {
    echo "+ $*"
    "$@"
}
needed() {
    $READELF -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

case $mode in
shared)
    # shellcheck disable=SC2046 # word splitting of pkg-config's output is intended
    run "$CC" -std=c99 -Wall -Wextra -Werror -o "$work/n5_consumer" "$src" \
        $($PKG_CONFIG --cflags --libs n5)
    if ! needed "$work/n5_consumer" | grep -qx "$soname"; then
        echo "FAIL: n5_consumer does not NEED $soname:" >&2
        needed "$work/n5_consumer" >&2
        exit 1
    fi
    LD_LIBRARY_PATH=$libdir
    export LD_LIBRARY_PATH
    loaded=$(ldd "$work/n5_consumer" | sed -n "s/^[[:space:]]*$soname => \([^ ]*\).*/\1/p")
    if [ "$(readlink -f "$loaded")" != "$(readlink -f "$libdir/$soname")" ]; then
        echo "FAIL: $soname resolves to '$loaded', not to $libdir/$soname" >&2
        exit 1
    fi
    ;;
static)
    libs=$($PKG_CONFIG --static --libs n5 | sed 's/\(^\|[[:space:]]\)-ln5\([[:space:]]\|$\)/\1-l:libn5.a\2/')
    case " $libs " in *" -l:libn5.a "*) ;; *)
        echo "FAIL: no -ln5 in pkg-config --static --libs n5: $libs" >&2
        exit 1
        ;;
    esac
    # shellcheck disable=SC2046,SC2086
    run "$CC" -std=c99 -Wall -Wextra -Werror -o "$work/n5_consumer" "$src" \
        $($PKG_CONFIG --cflags n5) $libs
    if needed "$work/n5_consumer" | grep -q '^libn5'; then
        echo "FAIL: the statically linked n5_consumer NEEDs libn5:" >&2
        needed "$work/n5_consumer" >&2
        exit 1
    fi
    ;;
*)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac

run "$work/n5_consumer" "$work/container.n5"
echo "NEEDED: $(needed "$work/n5_consumer" | tr '\n' ' ')"
