#!/usr/bin/env bash
# Issue 31's acceptance run (experiments/history/run --ci --apps 2000): a PostgreSQL server of
# its own as the RM's history store, one RM and two NMs as separate processes, 2,000
# distributed-shell apps;
# the RM killed with -9 three times (once while the store is down) and the store stopped for
# 10 s. Passes when every app and each of its containers is in the store exactly once with the
# right final state and resource-seconds, no record names an unknown app, and the RM holds at
# most --max-completed-apps (50) finished apps at the end. Prints the harness's summary line.
# Bounded: the harness bounds every wait (--timeout-s 600) and stops every process it started.
# 267 s on a 2-core VM since weft starts faster (d07dbb3); 370-455 s before, 385 s in CI
# (experiments/history/README.md says where the time goes).
# Usage: history_chaos_test.sh WEFT [SOURCE_DIR]. Exit 77 (skipped, saying why) only when not
# root or PostgreSQL's server binaries are missing (scripts/install-deps.sh installs them).
set -uo pipefail
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root (the harness runs containers in cgroups)"; exit 77
fi
weft=${1:?usage: history_chaos_test.sh WEFT [SOURCE_DIR]}
src=${2:-$(cd "$(dirname "$0")/.." && pwd)}
run=$src/experiments/history/run
[[ -x $weft ]] || { echo "FAIL: no weft binary at $weft"; exit 1; }
[[ -f $run ]] || { echo "FAIL: no history chaos harness at $run"; exit 1; }
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  echo "SKIP: no /usr/lib/postgresql/*/bin/initdb (scripts/install-deps.sh installs the Debian" \
    "package postgresql)"
  exit 77
fi
if ! id postgres >/dev/null 2>&1; then
  echo "SKIP: no 'postgres' user to run PostgreSQL as (the Debian package postgresql makes it)"
  exit 77
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The harness's own bound is 600 s; this one only catches a harness that hangs regardless.
timeout -k 30 750 python3 "$run" --weft "$weft" --ci --apps 2000 --timeout-s 600 \
  --out "$out/summary.json" \
  >"$out/stdout" 2>"$out/stderr"
harness=$?
cat "$out/stdout"
if [[ ! -s $out/summary.json ]]; then
  echo "FAIL: the harness wrote no summary (exit $harness); its log ends with:"
  tail -40 "$out/stderr"
  exit 1
fi
python3 - "$out/summary.json" "$harness" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
apps, c = s.get("apps", {}), s.get("containers", {})
problems = list(s.get("problems", []))
# The harness's verdict, checked again here from its figures.
if not apps.get("submitted") or apps.get("recorded", 0) < apps["submitted"]:
    problems.append(f"apps recorded {apps.get('recorded')} of {apps.get('submitted')} submitted")
for key in ("duplicates", "missing", "unknown", "wrong_final_state", "without_usage"):
    if apps.get(key, 1) != 0:
        problems.append(f"apps {key}: {apps.get(key)}")
for key in ("duplicates", "missing", "bad_records", "records_of_unknown_apps"):
    if c.get(key, 1) != 0:
        problems.append(f"containers {key}: {c.get(key)}")
if s["kills"]["rm"] < 3 or (s["outage_s"]["stopped"] or 0) < 10:
    problems.append(f"too little chaos: {s['kills']} RM kills, outage {s['outage_s']}")
held = s.get("rm_finished_apps_held")
if held is None or held > s["max_completed_apps"]:
    problems.append(f"the RM holds {held} finished apps (bound {s['max_completed_apps']})")
print(f"history chaos --ci: apps {apps.get('recorded')}/{apps.get('submitted')}, containers "
      f"{c.get('recorded')} recorded / {c.get('needed')} ran, RM kills {s['kills']}, store down "
      f"{s['outage_s']['until_serving_again']} s, RM holds {held} finished apps, "
      f"{s['elapsed_s']} s; harness exit {sys.argv[2]}")
for p in dict.fromkeys(problems):
    print("FAIL:", p)
sys.exit(1 if problems or sys.argv[2] != "0" else 0)
PY
status=$?
if [[ $status -ne 0 ]]; then
  echo "--- harness log (tail)"; tail -40 "$out/stderr"; exit 1
fi
echo PASS
