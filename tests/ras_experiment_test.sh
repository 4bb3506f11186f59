#!/usr/bin/env bash
# Runs seed 003's experiments (experiments/ras/run) into a temp dir and checks the results the
# docs state: RAS beats every static slot setting and the best static one is 4 slots
# (experiment 1); with tight goals RAS meets J1's goal, which fair with 4 slots misses, meets
# J7's and J8's, and meets more goals than fair (experiment 2).
# It also reruns two settings of the calibration sweep (experiments/ras/sweep.py) and checks
# they match the committed docs/ras/calibration.csv.
# Usage: ras_experiment_test.sh WEFT_BINARY SOURCE_DIR
set -euo pipefail
WEFT="$1"
SRC="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$SRC/experiments/ras/run" --weft "$WEFT" --out "$TMP/out" --summary "$TMP/summary.json" \
  --docs "$TMP/docs" >"$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
/usr/bin/python3 - "$TMP/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
e1, e2 = s["experiment1"], s["experiment2"]
fails = []
for k, v in e1["fair_makespan_s"].items():
    if not e1["ras_makespan_s"] < v:
        fails.append(f"exp1: ras {e1['ras_makespan_s']} not below fair-{k} {v}")
for iso in s["isolation"]:
    if abs(iso["fair4_s"] - iso["seed_s"]) > 1:
        fails.append(f"isolation {iso['id']}: {iso['fair4_s']} vs seed {iso['seed_s']}")
if e1["best_static_slots"] != 4:
    fails.append(f"exp1: the best static setting is {e1['best_static_slots']} slots, not 4")
jobs = {j["id"]: j for j in e2["jobs"]}
if not jobs["J1"]["ras_met"] or jobs["J1"]["fair_met"]:
    fails.append(f"exp2 J1: ras_met {jobs['J1']['ras_met']} fair_met {jobs['J1']['fair_met']}")
for j in ("J7", "J8"):
    if not jobs[j]["ras_met"]:
        fails.append(f"exp2 {j}: ras misses its goal")
if not e2["ras_goals_met"] > e2["fair_goals_met"]:
    fails.append("exp2: ras meets no more goals than fair")
if fails:
    print("\n".join(fails))
    sys.exit(1)
print("ras experiments: ok")
PY
# Bad calibration arguments are refused, naming the value, and write nothing.
for arg in "--map-share 1.5" "--sort-io 0"; do
  if out=$(/usr/bin/python3 "$SRC/experiments/ras/make_workload.py" "$TMP/bad" $arg 2>&1); then
    echo "make_workload.py accepted $arg"; exit 1
  fi
  grep -q -- "${arg%% *} must be in (0, 1], got ${arg##* }" <<<"$out" ||
    { echo "make_workload.py $arg: unexpected error: $out"; exit 1; }
  [[ ! -e "$TMP/bad" ]] || { echo "make_workload.py $arg wrote $TMP/bad"; exit 1; }
done
# The calibration sweep: two of its settings rerun here must match the committed table.
"$SRC/experiments/ras/sweep.py" --weft "$WEFT" --docs "$TMP/sweep" --quick >"$TMP/sweep.log" 2>&1 ||
  { cat "$TMP/sweep.log"; exit 1; }
/usr/bin/python3 - "$TMP/sweep/calibration.csv" "$SRC/docs/ras/calibration.csv" <<'PY'
import csv, sys
key = lambda r: (r["map_share"], r["penalty"], r["sort_io"])
fresh = list(csv.DictReader(open(sys.argv[1])))
committed = {key(r): r for r in csv.DictReader(open(sys.argv[2]))}
fails = []
for r in fresh:
    c = committed.get(key(r))
    if c is None:
        fails.append(f"sweep setting {key(r)} is not in the committed calibration.csv")
    elif c != r:
        fails.append(f"sweep setting {key(r)}: rerun {r} differs from committed {c}")
if len(fresh) != 2:
    fails.append(f"quick sweep wrote {len(fresh)} settings, expected 2")
if fails:
    print("\n".join(fails))
    sys.exit(1)
print("ras calibration sweep: reproduces the committed table")
PY
for f in fig3_makespan.png fig4_tasks_cpu.png fig6_utility.png summary.md exp1_makespan.csv; do
  [[ -s "$TMP/docs/$f" ]] || { echo "missing $f"; exit 1; }
done
