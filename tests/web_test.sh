#!/usr/bin/env bash
# The RM's REST API, REST writes and Prometheus metrics end to end: `weft dev` (RM web server
# on a free port, a client secret, REST writes enabled) with real apps, `curl` against every
# endpoint (YARN's field names checked with python3), unauthenticated and authenticated writes,
# and `promtool check metrics` on the RM's and a NodeManager's /metrics. Then `weft rm`: writes
# disabled by default, and refused at start-up without a secret. Every wait is bounded.
# Usage: web_test.sh WEFT
set -uo pipefail
source "$(dirname "$0")/lib/snapshot.sh"
weft=$1
weft_abs=$(readlink -f "$weft")
tmp=$(mktemp -d)
chmod 711 "$tmp"  # the NMs' work roots are inside: containers of other users (nobody) reach their own dirs
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
for tool in curl python3 promtool; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not installed (scripts/install-deps.sh)"; exit 1; }
done

echo "web-test-secret-$$" >"$tmp/secret"
secret=$(cat "$tmp/secret")
dev_flags=(--nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/data"
  --node-resources memory-mb=4096,vcores=4,network-mbps=1000
  --secret-file "$tmp/secret" --http-enable-writes)
if [[ $(id -u) -ne 0 ]]; then dev_flags+=(--no-cgroups); else dev_flags+=(--allowed-system-users root); fi
"$weft" dev "${dev_flags[@]}" >"$tmp/dev.out" 2>"$tmp/dev.err" &
pids+=($!)

# Addresses from dev's output (bounded: 30 s).
rm_address="" web="" nm_web=""
for _ in $(seq 1 300); do
  if grep -q "Ctrl-C" "$tmp/dev.out" 2>/dev/null; then  # the last line: all are printed
    rm_address=$(sed -n 's/.*ResourceManager listening on \([0-9.]*:[0-9]*\).*/\1/p' "$tmp/dev.out")
    web=$(sed -n 's|.*web UI at http://\([0-9.]*:[0-9]*\)/cluster.*|\1|p' "$tmp/dev.out")
    nm_web=$(sed -n 's|.*NodeManager 0: .*(metrics at http://\([0-9.]*:[0-9]*\)/metrics).*|\1|p' \
      "$tmp/dev.out")
    break
  fi
  sleep 0.1
done
if [[ -z "$rm_address" || -z "$web" || -z "$nm_web" ]]; then
  echo "FAIL: weft dev did not start"; cat "$tmp/dev.out" "$tmp/dev.err"; exit 1
fi
ok "weft dev: RM $rm_address, web $web, NM 0 web $nm_web"
export WEFT_RM=$rm_address WEFT_SECRET_FILE=$tmp/secret WEFT_TLS_CA=$tmp/data/tls/ca.pem
base=http://$web/ws/v1/cluster

# Both nodes in the REST API (bounded: 30 s).
for _ in $(seq 1 150); do
  n=$(curl -sf "$base/nodes?states=RUNNING" | python3 -c \
    'import json,sys; print(len(json.load(sys.stdin)["nodes"]["node"]))' 2>/dev/null)
  [[ "$n" == 2 ]] && break
  sleep 0.2
done
[[ "$n" == 2 ]] && ok "2 nodes RUNNING in /nodes" || bad "/nodes shows $n RUNNING nodes"

# Apps: one finished, one running (killed over REST below).
timeout 90 "$weft" app submit --command 'echo hello' --wait --timeout-s 60 >"$tmp/a1" 2>&1 ||
  bad "app submit --wait: $(cat "$tmp/a1")"
finished=$(head -1 "$tmp/a1")
timeout 30 "$weft" app submit --command 'sleep 120' --name long-runner >"$tmp/a2" 2>&1 ||
  bad "app submit: $(cat "$tmp/a2")"
running=$(head -1 "$tmp/a2")
wait_next_snapshot "$web" || bad "no snapshot after the submissions"  # it sees both

