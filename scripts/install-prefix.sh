#!/bin/sh
# Installs qnt to OUT/prefix, as a user would install it, and prints the prefix: from the CMake
# build tree QNT_FROM_BUILD names (scripts/test.sh passes its own), else from a build of its own
# in OUT/lib. Used by the binding test scripts.
# usage: scripts/install-prefix.sh OUT
set -eu
cd "$(dirname "$0")/.."
out=$1
from=${QNT_FROM_BUILD:-}
if [ -z "$from" ]; then
  from=$out/lib
  cmake -S . -B "$from" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQNT_BUILD_TESTS=OFF \
    -DQNT_BUILD_EXAMPLES=OFF -DQNT_WITH_CUDA=OFF -DQNT_WERROR=ON > /dev/null
  cmake --build "$from" -j "$(nproc)" > /dev/null
fi
rm -rf "$out/prefix"
cmake --install "$from" --prefix "$out/prefix" > /dev/null
(cd "$out/prefix" && pwd)
