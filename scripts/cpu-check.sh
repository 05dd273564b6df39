#!/bin/sh
# The CPU check of qnt on another x86-64 machine that has no package registry (the device tool's
# GPU machine, whose host CPU is an AVX-512 VNNI Xeon): the C++ suite natively, then the int8 GEMM
# family and the weight-only layer against oneDNN, pinned to two cores, each step under its own
# time limit so that a lease of a few minutes returns what it measured.
#
# usage: scripts/cpu-check.sh prepare [build]   here, on the Debian machine: builds (Release, no
#                                               CUDA) and copies the test and benchmark programs,
#                                               libqnt and the libraries the other machine lacks
#                                               (oneDNN, gzipped; libgomp) into .cpu-check/ (in
#                                               .gitignore; name it in the tool's carry)
#        scripts/cpu-check.sh [seconds]         there, from the repository root: at most about
#                                               `seconds` (default 300) of runs; results and logs
#                                               under $OUT (default /tmp/qnt-cpu-check)
# Environment there: QNT_CPU_CHECK_CORES (default 2,3) for taskset, QNT_CPU_CHECK_FORMATS (the
# weight-only formats, default "i4_sym_b128 nf4_b64 i4_sym_b32"). oneDNN is capped at
# AVX512_CORE_VNNI so that it does not take AMX where the CPU has it.
set -eu
cd "$(dirname "$0")/.."
dir=$PWD/.cpu-check

if [ "${1:-}" = prepare ]; then
  build=${2:-build-cpu-check}
  sh scripts/deps.sh bench
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQNT_WITH_CUDA=OFF -DQNT_BUILD_TESTS=ON \
    > /dev/null
  cmake --build "$build" -j "$(nproc)" --target qnt qnt_cpp_tests qnt_bench_gemm \
    qnt_bench_weight_only > /dev/null
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib"
  cp "$build/tests/qnt_cpp_tests" "$build/tests/qnt_bench_gemm" \
    "$build/tests/qnt_bench_weight_only" "$dir/bin/"
  cp -L "$build/lib/libqnt.so.1" "$dir/lib/"
  for l in libgomp.so.1 libOpenCL.so.1; do
    p=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ { print $NF; exit }')
    if [ -n "$p" ]; then cp -L "$p" "$dir/lib/"; fi
  done
  dnnl=$(ldconfig -p | awk '$1 == "libdnnl.so.2" { print $NF; exit }')
  gzip -9c "$dnnl" > "$dir/lib/libdnnl.so.2.gz"
  strip "$dir/bin/"* "$dir/lib/libqnt.so.1"
  echo "cpu-check: prepared $(du -sh "$dir" | cut -f1) in .cpu-check/ (carry it: carry=[\".cpu-check\"])"
  exit 0
fi

[ -d "$dir" ] || { echo "cpu-check: no .cpu-check/ (run 'scripts/cpu-check.sh prepare' first)"; exit 2; }
budget=${1:-300}
out=${OUT:-/tmp/qnt-cpu-check}
mkdir -p "$out"
# (steps append to their files: none left from an earlier run in the same place)
rm -f "$out/tests.log" "$out/gemm.tsv" "$out/wo1.tsv" "$out/wo2.tsv"
[ -f "$dir/lib/libdnnl.so.2" ] || gzip -dc "$dir/lib/libdnnl.so.2.gz" > "$dir/lib/libdnnl.so.2"
export LD_LIBRARY_PATH="$dir/lib"
cores=${QNT_CPU_CHECK_CORES:-2,3}
formats=${QNT_CPU_CHECK_FORMATS:-i4_sym_b128 nf4_b64 i4_sym_b32}
lscpu > "$out/lscpu.txt"
grep -E '^Model name|^CPU\(s\)|^L2|^L3' "$out/lscpu.txt" || true
grep -o -w -E 'avx512_vnni|avx_vnni|amx_int8|avx512_vpopcntdq|avx512_vbmi' "$out/lscpu.txt" | sort -u | tr '\n' ' '
echo
status=0
# step SHARE FILE COMMAND...: runs COMMAND with stdout and stderr appended to FILE, for at most
# SHARE percent of the budget.
step() {
  limit=$((budget * $1 / 100))
  file=$2
  shift 2
  start=$(date +%s)
  rc=0
  timeout "$limit" "$@" >> "$file" 2>&1 || rc=$?
  echo "cpu-check: $* : rc $rc, $(( $(date +%s) - start ))s of ${limit}s"
}
# 1. Every kernel against the reference, natively (the suite's own thread counts).
step 15 "$out/tests.log" taskset -c "$cores" "$dir/bin/qnt_cpp_tests"
grep -E '^\[  (PASSED|FAILED) ' "$out/tests.log" || { echo "cpu-check: the suite did not finish"; status=1; }
if grep -q '^\[  FAILED ' "$out/tests.log"; then status=1; fi
export ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI
# 2. The int8 GEMM family beside oneDNN (spinning OpenMP threads, as scripts/bench.sh).
for section in gemm linear conv packing binary; do
  step 6 "$out/gemm.tsv" taskset -c "$cores" "$dir/bin/qnt_bench_gemm" --only "$section"
done
grep -v '^#' "$out/gemm.tsv" | cut -f1,2,6
# 3. The weight-only layer, weights from DRAM, one and two threads (passive threads: the layer
# and oneDNN's GEMM alternate in one process, each with its own OpenMP runtime).
fargs=""
for f in $formats; do fargs="$fargs --format $f"; done
export OMP_WAIT_POLICY=PASSIVE
for threads in 1 2; do
  # shellcheck disable=SC2086
  step 27 "$out/wo$threads.tsv" taskset -c "$cores" "$dir/bin/qnt_bench_weight_only" --focus \
    --threads "$threads" $fargs
  cut -f1,2,4,6 "$out/wo$threads.tsv"
done
exit $status
