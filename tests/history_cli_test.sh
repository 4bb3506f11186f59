#!/usr/bin/env bash
# Issue 31 end to end (docs/history.md): `weft history import` fills a SQLite history store,
# `weft history` serves it on a kernel-chosen port; `weft app list --finished`, `weft accounting
# report` and the REST API (curl, YARN's Timeline Server paths) as the current user; another
# user (nobody, MUNGE works for any local user) sees the app redacted and is refused its
# attempts; bad --since/--by values are refused naming them; --retention-max-apps prunes at
# start; an unreachable store answers 503 until it is back. Every wait is bounded.
# Usage: history_cli_test.sh WEFT
set -uo pipefail
weft=$1
tmp=$(mktemp -d)
fail=0
pids=()
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

socket=${WEFT_MUNGE_SOCKET:-/run/munge/munge.socket.2}
if [[ ! -S $socket ]] && [[ $(id -u) -eq 0 ]] && [[ -x /etc/init.d/munge ]]; then
  /etc/init.d/munge start >/dev/null 2>&1
fi
if [[ ! -S $socket ]] || ! command -v munge >/dev/null; then
  echo "skip: needs munged (at $socket) and the munge command"
  exit 77
fi
# Readers started by this test must not pick up a secret or another server from outside.
unset WEFT_SECRET_FILE WEFT_HISTORY_ADDRESS
me=$(id -un)
now=$(($(date +%s) * 1000))
hour=3600000
day=$((24 * hour))
a1=application_1700000000000_0001
a2=application_1700000000000_0002
old=application_1700000000000_0003
t1=appattempt_1700000000000_0001_000001
c1=container_1700000000000_0001_01_000001

# Two recent apps of $me (one with a secret diagnostic), one of bob's 30 days ago. The store
# derives each app's usage from its containers: app 1 held 2000 MB and 1 vcore for an hour,
# app 2 1000 MB and 1 vcore; each burnt half an hour of CPU.
a2_attempt=appattempt_1700000000000_0002_000001
c2=container_1700000000000_0002_01_000001
app() {  # ID USER QUEUE STATE STATUS FINISH_MS EXTRA_JSON
  echo "{\"application\": {\"applicationId\": \"$1\", \"user\": \"$2\", \"queue\": \"$3\"," \
    "\"name\": \"job-$1\", \"startTimeMs\": \"$(($6 - hour))\", \"finishTimeMs\": \"$6\"," \
    "\"finalState\": \"$4\", \"finalStatus\": \"$5\"$7}}"
}
container() {  # ID APP ATTEMPT MB FINISH_MS CPU_MS NET_BYTES
  echo "{\"container\": {\"containerId\": \"$1\", \"applicationId\": \"$2\"," \
    "\"attemptId\": \"$3\", \"nodeId\": \"node1:45454\", \"user\": \"$me\"," \
    "\"allocated\": {\"memory-mb\": \"$4\", \"vcores\": \"1\"}," \
    "\"startTimeMs\": \"$(($5 - hour))\", \"finishTimeMs\": \"$5\"," \
    "\"state\": \"CONTAINER_COMPLETE\", \"cpuTimeMs\": \"$6\", \"networkTxBytes\": \"$7\"}}"
}
{
  echo "# history records, one a line (proto/weft/v1/history.proto as JSON)"
  app $a1 "$me" default APP_FINISHED FINAL_SUCCEEDED $((now - 2 * hour)) \
    ", \"diagnostics\": \"secret-diagnostic-$$\", \"host\": \"node1\", \"currentAttemptId\": \"$t1\""
  app $a2 "$me" prod APP_FAILED FINAL_FAILED $((now - hour)) ""
  app $old bob default APP_KILLED FINAL_KILLED $((now - 30 * day)) ""
  echo "{\"attempt\": {\"attemptId\": \"$t1\", \"applicationId\": \"$a1\", \"host\": \"node1\"," \
    "\"amContainerId\": \"$c1\", \"state\": \"ATTEMPT_FINISHED\"}}"
  container $c1 $a1 $t1 2000 $((now - 2 * hour)) 1800000 1000
  container $c2 $a2 $a2_attempt 1000 $((now - hour)) 1800000 24
} >"$tmp/records.jsonl"
store="sqlite:$tmp/history.db"
if "$weft" history import --store "$store" "$tmp/records.jsonl" >"$tmp/import.out" 2>&1 &&
  grep -q "6 records" "$tmp/import.out"; then ok "history import: 6 records"