# check_keys URL PYTHON_EXPR KEYS...: the object the expression picks from the JSON has the keys.
check_keys() {
  local url=$1 expr=$2; shift 2
  if curl -sf "$url" -o "$tmp/body.json" && python3 - "$tmp/body.json" "$expr" "$@" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
obj = eval(sys.argv[2], {"j": j})
missing = [k for k in sys.argv[3:] if k not in obj]
if missing:
    print("missing YARN fields:", missing, "in", json.dumps(obj)[:300])
    sys.exit(1)
EOF
  then ok "GET ${url#http://$web} has YARN's fields"; else bad "GET $url: $(head -c 300 "$tmp/body.json")"; fi
}
check_keys "$base/info" 'j["clusterInfo"]' id startedOn state haState resourceManagerVersion \
  hadoopVersion
check_keys "$base/metrics" 'j["clusterMetrics"]' appsSubmitted appsCompleted appsPending \
  appsRunning appsFailed appsKilled reservedMB availableMB allocatedMB totalMB \
  reservedVirtualCores availableVirtualCores allocatedVirtualCores totalVirtualCores \
  containersAllocated containersPending totalNodes activeNodes lostNodes unhealthyNodes \
  decommissionedNodes totalNetworkMbps allocatedNetworkMbps availableNetworkMbps
check_keys "$base/scheduler" 'j["scheduler"]["schedulerInfo"]' type capacity usedCapacity \
  maxCapacity queueName queues
check_keys "$base/scheduler" 'j["scheduler"]["schedulerInfo"]["queues"]["queue"][0]' capacity \
  usedCapacity maxCapacity absoluteCapacity absoluteUsedCapacity numApplications queueName
check_keys "$base/apps" 'j["apps"]["app"][0]' id user name queue state finalStatus progress \
  diagnostics startedTime finishedTime elapsedTime allocatedMB allocatedVCores \
  runningContainers memorySeconds vcoreSeconds trackingUrl amContainerLogs
check_keys "$base/apps/$finished" 'j["app"]' id user name queue state finalStatus progress \
  diagnostics startedTime finishedTime elapsedTime allocatedMB allocatedVCores \
  runningContainers memorySeconds vcoreSeconds
check_keys "$base/apps/$finished/appattempts" 'j["appAttempts"]["appAttempt"][0]' id nodeId \
  nodeHttpAddress logsLink containerId startTime
