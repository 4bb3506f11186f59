#!/usr/bin/env bash
# Configures and builds Weft with CMake + Ninja.
#   scripts/build.sh [--sanitize] [BUILD_DIR]
# --sanitize builds the libraries and their unit tests with AddressSanitizer +
# UndefinedBehaviorSanitizer (no benchmarks, no weft binary and its end-to-end tests) into
# build-asan by default; otherwise everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=OFF
bench=ON
cli=ON
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=ON
  bench=OFF
  cli=OFF
  dir=build-asan
  shift
fi
dir=${1:-$dir}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWEFT_SANITIZE=$sanitize -DWEFT_BUILD_BENCH=$bench -DWEFT_BUILD_CLI=$cli >/dev/null
ninja -C "$dir"
