#!/bin/sh
# Builds qnt four times and runs every test: once as released (with the CUDA module when nvcc
# is there, warnings as errors; the C and C++ suites a second time capped at AVX2 where the
# machine has AVX-512), with the Rust crates, the Java and C# bindings and the Python package built and
# tested against it; once with AddressSanitizer and UndefinedBehaviorSanitizer over the C and C++ suites; once
# with clang and libFuzzer, running each fuzz target for QNT_FUZZ_SECONDS (default 60) from its
# corpus; and once cross-compiled for aarch64 with the C++ suites run under qemu-user (the NEON
# kernels against the reference; QNT_SKIP_AARCH64=1 leaves it out).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc)
# The cross-checks' packages from PyPI, pinned (tests/crosscheck/requirements.txt), beside the
# build: Debian's Python stays untouched.
/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps --target build/pydeps \
  -r tests/crosscheck/requirements.txt

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQNT_BUILD_TESTS=ON \
  -DQNT_BUILD_EXAMPLES=ON -DQNT_WERROR=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure
# On a machine with more than AVX2, the C and C++ suites once more with every context capped at
# AVX2 (QNT_MAX_ISA), so that both paths run natively here; the sanitizer build runs uncapped.
if grep -qw avx512bw /proc/cpuinfo 2>/dev/null; then
  QNT_MAX_ISA=avx2 ctest --test-dir build --output-on-failure -R '^(cpp_core|c_api)$'
fi

# The Rust crates, and the Java and C# bindings (SWIG), against this build installed to a prefix.
QNT_FROM_BUILD=build scripts/test-rust.sh
QNT_FROM_BUILD=build scripts/test-java.sh
QNT_FROM_BUILD=build scripts/test-csharp.sh
QNT_FROM_BUILD=build scripts/test-python.sh

cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DQNT_SANITIZE=ON -DQNT_WITH_CUDA=OFF \
  -DQNT_BUILD_TESTS=ON -DQNT_BUILD_EXAMPLES=OFF -DQNT_WERROR=ON
cmake --build build-sanitize -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure

scripts/fuzz.sh "${QNT_FUZZ_SECONDS:-60}"

if [ "${QNT_SKIP_AARCH64:-0}" != 1 ]; then
  scripts/test-aarch64.sh
fi
