#!/usr/bin/env bash
# Configures and builds Weft with CMake + Ninja.
#   scripts/build.sh [--sanitize | --main | --sanitized-tests SANITIZER_BUILD_DIR] [BUILD_DIR]
# --sanitize builds the libraries and their unit tests with AddressSanitizer +
# UndefinedBehaviorSanitizer (no benchmarks, no weft binary and its end-to-end tests) into
# build-asan by default; --main only what scripts/run-main.sh runs (the weft binary and the
# container monitor), not the tests; otherwise everything into build/. --sanitized-tests (what
# scripts/test.sh uses) builds everything except the tests that the sanitizer build at the
# absolute path SANITIZER_BUILD_DIR builds: build/'s CTest runs those programs from there.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=OFF
static_grpc=ON
bench=ON
cli=ON
dir=build
targets=()
sanitized_tests=
if [ "${1:-}" = "--sanitized-tests" ]; then
  sanitized_tests=${2:?"--sanitized-tests needs the sanitizer build's absolute path"}
  shift 2
elif [ "${1:-}" = "--main" ]; then
  targets=(weft weft-container-monitor)
  shift
elif [ "${1:-}" = "--sanitize" ]; then
  sanitize=ON
  static_grpc=OFF
  bench=OFF
  cli=OFF
  dir=build-asan
  shift
fi
dir=${1:-$dir}
# Line tables only (-g1): symbolised stack traces and gdb's file:line, without the full debug
# information that costs a third of the compile time. The sanitizer build compiles at -O1,
# ASan's recommended level. Unity builds (WEFT_UNITY, docs/building.md) compile a target's
# files in batches of 8; lld links where it is installed (scripts/install-deps.sh). Abseil,
# protobuf and gRPC are linked statically (WEFT_STATIC_GRPC) except under the sanitizers: each
# `weft` start maps a third fewer shared libraries.
flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
if [ "$sanitize" = ON ]; then flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"); fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" \
  -DWEFT_WERROR=ON -DWEFT_UNITY=ON -DWEFT_SANITIZE=$sanitize -DWEFT_STATIC_GRPC=$static_grpc \
  -DWEFT_BUILD_BENCH=$bench -DWEFT_BUILD_CLI=$cli -DWEFT_SANITIZED_TESTS="$sanitized_tests" \
  >/dev/null
ninja -C "$dir" "${targets[@]}"