else bad "history import: $(cat "$tmp/import.out")"; fi
echo '{"application": {"user": "x"}}' >"$tmp/bad.jsonl"
if "$weft" history import --store "$store" "$tmp/bad.jsonl" >"$tmp/bad.out" 2>&1; then
  bad "an application without an id was imported"
elif grep -q "bad.jsonl:1: .*application_id" "$tmp/bad.out"; then ok "import refuses a record without an id, naming the line"
else bad "import of a bad line: $(cat "$tmp/bad.out")"; fi

# The server, on a port the kernel picks.
start_history() {  # OUT_FILE ARGS...: starts it, sets $addr
  local out=$1
  shift
  "$weft" history --http-port 0 "$@" >"$out" 2>&1 &
  pids+=($!)
  addr=""
  for _ in $(seq 1 100); do
    addr=$(sed -n 's|.* at http://\([0-9.]*:[0-9]*\)/applicationhistory.*|\1|p' "$out")
    [[ -n $addr ]] && return 0
    sleep 0.1
  done
  return 1
}
if start_history "$tmp/history.out" --store "$store"; then ok "weft history serving at $addr"
else
  echo "FAIL: weft history did not start: $(cat "$tmp/history.out")"
  exit 1
fi
export WEFT_HISTORY_ADDRESS=http://$addr

# weft app list --finished: newest first; --since leaves out the old one.
if "$weft" app list --finished >"$tmp/list.out" 2>&1; then
  order=$(awk 'NR > 1 {print $1}' "$tmp/list.out" | tr '\n' ' ')
  [[ $order == "$a2 $a1 $old " ]] && ok "app list --finished: newest first" ||
    bad "app list --finished: $(cat "$tmp/list.out")"
else bad "app list --finished: $(cat "$tmp/list.out")"; fi
if "$weft" app list --finished --since 7d >"$tmp/list7.out" 2>&1 &&
  grep -q "$a1" "$tmp/list7.out" && ! grep -q "$old" "$tmp/list7.out"; then
  ok "app list --finished --since 7d"
else bad "app list --finished --since 7d: $(cat "$tmp/list7.out")"; fi
"$weft" app list --finished --queue prod --json >"$tmp/prod.json" 2>&1
[[ $(grep -o '"appId"' "$tmp/prod.json" | wc -l) == 1 ]] && grep -q "$a2" "$tmp/prod.json" &&
  ok "app list --finished --queue prod --json" || bad "--queue prod: $(cat "$tmp/prod.json")"

# weft accounting report --by user --csv: 2 apps, 3,000 MB-hours, 2 vcore-hours, 1 CPU hour.
if "$weft" accounting report --by user --csv --since 7d >"$tmp/acct.csv" 2>&1; then
  header=$(head -1 "$tmp/acct.csv")
  [[ $header == "user,applications,memory_mb_hours,vcore_hours,memory_mb_hours_used,cpu_hours,network_tx_bytes" ]] &&
    ok "accounting report --csv: header names the units" || bad "accounting header: $header"
  grep -qx "$me,2,3000.00,2.00,0.00,1.00,1024" "$tmp/acct.csv" &&
    ok "accounting report: $me's line" || bad "accounting report: $(cat "$tmp/acct.csv")"
  ! grep -q '^bob,' "$tmp/acct.csv" && ok "accounting report --since 7d leaves out bob's old app" ||
    bad "bob's app of 30 days ago counted"
