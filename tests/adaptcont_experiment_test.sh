#!/usr/bin/env bash
# Runs seed 002's evaluation (experiments/adaptcont/run) into a temp dir and checks what the
# issue and docs/adaptcont.md state: in each of the 12 scheduler x scenario cells, Dynamic and
# Pool give less total AM memory and fewer AM vcores than the YARN master; no AdaptCont-sized AM
# is killed for memory; no job fails; every summary row has the documented fields.
# Usage: adaptcont_experiment_test.sh WEFT_BINARY SOURCE_DIR
set -euo pipefail
WEFT="$1"
SRC="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$SRC/experiments/adaptcont/run" --weft "$WEFT" --out "$TMP/out" --summary "$TMP/summary.json" \
  --docs "$TMP/docs" >"$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
/usr/bin/python3 - "$TMP/summary.json" "$TMP/docs" <<'PY'
import json, os, sys
s = json.load(open(sys.argv[1]))
rows = s["scenarios"]
fails = []
if len(rows) != 36:
    fails.append(f"{len(rows)} scenario rows, want 36 (3 schedulers x 3 masters x 4 scenarios)")
need = {"scheduler", "arrival", "workload", "master", "am_memory_mb", "am_vcores", "am_failures",
        "makespan_s"}
for r in rows:
    if not need <= r.keys():
        fails.append(f"row lacks {need - r.keys()}: {r}")
cells = {}
for r in rows:
    cells.setdefault((r["scheduler"], r["arrival"], r["workload"]), {})[r["master"]] = r
for cell, m in cells.items():
    base = m["yarn-default"]
    if base["am_memory_mb"] < 10 * 1024:
        fails.append(f"{cell}: the YARN master used {base['am_memory_mb']} MB for 10 jobs")
    for name in ("dynamic", "pool"):
        x = m[name]
        if not x["am_memory_mb"] < base["am_memory_mb"]:
            fails.append(f"{cell} {name}: memory {x['am_memory_mb']} not below {base['am_memory_mb']}")
        if not x["am_vcores"] < base["am_vcores"]:
            fails.append(f"{cell} {name}: vcores {x['am_vcores']} not below {base['am_vcores']}")
        if x["am_failures"] != 0:
            fails.append(f"{cell} {name}: {x['am_failures']} AM memory kills")
    for x in m.values():
        if x["jobs_failed"] != 0:
            fails.append(f"{cell} {x['master']}: {x['jobs_failed']} jobs failed")
if not all(s["checks"].values()):
    fails.append(f"checks: {s['checks']}")
for f in ("fig5_waves.png", "fig5_time.png", "fig6_memory.png", "fig7_vcores.png",
          "scenarios.csv", "summary.md"):
    if not os.path.getsize(os.path.join(sys.argv[2], f)) > 0:
        fails.append(f"{f} missing")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
mem = s["savings_range"]["dynamic"]["memory_lower_pct_min_max_mean"]
print(f"PASS: 36 runs; Dynamic AM memory {mem[0]}-{mem[1]}% below the YARN master, no AM killed")
PY
