#!/usr/bin/env bash
# Weft's main job on its embedded defaults: installs what is missing, builds, and replays the
# SWIM Facebook 2009 day trace on a simulated 600-node cluster with the `fair` (DRF) policy.
# Prints a summary; writes the report, the time series and plots under out/sim/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
./build/bin/weft sim --plot out/sim "$@"
