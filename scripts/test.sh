#!/usr/bin/env bash
# Builds Weft and runs every test with CTest. Installs what is missing first.
#   scripts/test.sh              the normal build (build/)
#   scripts/test.sh --sanitize   the libraries' unit tests under ASan + UBSan (build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  scripts/build.sh --sanitize
  dir=build-asan
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  scripts/build.sh
  dir=build
fi
cd "$dir"
ctest --output-on-failure --timeout 600 -j2
