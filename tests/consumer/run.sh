#!/bin/sh
# Installs qnt to a temporary prefix and builds programs against it as users do: with
# pkg-config (qnt.pc for the shared library, qnt-static.pc for the archive) and with
# find_package(qnt) from a C-only CMake project; checks that a program built against the
# installed header refuses, with a clear message, a library of another ABI.
# usage: run.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
example="$src/examples/c/quickstart.c"
cc=${CC:-cc}

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
pcdir=$(dirname "$(find "$tmp/prefix" -name qnt.pc | head -n 1)")
libdir=$(dirname "$pcdir")
export PKG_CONFIG_PATH="$pcdir"

pass=0
check() {  # name, program: runs the program, which must print its table
  "$2" > "$tmp/$1.out"
  grep -q "NF4, per block of 64" "$tmp/$1.out" || { echo "FAIL: $1 printed:"; cat "$tmp/$1.out"; exit 1; }
  echo "ok: $1"
  pass=$((pass + 1))
}

# Shared: the program finds libqnt.so.<ABI> at run time through its rpath.
# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror -o "$tmp/qs_pkgconfig" "$example" \
  $(pkg-config --cflags --libs qnt) -lm -Wl,-rpath,"$(pkg-config --variable=libdir qnt)"
check pkg-config "$tmp/qs_pkgconfig"

# Static: pkg-config --static --libs qnt-static gives the archive and its dependencies.
# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror -o "$tmp/qs_static" "$example" \
  $(pkg-config --static --cflags --libs qnt-static) -lm
check pkg-config-static "$tmp/qs_static"
if readelf -d "$tmp/qs_static" | grep -q 'libqnt\.so'; then
  echo "FAIL: the static build depends on libqnt.so"
  exit 1
fi

cmake -S "$src/tests/consumer" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DQNT_EXAMPLE="$example" > "$tmp/cmake.log" || { cat "$tmp/cmake.log"; exit 1; }
cmake --build "$tmp/cmake" > "$tmp/cmake-build.log" || { cat "$tmp/cmake-build.log"; exit 1; }
check find_package-c-only "$tmp/cmake/quickstart"
check find_package-c-only-static "$tmp/cmake/quickstart_static"

# ABI check: built against the installed header it runs; built against a header of another
# ABI (the same header with QNT_ABI_VERSION changed) it refuses, naming both versions.
abi=$(sed -n 's/^#define QNT_ABI_VERSION \([0-9][0-9]*\)$/\1/p' "$tmp/prefix/include/qnt/qnt.h")
other=$((abi + 1))
mkdir -p "$tmp/other/qnt"
sed "s/^#define QNT_ABI_VERSION $abi\$/#define QNT_ABI_VERSION $other/" \
  "$tmp/prefix/include/qnt/qnt.h" > "$tmp/other/qnt/qnt.h"
for which in same other; do
  inc=$(pkg-config --variable=includedir qnt)
  [ "$which" = other ] && inc="$tmp/other"
  # shellcheck disable=SC2046
  "$cc" -std=c99 -Wall -Wextra -Werror -I"$inc" -o "$tmp/abi_$which" "$src/tests/c/abi_refuse.c" \
    $(pkg-config --libs qnt) -Wl,-rpath,"$libdir"
done
"$tmp/abi_same" > "$tmp/abi_same.out" || { echo "FAIL: the same ABI was refused"; exit 1; }
echo "ok: same ABI accepted ($(cat "$tmp/abi_same.out"))"
pass=$((pass + 1))
if "$tmp/abi_other" 2> "$tmp/abi_other.err"; then
  echo "FAIL: a program built for ABI $other ran with a library of ABI $abi"
  exit 1
fi
grep -q "built against qnt ABI $other" "$tmp/abi_other.err" &&
  grep -q "implements ABI $abi" "$tmp/abi_other.err" ||
  { echo "FAIL: unclear refusal:"; cat "$tmp/abi_other.err"; exit 1; }
echo "ok: other ABI refused: $(cat "$tmp/abi_other.err")"
pass=$((pass + 1))

echo "consumers: $pass passed, 0 failed"
