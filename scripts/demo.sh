#!/bin/sh
# Builds qnt and runs the quickstart example.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQNT_BUILD_TESTS=OFF > /dev/null
cmake --build build -j "$(nproc)" --target quickstart
./build/quickstart
