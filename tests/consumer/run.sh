#!/bin/sh
# Installs qnt to a temporary prefix and builds examples/c/quickstart.c against it as users do:
# with pkg-config (shared, and static through Libs.private) and with find_package(qnt).
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

# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror -o "$tmp/qs_pkgconfig" "$example" \
  $(pkg-config --cflags --libs qnt) -lm -Wl,-rpath,"$libdir"
check pkg-config "$tmp/qs_pkgconfig"

# Static: the archive plus the private dependencies that pkg-config --static adds.
# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror -o "$tmp/qs_static" "$example" \
  $(pkg-config --cflags qnt) "$libdir/libqnt.a" \
  $(pkg-config --static --libs qnt | sed 's/-lqnt\b//; s/-L[^ ]*//g') -lm
check pkg-config-static "$tmp/qs_static"
if readelf -d "$tmp/qs_static" | grep -q 'libqnt\.so'; then
  echo "FAIL: the static build depends on libqnt.so"
  exit 1
fi

cmake -S "$src/tests/consumer" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DQNT_EXAMPLE="$example" > "$tmp/cmake.log"
cmake --build "$tmp/cmake" > "$tmp/cmake-build.log" || { cat "$tmp/cmake-build.log"; exit 1; }
check find_package "$tmp/cmake/quickstart"
check find_package-static "$tmp/cmake/quickstart_static"

echo "consumers: $pass passed, 0 failed"
