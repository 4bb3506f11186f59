#!/usr/bin/env bash
# `weft config import-yarn` end to end, on the example configurations of Hadoop's documentation
# (src/config/testdata/: CapacityScheduler.md's queues a,b,c / a1,a2 / b1,b2,b3 and
# FairScheduler.md's example allocation file): converts each, checks the files written and the
# unconverted list, starts `weft dev` with the scheduler.yaml produced, and checks that
# `weft queue status` shows the XML's queue tree with its capacities or weights and states.
# Also: no overwrite without --force, and a malformed file is refused naming file:line. Every
# wait is bounded. Usage: yarn_import_cli_test.sh WEFT SOURCE_DIR
set -uo pipefail
weft=$1
data=$2/src/config/testdata
source "$(dirname "$0")/lib/dev_cluster.sh"

dev_stop() {
  if [[ -n "$dev_pid" ]] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -TERM "$dev_pid"
    for _ in $(seq 1 100); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$dev_pid" 2>/dev/null
    wait "$dev_pid" 2>/dev/null
  fi
  dev_pid=""
}

# queue_tree: `weft queue status --json` as one line per queue: PATH STATE CAPACITY WEIGHT.
queue_tree() {
  timeout 10 "$weft" queue status --json | python3 -c '
import json, sys
def walk(q, prefix):
    path = q["name"] if not prefix else prefix + "." + q["name"]
    print(path, q.get("state", ""), "%g" % q.get("capacity", 0), "%g" % q.get("weight", 0))
    for c in q.get("children", []):
        walk(c, path)
walk(json.load(sys.stdin)["queue"], "")'
}

# check_import NAME FLAGS...: runs the import into $tmp/NAME; sets out.
check_import() {
  local name=$1; shift
  out=$tmp/$name
  if "$weft" config import-yarn "$@" --out-dir "$out" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
    ok "import-yarn $name: exit 0"
  else
    bad "import-yarn $name exited non-zero: $(cat "$tmp/$name.err")"
  fi
  for f in scheduler.yaml weft.yaml unconverted.txt; do
    [[ -s "$out/$f" ]] || bad "import-yarn $name: $out/$f missing or empty"
  done
  # Every unconverted line is printed, and each is "<file>:<line>: <what>: <why>".
  local listed printed
  listed=$(wc -l <"$out/unconverted.txt")
  printed=$(grep -c ':[0-9]*: ' "$tmp/$name.out")
  [[ "$listed" -eq "$printed" ]] && ok "import-yarn $name: $listed unconverted items printed" ||
    bad "import-yarn $name: $listed in unconverted.txt, $printed printed"
  if grep -vq '^[^:]*\.xml:[0-9][0-9]*: .*: ' "$out/unconverted.txt"; then
    bad "import-yarn $name: malformed unconverted line: $(grep -v '^[^:]*\.xml:[0-9][0-9]*: .*: ' "$out/unconverted.txt")"
  fi
}

# check_tree NAME EXPECTED: starts `weft dev` on $tmp/NAME/scheduler.yaml, compares the tree.
check_tree() {
  local name=$1 expected=$2
  dev_start --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/data-$name" \
    --scheduler-config "$tmp/$name/scheduler.yaml"
  ok "weft dev starts with the $name scheduler.yaml"
  local got
  got=$(queue_tree)
  if [[ "$got" == "$expected" ]]; then
    ok "$name: weft queue status shows the XML's queue tree"
  else
    bad "$name: queue tree differs"
    diff <(echo "$expected") <(echo "$got")
  fi
  dev_stop
}

# ---- CapacityScheduler.md.
check_import capacity --yarn-site "$data/yarn-site-capacity.xml" \
  --capacity-scheduler "$data/capacity-scheduler.xml"
