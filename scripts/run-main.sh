#!/usr/bin/env bash
# Weft's main job on its embedded defaults: installs what is missing, builds, then
#  1. replays the SWIM Facebook 2009 day trace on a simulated 600-node cluster with the `fair`
#     (DRF) policy: prints a summary; writes the report, the time series and plots to out/sim/;
#  2. runs seed 000's DRF example on a real in-process cluster (RM + NodeManagers, containers
#     as real processes in cgroups): user A's <1 vcore, 4 GB> tasks vs user B's <3 vcores,
#     1 GB> on 9 vcores / 18 GB, and prints the allocation (A 3, B 2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --main
./build/bin/weft sim --plot out/sim "$@"
echo
./build/bin/weft demo drf
