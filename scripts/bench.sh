#!/bin/sh
# Builds qnt (Release) and prints the kernel benchmark table: each workload's time on 1 and 2
# threads, its ratio to the machine's limit measured in the same run (streaming copy for
# read + write work, streaming read for calibration, a plain vectorized loop for the L2 size),
# and its ratio to PyTorch (Debian's python3-torch) run right after, on the same machine; then
# the int8 GEMM family (qnt_bench_gemm) beside oneDNN (Debian's libdnnl-dev) and PyTorch; then the
# weight-only linear layer (qnt_bench_weight_only) against the DRAM read roofline, the FMA peak and
# oneDNN.
# usage: scripts/bench.sh [--quick]
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh bench
build=${BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQNT_WITH_CUDA=OFF -DQNT_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target qnt_bench_kernels qnt_bench_gemm \
  qnt_bench_weight_only >/dev/null
"$build/tests/qnt_bench_kernels" "$@" > "$build/bench_qnt.tsv"
# Debian's python3-torch lives with the system interpreter, which a pyenv shim may hide.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" tests/bench/bench_table.py "$build/bench_qnt.tsv" "$@"
# The int8 GEMM family beside oneDNN (libdnnl-dev), the exact multiply peak and PyTorch.
echo
"$build/tests/qnt_bench_gemm" "$@" > "$build/bench_gemm.tsv"
"$py" tests/bench/bench_gemm_torch.py "$build/bench_gemm.tsv" "$@"
# The weight-only linear layer (LLM decode and prefill), weights rotated through DRAM.
echo
"$build/tests/qnt_bench_weight_only" "$@" > "$build/bench_weight_only.tsv"
"$py" tests/bench/bench_wo_table.py "$build/bench_weight_only.tsv"
# qnt from Python (bindings/python over this build's libqnt) against PyTorch on the same arrays.
echo
QNT_LIBRARY="$build/lib/libqnt.so" PYTHONPATH=bindings/python "$py" tests/bench/bench_python.py "$@"
