#!/bin/sh
# Cross-builds qnt for aarch64 with Debian's g++-aarch64-linux-gnu and runs the C and C++ test
# suites under qemu-user, so that the NEON kernels are checked bit for bit against the reference
# as the x86 ones are.
# usage: scripts/test-aarch64.sh   (build directory: $BUILD_DIR, default build-aarch64)
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh aarch64
build=${BUILD_DIR:-build-aarch64}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQNT_WERROR=ON -DQNT_WITH_CUDA=OFF -DQNT_BUILD_TESTS=ON
cmake --build "$build" -j "$jobs"
# The suites that run the library's code (under the emulator); the others check the host's
# build (exported symbols, consumers, Python cross-checks) and run in scripts/test.sh.
cd "$build"
ctest --output-on-failure -j 2 \
  -R '^(cpp_core|c_api|abi_compat|lazy_cuda|threads_omp_env|isa_objects_no_weak_symbols|example_.*)$'
