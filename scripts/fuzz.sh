#!/bin/sh
# Builds the libFuzzer targets with clang (ASan + UBSan + libFuzzer) and runs each for SECONDS
# (default 60) from its corpus in tests/fuzz/corpus/<target>. New inputs go to a temporary
# directory, never into the repository: fold them in by hand with -merge=1 (see README).
# usage: scripts/fuzz.sh [SECONDS]
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQNT_BUILD_FUZZERS=ON -DQNT_WITH_OPENMP=OFF -DQNT_WITH_CUDA=OFF -DQNT_BUILD_TESTS=OFF \
  -DQNT_BUILD_EXAMPLES=OFF -DQNT_WERROR=ON > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_api fuzz_calibrator fuzz_dlpack fuzz_safetensors fuzz_gguf
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
for t in api calibrator dlpack safetensors gguf; do
  new=$(mktemp -d)
  corpus="tests/fuzz/corpus/$t"
  [ -d "$corpus" ] || corpus=""
  # shellcheck disable=SC2086
  if build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix=build-fuzz/ "$new" $corpus \
       > "build-fuzz/fuzz_$t.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/fuzz_$t.log")
    echo "fuzz_$t: $runs executions in ${seconds} s, no finding"
  else
    echo "fuzz_$t: FINDING (input in build-fuzz/):"
    tail -n 40 "build-fuzz/fuzz_$t.log"
    failed=$((failed + 1))
  fi
  rm -rf "$new"
done
echo "fuzz: $((5 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
