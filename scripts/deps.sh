#!/bin/sh
# Installs the Debian packages qnt needs, and only those missing.
# usage: scripts/deps.sh build   (to build the library and the demo)
#        scripts/deps.sh test    (also the test frameworks, the cross-check's Python packages,
#                                 clang with libFuzzer, and dlpack.h)
set -eu
what=${1:-build}
pkgs="build-essential cmake pkg-config"
if [ "$what" = test ]; then
  pkgs="$pkgs libgtest-dev libgmock-dev libbenchmark-dev libcriterion-dev python3-numpy python3-torch"
  # the fuzz targets (clang with libFuzzer's runtime) and dlpack.h, whose layouts qnt's own
  # DLPack declarations are checked against
  pkgs="$pkgs clang libclang-rt-14-dev libdlpack-dev"
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "qnt: installing Debian packages:$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing > /dev/null
