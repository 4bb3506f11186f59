#!/usr/bin/env bash
# Builds Weft and runs every test with CTest. Installs what is missing first.
#   scripts/test.sh              every test, in one `ctest` in build/: the libraries' unit tests
#                                and the in-process integration tests built once, under ASan +
#                                UBSan (build-asan/), the rest (the weft binary, its end-to-end
#                                tests) in the normal build
#   scripts/test.sh --sanitize   only the sanitizer build and its tests (build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --sanitize
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
else
  scripts/build.sh --sanitized-tests "$PWD/build-asan"
  dir=build
fi
cd "$dir"
ctest --output-on-failure --timeout 600 -j2