else bad "accounting report: $(cat "$tmp/acct.csv")"; fi
"$weft" accounting report --by queue --since 60d >"$tmp/queues.out" 2>&1
grep -q "^prod " "$tmp/queues.out" && grep -q "^default " "$tmp/queues.out" &&
  ok "accounting report --by queue (table)" || bad "--by queue: $(cat "$tmp/queues.out")"

# Bad values are refused, naming the flag.
if "$weft" accounting report --by host >"$tmp/by.err" 2>&1; then bad "--by host accepted"
elif grep -q -- "--by 'host': one of user, queue" "$tmp/by.err"; then ok "--by host refused"
else bad "--by host: $(cat "$tmp/by.err")"; fi
if "$weft" app list --finished --since 7x >"$tmp/since.err" 2>&1; then bad "--since 7x accepted"
elif grep -q -- "--since '7x': expected a duration" "$tmp/since.err"; then ok "--since 7x refused"
else bad "--since 7x: $(cat "$tmp/since.err")"; fi

# REST as $me (a MUNGE credential in the header): the details and the attempts.
api=http://$addr/ws/v1/applicationhistory
cred() { munge -n -s weft-client; }
curl -s -H "X-Weft-Munge-Credential: $(cred)" "$api/apps/$a1" >"$tmp/a1.json"
grep -q "\"diagnosticsInfo\":\"secret-diagnostic-$$\"" "$tmp/a1.json" &&
  grep -q '"appState":"FINISHED"' "$tmp/a1.json" && grep -q '"finalAppStatus":"SUCCEEDED"' "$tmp/a1.json" &&
  ok "REST apps/{id} as $me: YARN's fields, the details" || bad "REST as $me: $(cat "$tmp/a1.json")"
code=$(curl -s -o "$tmp/att.json" -w '%{http_code}' -H "X-Weft-Munge-Credential: $(cred)" \
  "$api/apps/$a1/appattempts")
[[ $code == 200 ]] && grep -q "\"amContainerId\":\"$c1\"" "$tmp/att.json" &&
  ok "REST appattempts as $me" || bad "appattempts as $me: $code $(cat "$tmp/att.json")"
code=$(curl -s -o "$tmp/c.json" -w '%{http_code}' -H "X-Weft-Munge-Credential: $(cred)" \
  "$api/apps/$a1/appattempts/$t1/containers")
[[ $code == 200 ]] && grep -q '"container":\[{"allocatedMB":2000' "$tmp/c.json" &&
  ok "REST containers as $me" || bad "containers as $me: $code $(cat "$tmp/c.json")"
code=$(curl -s -o "$tmp/404.json" -w '%{http_code}' "$api/apps/application_1700000000000_0099")
[[ $code == 404 ]] && grep -q RemoteException "$tmp/404.json" && ok "REST unknown app: 404" ||
  bad "unknown app: $code"
# Anonymous: redacted, attempts 403.
curl -s "$api/apps/$a1" >"$tmp/anon.json"
grep -q '"diagnosticsInfo":"N/A"' "$tmp/anon.json" && ok "REST anonymous: redacted" ||
  bad "anonymous: $(cat "$tmp/anon.json")"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$api/apps/$a1/appattempts") == 403 ]] &&
  ok "REST anonymous: attempts 403" || bad "anonymous read the attempts"

