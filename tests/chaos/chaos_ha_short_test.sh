#!/usr/bin/env bash
# The chaos harness's short HA run (experiments/chaos/run --ci): a ZooKeeper of its own, two
# RMs in active/standby and three NMs as separate processes; at least 10 kills of the active
# RM, 3 NM kills and 1 ZooKeeper restart (kill -9 each) while distributed-shell apps run. Passes
# when every app SUCCEEDED with no container id run twice and no orphan container process.
# Prints the harness's summary. Bounded: the harness bounds every wait (--timeout-s 900 in the
# preset) and stops every process it started.
# Usage: chaos_ha_short_test.sh WEFT [SOURCE_DIR]. Exit 77 (skipped, saying why) only when not
# root; a missing ZooKeeper or java fails, naming what to install.
set -uo pipefail
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root (the harness runs containers in cgroups)"; exit 77
fi
weft=${1:?usage: chaos_ha_short_test.sh WEFT [SOURCE_DIR]}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
run=$src/experiments/chaos/run
[[ -x $weft ]] || { echo "FAIL: no weft binary at $weft"; exit 1; }
[[ -f $run ]] || { echo "FAIL: no chaos harness at $run"; exit 1; }
if ! command -v java >/dev/null || [[ ! -r /usr/share/java/zookeeper.jar ]]; then
  echo "FAIL: needs java and /usr/share/java/zookeeper.jar (scripts/install-deps.sh installs" \
    "the Debian packages default-jre-headless and zookeeper)"
  exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The harness's own bound is 900 s; this one only catches a harness that hangs regardless.
timeout -k 30 1200 python3 "$run" --weft "$weft" --ci --out "$out/summary.json" \
  >"$out/stdout" 2>"$out/stderr"
harness=$?
cat "$out/stdout"
if [[ ! -s $out/summary.json ]]; then
  echo "FAIL: the harness wrote no summary (exit $harness); its log ends with:"
  tail -40 "$out/stderr"
  exit 1
fi
python3 - "$out/summary.json" "$harness" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
apps, kills, c = s["apps"], s["kills"], s["containers"]
problems = []
if apps["submitted"] == 0 or apps["succeeded"] != apps["submitted"]:
    problems.append(f"{apps['succeeded']} of {apps['submitted']} apps succeeded "
                    f"({apps['failed']} failed, {apps['unfinished']} unfinished)")
if c["duplicate_ids"] != 0:
    problems.append(f"{c['duplicate_ids']} container ids ran twice")
if s["orphans"] != 0:
    problems.append(f"{s['orphans']} orphan container processes")
if kills["rm"] < 10 or kills["nm"] < 3 or kills.get("zk", 0) < 1:
    problems.append(f"too few kills: {kills} (want rm >= 10, nm >= 3, zk >= 1)")
f = s["failover_s"]
print(f"chaos HA short: {apps['succeeded']}/{apps['submitted']} apps succeeded, kills {kills}, "
      f"runs {c['run']}/{c['needed']} (re-run {c['re_run']}, on killed NMs "
      f"{c['runs_on_killed_nodes']}), duplicates {c['duplicate_ids']}, orphans {s['orphans']}, "
      f"failover p50 {f['p50']} s p99 {f['p99']} s ({f['count']} measured, "
      f"{f.get('timeouts', 0)} timed out); harness exit {sys.argv[2]}")
if s.get("unexpected_exits"):
    print("daemons that exited by themselves (restarted):", ", ".join(s["unexpected_exits"]))
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
EOF
status=$?
if [[ $status -ne 0 ]]; then
  echo "--- harness log (tail)"; tail -40 "$out/stderr"; exit 1
fi
echo PASS