[[ $(wc -l <"$out/unconverted.txt") -eq 8 ]] || bad "capacity: expected 8 unconverted items"
grep -q 'capacity-scheduler.xml:31: yarn.scheduler.capacity.queue-mappings=u:user1:queue1,u:user2:queue2: Weft has no queue placement rules' \
  "$out/unconverted.txt" && ok "capacity: queue-mappings listed" || bad "capacity: queue-mappings not listed"
grep -q '^policy: capacity$' "$out/scheduler.yaml" || bad "capacity: policy is not capacity"
grep -q 'node-resources: "memory-mb=8192,vcores=8"' "$out/weft.yaml" ||
  bad "capacity: weft.yaml has no node-resources"
# Capacities: a 12.5, b 50, c 37.5; a1 60, a2 40; b's weights 3w,2w,5w = 30, 20, 50.
check_tree capacity "root RUNNING -1 1
root.a RUNNING 12.5 1
root.a.a1 RUNNING 60 1
root.a.a2 RUNNING 40 1
root.b RUNNING 50 1
root.b.b1 RUNNING 30 1
root.b.b2 RUNNING 20 1
root.b.b3 STOPPED 50 1
root.c RUNNING 37.5 1"

# ---- FairScheduler.md.
check_import fair --yarn-site "$data/yarn-site-fair.xml" --fair-scheduler "$data/fair-scheduler.xml"
[[ $(wc -l <"$out/unconverted.txt") -eq 14 ]] || bad "fair: expected 14 unconverted items"
grep -q 'fair-scheduler.xml:42: <rule name="primaryGroup" create="false"/>: Weft has no queue placement rules' \
  "$out/unconverted.txt" && ok "fair: placement rules listed" || bad "fair: placement rules not listed"
grep -q '^policy: fair$' "$out/scheduler.yaml" || bad "fair: policy is not fair"
# Weights: sample_queue 2, secondary_group_queue 3; root.default as YARN's FairScheduler has it.
check_tree fair "root RUNNING -1 1
root.sample_queue RUNNING -1 2
root.sample_queue.sample_sub_queue RUNNING -1 1
root.sample_queue.sample_reservable_queue RUNNING -1 1
root.secondary_group_queue RUNNING -1 3
root.default RUNNING -1 1"

# ---- Errors: one line on stderr, non-zero exit, nothing overwritten.
if "$weft" config import-yarn --fair-scheduler "$data/fair-scheduler.xml" --out-dir "$tmp/fair" \
  >/dev/null 2>"$tmp/exists.err"; then
  bad "import-yarn overwrote existing files without --force"
else
  grep -q 'exists; not overwriting it without --force' "$tmp/exists.err" &&
    ok "no overwrite without --force" || bad "overwrite refusal: $(cat "$tmp/exists.err")"
fi
"$weft" config import-yarn --yarn-site "$data/yarn-site-fair.xml" \
  --fair-scheduler "$data/fair-scheduler.xml" --out-dir "$tmp/fair" --force >/dev/null &&
  ok "--force overwrites" || bad "--force did not overwrite"
printf '<configuration>\n<property>\n<name>x</name>\n</configuration>\n' >"$tmp/broken.xml"
if "$weft" config import-yarn --capacity-scheduler "$tmp/broken.xml" --out-dir "$tmp/broken" \
  >/dev/null 2>"$tmp/broken.err"; then
  bad "malformed XML accepted"
else
  grep -q "broken.xml:4: malformed XML" "$tmp/broken.err" && ok "malformed XML: file:line" ||
    bad "malformed XML: $(cat "$tmp/broken.err")"
  [[ -e "$tmp/broken/scheduler.yaml" ]] && bad "malformed XML: files written anyway"
fi
if "$weft" config import-yarn --capacity-scheduler "$data/capacity-scheduler.xml" \
  --fair-scheduler "$data/fair-scheduler.xml" --out-dir "$tmp/both" >/dev/null 2>&1; then
  bad "both scheduler files accepted"
else
  ok "--capacity-scheduler and --fair-scheduler exclude each other"
fi

[[ $fail -eq 0 ]] && echo "PASS" || echo "FAIL"
exit $fail
