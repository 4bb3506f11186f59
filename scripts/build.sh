#!/usr/bin/env bash
# Configures and builds Weft with CMake + Ninja.
#   scripts/build.sh [--sanitize] [BUILD_DIR]
# --sanitize builds with AddressSanitizer + UndefinedBehaviorSanitizer (no benchmarks) into
# build-asan by default; otherwise build/.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=OFF
bench=ON
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=ON
  bench=OFF
  dir=build-asan
  shift
fi
dir=${1:-$dir}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWEFT_SANITIZE=$sanitize -DWEFT_BUILD_BENCH=$bench >/dev/null
ninja -C "$dir"
