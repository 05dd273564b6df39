#!/bin/sh
# Installs the Debian packages qnt needs, and only those missing.
# usage: scripts/deps.sh build   (to build the library and the demo)
#        scripts/deps.sh test    (also the test frameworks, the cross-check's Python packages,
#                                 clang with libFuzzer, and dlpack.h)
#        scripts/deps.sh bench   (the tests' packages and oneDNN, the benchmarks' peer)
#        scripts/deps.sh rust    (bindgen, Debian's pkg-config crate, valgrind, and cargo where
#                                 there is none)
#        scripts/deps.sh java    (SWIG, a JDK, Debian's JUnit 5)
#        scripts/deps.sh csharp  (SWIG, Mono, NUnit)
#        scripts/deps.sh aarch64 (the aarch64 cross compiler, qemu-user, and the arm64 test
#                                 frameworks through Debian's multiarch)
set -eu
what=${1:-build}
pkgs="build-essential cmake pkg-config libxsimd-dev nlohmann-json3-dev libcli11-dev"
if [ "$what" = test ] || [ "$what" = bench ]; then
  pkgs="$pkgs libgtest-dev libgmock-dev libbenchmark-dev libcriterion-dev python3-numpy python3-torch python3-pip python3-yaml python3-pytest python3-venv"
  # the fuzz targets (clang with libFuzzer's runtime) and dlpack.h, whose layouts qnt's own
  # DLPack declarations are checked against
  pkgs="$pkgs clang libclang-rt-14-dev libdlpack-dev"
fi
if [ "$what" = bench ]; then
  pkgs="$pkgs libdnnl-dev"  # oneDNN: a peer in the benchmarks only
fi
if [ "$what" = rust ]; then
  # the Rust crates: bindgen (the raw bindings' drift check), Debian's pkg-config crate, valgrind
  pkgs="$pkgs bindgen librust-pkg-config-dev valgrind"
  command -v cargo > /dev/null || pkgs="$pkgs cargo rustc"
  command -v rustfmt > /dev/null || pkgs="$pkgs rustfmt"  # regen.sh formats bindgen's output
fi
if [ "$what" = java ]; then
  # the Java binding: SWIG, Debian's JUnit 5 jars, a JDK where there is none
  pkgs="$pkgs swig junit5 python3"
  command -v javac > /dev/null || pkgs="$pkgs default-jdk-headless"
fi
if [ "$what" = csharp ]; then
  # the C# binding: SWIG, Mono's compiler and runtime, NUnit
  pkgs="$pkgs swig mono-devel libnunit-cil-dev nunit-console python3"
fi
if [ "$what" = aarch64 ]; then
  # (libcriterion-dev is not co-installable across architectures: the C suite runs on the host)
  pkgs="$pkgs g++-aarch64-linux-gnu qemu-user libgtest-dev:arm64 libgomp1:arm64 libstdc++6:arm64"
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
if [ "$what" = aarch64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing > /dev/null
