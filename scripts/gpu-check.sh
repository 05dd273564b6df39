#!/bin/sh
# The GPU check of qnt, in one call on a machine with an NVIDIA GPU (the device tool's H100 or
# H200): builds the library and its CUDA module (sm_80 and sm_90 with PTX, --fmad=false), runs
# the GPU suite (every CUDA kernel against the CPU, bit for bit: ctest's gpu, which skips only
# without a device), the device plumbing and the core suite, the DLPack exchange with PyTorch
# CUDA tensors, and the benchmark against the GPU's copy bandwidth and PyTorch's kernels; prints
# the benchmark's table last.
#
# usage: scripts/gpu-check.sh prepare   here, on the Debian machine: copies the headers and
#                                       libraries the GPU machine lacks (xsimd, GoogleTest) into
#                                       .gpu-deps/ (in .gitignore; name it in the tool's carry)
#        scripts/gpu-check.sh           on the GPU machine, from the repository root
set -eu
cd "$(dirname "$0")/.."
deps=$PWD/.gpu-deps

if [ "${1:-}" = prepare ]; then
  rm -rf "$deps"
  mkdir -p "$deps/include" "$deps/lib/x86_64-linux-gnu/cmake"
  cp -r /usr/include/xsimd /usr/include/gtest /usr/include/gmock "$deps/include/"
  cp /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/x86_64-linux-gnu/libgtest_main.a \
    /usr/lib/x86_64-linux-gnu/libgmock.a /usr/lib/x86_64-linux-gnu/libgmock_main.a \
    "$deps/lib/x86_64-linux-gnu/"
  cp -r /usr/lib/x86_64-linux-gnu/cmake/GTest "$deps/lib/x86_64-linux-gnu/cmake/"
  echo "gpu-check: prepared $(du -sh "$deps" | cut -f1) in .gpu-deps/ (carry it: carry=[\".gpu-deps\"])"
  exit 0
fi

out=${OUT:-/tmp/qnt-gpu-check}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
nvcc --version | tail -1
extra=""
[ -d "$deps" ] && extra="-DCMAKE_PREFIX_PATH=$deps -DQNT_XSIMD_DIR=$deps/include"
# shellcheck disable=SC2086
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DQNT_WITH_CUDA=ON -DQNT_BUILD_TESTS=ON \
  -DQNT_BUILD_EXAMPLES=OFF -DQNT_WERROR=ON -DQNT_REQUIRE_CRITERION=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="80-real;90" $extra > "$out/configure.log"
cmake --build build-gpu -j "$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
module=$PWD/build-gpu/lib/libqnt_cuda.so
lib=$PWD/build-gpu/lib/libqnt.so
status=0
# The GPU suite must run, not skip: a skip here means the module found no device.
if ! QNT_CUDA_MODULE=$module build-gpu/tests/qnt_cpp_tests --gtest_filter='Gpu.*' \
    > "$out/gpu-tests.log" 2>&1; then
  status=1
fi
grep -E '^\[( +OK|  FAILED|  SKIPPED) ' "$out/gpu-tests.log" || true
if grep -q 'SKIPPED' "$out/gpu-tests.log"; then
  echo "gpu-check: the GPU suite skipped: no device for the module"; status=1
fi
ctest --test-dir build-gpu -R '^(cpp_core|standin_device|lazy_cuda)$' > "$out/ctest.log" 2>&1 || status=1
tail -3 "$out/ctest.log"
QNT_CUDA_MODULE=$module python3 tests/crosscheck/gpu_dlpack.py "$lib" || status=1
# The conformance corpus (ONNX formulas, PyTorch ops), each op also through device tensors.
QNT_CUDA_MODULE=$module python3 tests/crosscheck/crosscheck.py "$lib" || status=1
QNT_CUDA_MODULE=$module OUT=$out python3 tests/bench/bench_cuda.py "$lib" || status=1
exit $status
