#!/bin/sh
# Builds qnt and runs the quickstart example.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DQNT_BUILD_TESTS=OFF > /dev/null
cmake --build build-demo -j "$(nproc)" --target quickstart
./build-demo/quickstart
