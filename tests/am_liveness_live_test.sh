#!/usr/bin/env bash
# Issue 15's deadlocks on a live cluster (`weft dev`, real AMs and containers), each of which
# used to leave every app RUNNING at 0% forever under the default policy because AMs took every
# vcore:
#   1. one node of 2 vcores, two `run-shell --num-containers 1` apps: both must finish;
#   2. 200 one-container run-shell apps submitted at once on 4 nodes x 4 vcores: all must finish.
# Bounded: each case has a deadline; the cluster is stopped on exit.
#   tests/am_liveness_live_test.sh WEFT_BINARY
set -uo pipefail
weft=$(realpath "$1")
source "$(dirname "$0")/lib/dev_cluster.sh"

# Submits N one-container apps (no --wait); their ids go to $tmp/ids-$tag.
submit() {
  local tag=$1 n=$2
  : >"$tmp/ids-$tag"
  for i in $(seq 1 "$n"); do
    if ! timeout 30 "$weft" app run-shell --num-containers 1 --command true --memory-mb 256 \
      --name "live-$tag-$i" >>"$tmp/ids-$tag" 2>>"$tmp/submit-$tag.err"; then
      bad "submitting app $i of $n: $(tail -2 "$tmp/submit-$tag.err")"
      return 1
    fi
  done
}

# Waits until every app of $tmp/ids-$tag is FINISHED (SUCCEEDED), at most $2 seconds.
wait_all() {
  local tag=$1 limit=$2 n done_ok=0
  n=$(wc -l <"$tmp/ids-$tag")
  local end=$((SECONDS + limit))
  while ((SECONDS < end)); do
    timeout 30 "$weft" app list --json >"$tmp/list-$tag.json" 2>/dev/null || true
    done_ok=$(python3 - "$tmp/ids-$tag" "$tmp/list-$tag.json" <<'PY'
import json, sys
ids = set(open(sys.argv[1]).read().split())
try:
    apps = json.load(open(sys.argv[2])).get("applications", [])
except Exception:
    apps = []
print(sum(1 for a in apps if a.get("applicationId") in ids and a.get("finalStatus") == "FINAL_SUCCEEDED"))
PY
)
    [[ "$done_ok" -ge "$n" ]] && break
    sleep 1
  done
  echo "$done_ok"
}

# 1. The minimal case.
dev_start --rm-port 0 --http-port 0 --data-dir "$tmp/data" --nodes 1 --node-resources memory-mb=4096,vcores=2
dev_wait_nodes 1 || exit 1
submit two 2 || exit 1
got=$(wait_all two 120)
if [[ "$got" -eq 2 ]]; then
  ok "one node of 2 vcores: both one-container apps SUCCEEDED"
else
  bad "one node of 2 vcores: $got of 2 apps SUCCEEDED within 120 s"
  timeout 10 "$weft" app list
fi
dev_cleanup
tmp=$(mktemp -d); chmod 711 "$tmp"; dev_pid=""

# 2. The burst.
dev_start --rm-port 0 --http-port 0 --data-dir "$tmp/data" --nodes 4 --node-resources memory-mb=16384,vcores=4
dev_wait_nodes 4 || exit 1
start=$SECONDS
submit burst 200 || exit 1
got=$(wait_all burst 600)
if [[ "$got" -eq 200 ]]; then
  ok "200 apps at once on 4 x 4 vcores: all SUCCEEDED in $((SECONDS - start)) s"
else
  bad "200 apps at once on 4 x 4 vcores: $got SUCCEEDED within 600 s"
  timeout 10 "$weft" app list --state RUNNING,ACCEPTED | head -20
fi
exit $fail