# Another user: redacted, 403 on attempts; the accounting report has none of $me's lines.
if [[ $(id -u) -eq 0 ]] && id nobody >/dev/null 2>&1; then
  nobody_cred() { runuser -u nobody -- munge -n -s weft-client; }
  curl -s -H "X-Weft-Munge-Credential: $(nobody_cred)" "$api/apps/$a1" >"$tmp/nobody.json"
  grep -q '"diagnosticsInfo":"N/A"' "$tmp/nobody.json" && grep -q '"host":"N/A"' "$tmp/nobody.json" &&
    ! grep -q "secret-diagnostic" "$tmp/nobody.json" && ok "REST as nobody: redacted" ||
    bad "nobody saw: $(cat "$tmp/nobody.json")"
  code=$(curl -s -o "$tmp/nobody-att.json" -w '%{http_code}' \
    -H "X-Weft-Munge-Credential: $(nobody_cred)" "$api/apps/$a1/appattempts")
  [[ $code == 403 ]] && grep -q "may not view the attempts" "$tmp/nobody-att.json" &&
    ok "REST as nobody: attempts 403" || bad "nobody attempts: $code $(cat "$tmp/nobody-att.json")"
  runuser -u nobody -- env WEFT_HISTORY_ADDRESS="$WEFT_HISTORY_ADDRESS" \
    "$weft" app list --finished >"$tmp/nobody-list.out" 2>&1
  grep -q "$a1" "$tmp/nobody-list.out" && ok "app list --finished as nobody lists the apps" ||
    bad "nobody's list: $(cat "$tmp/nobody-list.out")"
  runuser -u nobody -- env WEFT_HISTORY_ADDRESS="$WEFT_HISTORY_ADDRESS" \
    "$weft" accounting report --by user --csv --since 7d >"$tmp/nobody-acct.csv" 2>&1
  [[ $(wc -l <"$tmp/nobody-acct.csv") == 1 ]] && ok "accounting as nobody: no one else's line" ||
    bad "nobody's accounting: $(cat "$tmp/nobody-acct.csv")"
else
  echo "skip: another user's view needs root and user nobody"
fi

# The page and its script.
curl -s "http://$addr/applicationhistory" | grep -q "Finished applications" &&
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$addr/static/history.js") == 200 ]] &&
  ok "history page served" || bad "history page"

# Retention at start: --retention-max-apps 1 keeps the newest app only.
kill "${pids[0]}" 2>/dev/null
wait "${pids[0]}" 2>/dev/null
if start_history "$tmp/history2.out" --store "$store" --retention-max-apps 1 --http-anonymous-view; then
  for _ in $(seq 1 50); do
    n=$(curl -s "http://$addr/ws/v1/applicationhistory/apps" | grep -o '"appId"' | wc -l)
    [[ $n == 1 ]] && break
    sleep 0.1
  done
  [[ $n == 1 ]] && ok "--retention-max-apps 1 pruned to 1 app" || bad "after pruning: $n apps"
else bad "weft history (retention) did not start: $(cat "$tmp/history2.out")"; fi

# A store that cannot be reached at start (no PostgreSQL server on port 1): the server starts
# and answers 503, naming the store, until it can be opened.
kill "${pids[1]}" 2>/dev/null
wait "${pids[1]}" 2>/dev/null
if start_history "$tmp/history3.out" --store "postgresql://weft@127.0.0.1:1/history"; then
  code=$(curl -s -o "$tmp/503.json" -w '%{http_code}' "http://$addr/ws/v1/applicationhistory/apps")
  [[ $code == 503 ]] && grep -q "127.0.0.1:1" "$tmp/503.json" &&
    ok "an unreachable store: the server starts and answers 503 naming it" ||
    bad "unreachable store: $code $(cat "$tmp/503.json")"
else bad "weft history did not start on an unreachable store: $(cat "$tmp/history3.out")"; fi
if timeout 5 "$weft" history --http-port 0 --store "sqlite:relative.db" >"$tmp/rel.out" 2>&1; then
  bad "a relative sqlite path was accepted"
elif grep -q -- "--store: " "$tmp/rel.out"; then ok "a bad --store is refused at start"
else bad "a bad --store: $(cat "$tmp/rel.out")"; fi

[[ $fail == 0 ]] && echo "PASS" || echo "FAILED"
exit $fail