node=$(curl -sf "$base/nodes" | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"]["node"][0]["id"])')
check_keys "$base/nodes/$node" 'j["node"]' id rack state nodeHostName nodeHTTPAddress \
  lastHealthUpdate healthReport numContainers usedMemoryMB availMemoryMB usedVirtualCores \
  availableVirtualCores usedNetworkMbps availNetworkMbps

# Filters.
n=$(curl -sf "$base/apps?states=FINISHED" | python3 -c 'import json,sys; a=json.load(sys.stdin)["apps"]["app"]; print(",".join(x["id"] for x in a))')
[[ "$n" == "$finished" ]] && ok "apps?states=FINISHED" || bad "apps?states=FINISHED: $n"
n=$(curl -sf "$base/apps?limit=1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["apps"]["app"]))')
[[ "$n" == 1 ]] && ok "apps?limit=1" || bad "apps?limit=1: $n"
state=$(curl -sf "$base/apps/$finished" | python3 -c 'import json,sys; a=json.load(sys.stdin)["app"]; print(a["state"], a["finalStatus"])')
[[ "$state" == "FINISHED SUCCEEDED" ]] && ok "app $finished FINISHED SUCCEEDED" || bad "app state: $state"
# The AM's log through the logs link.
logs=$(curl -sf "$base/apps/$finished" | python3 -c 'import json,sys; print(json.load(sys.stdin)["app"]["amContainerLogs"])')
# Logs are for readers the app's view ACL allows (docs/operations.md): anonymous gets 401, the
# owner (this user) with a MUNGE credential made for a Weft client reads them.
code=$(curl -s -o /dev/null -w '%{http_code}' "$logs/stdout")
[[ "$code" == 401 ]] && ok "amContainerLogs refuses an anonymous reader" ||
  bad "amContainerLogs anonymous: $code"
curl -sf -H "X-Weft-Munge-Credential: $(munge -s weft-client)" "$logs/stdout" |
  grep -q hello && ok "amContainerLogs serves the AM's stdout" ||
  bad "amContainerLogs $logs/stdout"

# Errors: JSON bodies with the right status.
expect_status() {  # STATUS METHOD URL [curl args...]
  local want=$1 method=$2 url=$3; shift 3
  local got
  got=$(curl -s -o "$tmp/err.json" -w '%{http_code}' -X "$method" "$@" "$url")
  if [[ "$got" == "$want" ]] && { [[ "$want" == 2* ]] ||
      python3 -c 'import json,sys; json.load(open(sys.argv[1]))["RemoteException"]["message"]' \
        "$tmp/err.json"; }; then
    ok "$method ${url#http://$web} -> $want"
  else
    bad "$method $url -> $got (want $want): $(head -c 300 "$tmp/err.json")"
  fi
}
expect_status 404 GET "$base/apps/application_1_99999"
expect_status 400 GET "$base/apps/not-an-id"
expect_status 404 GET "$base/nodes/nowhere:1"
expect_status 400 GET "$base/apps?states=BOGUS"
expect_status 405 DELETE "$base/apps"

# Writes: unauthenticated and wrong secrets are refused and change nothing.
expect_status 401 POST "$base/apps/new-application"
expect_status 401 PUT "$base/apps/$running/state" -H 'Content-Type: application/json' \
  -H 'X-Weft-Secret: guess' -d '{"state":"KILLED"}'
state=$(curl -sf "$base/apps/$running/state")
[[ "$state" == *RUNNING* || "$state" == *ACCEPTED* ]] && ok "refused kill left $running alive" ||
  bad "after a refused kill: $state"
# Malformed and oversized bodies.
auth=(-H "X-Weft-Secret: $secret" -H 'Content-Type: application/json')
expect_status 400 POST "$base/apps" "${auth[@]}" -d '{"application-id": '
expect_status 400 POST "$base/apps" "${auth[@]}" -d '{"application-id":"application_1_1","priority":"high"}'
head -c 2000000 /dev/zero | tr '\0' 'x' >"$tmp/big"
expect_status 413 POST "$base/apps" "${auth[@]}" --data-binary "@$tmp/big"

# Authenticated writes end to end: new-application, submit, the app runs, kill.
curl -sf -X POST "${auth[@]}" "$base/apps/new-application" -o "$tmp/new.json" ||
  bad "new-application with the secret"
rest_app=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["application-id"])' "$tmp/new.json")
cat >"$tmp/submit.json" <<EOF
{"application-id": "$rest_app", "application-name": "rest-submitted", "queue": "default",
 "max-app-attempts": 1, "resource": {"memory": 256, "vCores": 1},
 "am-container-spec": {"commands": {"command": "$weft_abs am command --command 'echo from-rest; sleep 60'"},
   "environment": {"entry": [{"key": "GREETING", "value": "hi"}]}}}
EOF
expect_status 202 POST "$base/apps" "${auth[@]}" -H 'X-Weft-User: nobody' \
  --data-binary "@$tmp/submit.json"
for _ in $(seq 1 150); do
  state=$(curl -sf "$base/apps/$rest_app" | python3 -c 'import json,sys; a=json.load(sys.stdin)["app"]; print(a["state"], a["user"])' 2>/dev/null)
  [[ "$state" == "RUNNING nobody" ]] && break
  sleep 0.2
done
[[ "$state" == "RUNNING nobody" ]] && ok "REST-submitted $rest_app RUNNING as nobody" ||
  bad "REST-submitted app: $state"
timeout 10 "$weft" app status "$rest_app" >/dev/null 2>&1 && ok "the CLI sees the REST app" ||
  bad "weft app status $rest_app"
expect_status 200 PUT "$base/apps/$rest_app/state" "${auth[@]}" -d '{"state":"KILLED"}'
state=$(curl -sf "$base/apps/$rest_app/state")
[[ "$state" == '{"state":"KILLED"}' ]] && ok "killed over REST: $state" || bad "after REST kill: $state"
expect_status 200 PUT "$base/apps/$running/state" "${auth[@]}" -d '{"state":"KILLED"}'

# Prometheus metrics: the RM's and a NodeManager's pass promtool, with the expected families.
curl -sf "http://$web/metrics" >"$tmp/rm.prom" || bad "GET /metrics on the RM"
if promtool check metrics <"$tmp/rm.prom" >"$tmp/promtool.rm" 2>&1; then
  ok "promtool check metrics: RM ($(grep -vc '^#' "$tmp/rm.prom") samples)"
else bad "promtool on the RM's /metrics: $(cat "$tmp/promtool.rm")"; fi
for family in weft_rm_cluster_resource weft_rm_queue_resource weft_rm_applications \
  weft_rm_containers_allocated_total weft_rm_containers_completed_total \
  weft_rm_containers_preempted_total weft_rm_scheduler_pass_duration_seconds_bucket \
  weft_rm_scheduler_allocations_per_second weft_rm_rpc_duration_seconds_bucket \
  weft_rm_rpc_requests_total weft_rm_nodes; do
  grep -q "^$family" "$tmp/rm.prom" || bad "RM /metrics lacks $family"
done
grep -q 'weft_rm_rpc_duration_seconds_count{method="ClientService/SubmitApplication"}' \
  "$tmp/rm.prom" && ok "RPC latency histogram per method" || bad "no SubmitApplication latency"
grep -q 'weft_rm_cluster_resource{resource="network-mbps",kind="capacity"} 2000' "$tmp/rm.prom" &&
  ok "network-mbps capacity in metrics" || bad "network-mbps capacity missing"
curl -sf "http://$nm_web/metrics" >"$tmp/nm.prom" || bad "GET /metrics on NM 0"
if promtool check metrics <"$tmp/nm.prom" >"$tmp/promtool.nm" 2>&1; then
  ok "promtool check metrics: NM 0 ($(grep -vc '^#' "$tmp/nm.prom") samples)"
else bad "promtool on NM 0's /metrics: $(cat "$tmp/promtool.nm")"; fi
for family in weft_nm_container_launches_total weft_nm_container_launch_failures_total \
  weft_nm_containers_running weft_nm_heartbeats_total; do
  grep -q "^$family" "$tmp/nm.prom" || bad "NM /metrics lacks $family"
done

# `weft rm`: writes are off by default; enabling them without a secret is refused.
rm_tls=(--tls-ca "$tmp/data/tls/ca.pem" --tls-cert "$tmp/data/tls/rm-rm.pem"
  --tls-key "$tmp/data/tls/rm-rm.key")  # the dev cluster's
"$weft" rm --port 0 --http-port 0 --state-store "" "${rm_tls[@]}" >"$tmp/rm.out" 2>"$tmp/rm.err" &
pids+=($!)
rm_web=""
for _ in $(seq 1 100); do
  rm_web=$(sed -n 's|.*web UI http://\([0-9.]*:[0-9]*\)/cluster.*|\1|p' "$tmp/rm.out")
  [[ -n "$rm_web" ]] && break
  sleep 0.1
done
if [[ -n "$rm_web" ]]; then
  expect_status 403 POST "http://$rm_web/ws/v1/cluster/apps/new-application" \
    -H "X-Weft-Secret: anything"
  expect_status 200 GET "http://$rm_web/ws/v1/cluster/info"
else
  bad "weft rm did not print its web address: $(cat "$tmp/rm.out" "$tmp/rm.err")"
fi
if "$weft" rm --port 0 --http-port 0 --state-store "" --http-enable-writes "${rm_tls[@]}" \
  >"$tmp/rm2.out" 2>&1; then
  bad "weft rm --http-enable-writes without --secret-file started"
else
  grep -q "needs --secret-file" "$tmp/rm2.out" && ok "--http-enable-writes without a secret is refused" ||
    bad "unexpected error: $(cat "$tmp/rm2.out")"
fi

if [[ $fail -eq 0 ]]; then echo PASS; else
  echo "--- weft dev output"; cat "$tmp/dev.out"; tail -30 "$tmp/dev.err"; exit 1; fi
