#!/usr/bin/env bash
# Application history end to end on `weft dev` (issue 31): apps run, their records reach the
# history store through the RM's outbox, and the RM's web port serves them at
# /ws/v1/applicationhistory (YARN's AHS API) and the history page; `weft app list --finished`
# and `weft accounting report` read them; containers carry the usage their NM measured; the
# RM keeps only --max-completed-apps finished apps while the history keeps every one; and
# `weft app status` of an app the RM forgot answers from the history server (and shows a hostile
# server's record escaped, or refuses it when it cannot be a report).
# Usage: history_dev_test.sh WEFT
set -uo pipefail
weft=${1:?usage: history_dev_test.sh WEFT}
source "$(dirname "$0")/lib/dev_cluster.sh"

dev_start --data-dir "$tmp/data" --rm-port 0 --http-port 0 --nodes 1 --max-completed-apps 2
[[ -n "$web" ]] || { echo "FAIL: no web address"; exit 1; }
dev_wait_nodes 1 || { echo "FAIL: the NodeManager did not register"; exit 1; }
export WEFT_HISTORY_ADDRESS="http://$web"

ids=()
for i in 1 2 3; do
  out=$(timeout 150 "$weft" app run-shell --num-containers 2 --command "head -c 20000000 /dev/zero | tail -c 1 >/dev/null" \
    --wait --timeout-s 120 2>&1)
  id=$(grep -o 'application_[0-9]*_[0-9]*' <<<"$out" | head -1)
  if [[ -n $id ]] && grep -q SUCCEEDED <<<"$out"; then ids+=("$id"); else
    bad "run-shell $i did not succeed: $(tail -3 <<<"$out")"; fi
done
[[ ${#ids[@]} -eq 3 ]] || { echo "FAIL: not every app ran"; exit 1; }
ok "3 apps SUCCEEDED: ${ids[*]}"

# Every app in the history (the outbox drains within a second or two; bounded wait).
json() { curl -sf --max-time 5 "http://$web/ws/v1/applicationhistory/$1"; }
for _ in $(seq 1 100); do
  n=$(json apps | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("app", [])))' 2>/dev/null)
  [[ ${n:-0} -ge 3 ]] && break
  sleep 0.2
done
[[ ${n:-0} -eq 3 ]] && ok "/ws/v1/applicationhistory/apps lists the 3 apps" ||
  bad "/ws/v1/applicationhistory/apps lists ${n:-0} apps, want 3"

# One app field by field (YARN's names), its attempt and its containers with measured usage.
id=${ids[0]}
python3 - "$id" "$(json "apps/$id")" "$(json "apps/$id/appattempts")" <<'EOF' && ok "app $id, its attempt and fields as YARN's AHS" || bad "app $id's fields"
import json, sys
app_id, app, attempts = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
for f in ("appId", "user", "name", "queue", "appState", "finalAppStatus", "submittedTime",
          "startedTime", "finishedTime", "elapsedTime", "currentAppAttemptId"):
    assert f in app, f"no {f}: {app}"
assert app["appId"] == app_id and app["appState"] == "FINISHED", app
assert app["finalAppStatus"] == "SUCCEEDED", app
assert app["finishedTime"] >= app["startedTime"] > 0, app
att = attempts["appAttempt"]
assert len(att) == 1 and att[0]["appAttemptId"] == app["currentAppAttemptId"], attempts
assert att[0]["amContainerId"].startswith("container_"), att
EOF
attempt=$(json "apps/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["currentAppAttemptId"])')
containers=$(json "apps/$id/appattempts/$attempt/containers")
python3 - "$containers" <<'EOF' && ok "its 3 containers (AM + 2) with node, exit status 0 and measured usage" || bad "its containers: $containers"
import json, sys
cs = json.loads(sys.argv[1])["container"]
assert len(cs) == 3, f"{len(cs)} containers"
ids = {c["containerId"] for c in cs}
assert len(ids) == 3, "a container twice"
for c in cs:
    assert c["containerExitStatus"] == 0 and c["containerState"] == "COMPLETE", c
    assert c["assignedNodeId"] and c["allocatedMB"] > 0 and c["allocatedVCores"] > 0, c
    assert c["finishedTime"] >= c["startedTime"] > 0, c
EOF
if [[ $(id -u) -eq 0 ]]; then
  # With cgroups (root) the NM measures each container: CPU time and peak memory.
  python3 - "$containers" <<'EOF' && ok "measured usage: CPU time and peak memory of each container" || bad "no measured usage: $containers"
import json, sys
cs = json.loads(sys.argv[1])["container"]
def num(c, *names):
    for n in names:
        if n in c: return c[n]
    raise AssertionError(f"none of {names} in {c}")
assert all(num(c, "peakMemoryBytes", "maxRssBytes", "peakMemory") > 0 for c in cs), cs
assert sum(num(c, "cpuTimeMs", "cpuTime") for c in cs) > 0, cs
EOF
fi

# The CLI readers, through the RM's web port.
if timeout 20 "$weft" app list --finished --since 1d >"$tmp/list" 2>&1 &&
    [[ $(grep -c application_ "$tmp/list") -eq 3 ]]; then ok "app list --finished shows 3"
else bad "app list --finished: $(cat "$tmp/list")"; fi
if timeout 20 "$weft" accounting report --by user --since 1d --csv >"$tmp/acct" 2>&1 &&
    grep -q "^$(id -un)," "$tmp/acct"; then ok "accounting report --by user: $(tail -1 "$tmp/acct")"
else bad "accounting report: $(cat "$tmp/acct")"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$web/applicationhistory")
[[ $code == 200 ]] && ok "the history page is served" || bad "GET /applicationhistory: $code"

# The RM forgot the oldest (max 2 finished apps); the history did not.
rm_finished=$(curl -sf --max-time 5 "http://$web/ws/v1/cluster/apps?states=FINISHED" |
  python3 -c 'import json,sys; a=json.load(sys.stdin)["apps"]; print(len(a["app"]) if a else 0)')
[[ $rm_finished -eq 2 ]] && ok "the RM holds 2 finished apps (--max-completed-apps 2)" ||
  bad "the RM holds $rm_finished finished apps, want 2"
curl -sf --max-time 5 "http://$web/ws/v1/applicationhistory/apps/${ids[0]}" >/dev/null &&
  ok "the forgotten ${ids[0]} is still in the history" || bad "${ids[0]} is not in the history"
# `weft app status` of the forgotten app answers from the history server (as YARN's client asks
# its history service), as a table and as the same JSON report as the RM's; an app neither
# knows is an error naming both.
status() { timeout 20 "$weft" app status "$@"; }
if status "${ids[0]}" >"$tmp/status" 2>&1 && grep -q "^State: *FINISHED" "$tmp/status" &&
    grep -q "^Final-Status: *SUCCEEDED" "$tmp/status" &&
    grep -q "^From: *the history server at http://$web" "$tmp/status"; then
  ok "app status of the forgotten ${ids[0]}: from the history server"
else bad "app status of the forgotten ${ids[0]}: $(cat "$tmp/status")"; fi
status --json "${ids[0]}" >"$tmp/status.json" 2>"$tmp/status.err"
report=$(jq -r '.applicationId + " " + .state + " " + .finalStatus' <"$tmp/status.json")
if [[ $report == "${ids[0]} APP_FINISHED FINAL_SUCCEEDED" ]] &&
    grep -q "from the history server" "$tmp/status.err"; then ok "app status --json of the forgotten app: the RM's report shape, from the history server"
else bad "app status --json of the forgotten app: $(cat "$tmp/status.json" "$tmp/status.err")"; fi
unknown=application_1_9999
if ! status "$unknown" >/dev/null 2>"$tmp/err" && [[ $(wc -l <"$tmp/err") -eq 1 ]] &&
    grep -q "not found by the RM, and the history server at http://$web answered 404" "$tmp/err"
then ok "app status $unknown: $(cat "$tmp/err")"
else bad "app status $unknown: $(cat "$tmp/err")"; fi

# A history server that answers what a report cannot hold (a fake one: the real one cannot be
# made to): terminal escapes in a name are shown escaped; a record of another app, or with a
# state no app has, is refused naming what (exit 1), not shown.
cat >"$tmp/fake_history.py" <<'PY'
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        app = self.path.rsplit("/", 1)[-1]
        rec = {"appId": app, "name": "\x1b[31mred\nFake-Row: x", "user": "u", "queue": "q",
               "appState": "FINISHED", "finalAppStatus": "SUCCEEDED"}
        if app.endswith("_0002"): rec["appId"] = "application_9_9999"
        if app.endswith("_0003"): rec["appState"] = "EXPLODED"
        body = json.dumps(rec).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
print(server.server_port, flush=True)
server.serve_forever()
PY
python3 "$tmp/fake_history.py" >"$tmp/fake_port" &
fake=$!
for _ in $(seq 1 50); do [[ -s $tmp/fake_port ]] && break; sleep 0.1; done
fake_url="http://127.0.0.1:$(cat "$tmp/fake_port")"
if status application_1_0001 --history "$fake_url" >"$tmp/fake_status" 2>&1 &&
    ! grep -q $'\x1b' "$tmp/fake_status" && ! grep -q '^Fake-Row' "$tmp/fake_status" &&
    grep '^Name:' "$tmp/fake_status" | grep -qF '\x1b[31mred\nFake-Row: x'; then
  ok "a hostile history record's name is shown escaped"
else bad "hostile name: $(cat -v "$tmp/fake_status")"; fi
if ! status application_1_0002 --history "$fake_url" >/dev/null 2>"$tmp/err" &&
    grep -q "names another application, 'application_9_9999'" "$tmp/err"
then ok "a record of another app is refused: $(cat "$tmp/err")"
else bad "a record of another app: $(cat "$tmp/err")"; fi
if ! status application_1_0003 --history "$fake_url" >/dev/null 2>"$tmp/err" &&
    grep -q "'EXPLODED' is not an application state" "$tmp/err"
then ok "a record with an unknown state is refused: $(cat "$tmp/err")"
else bad "a record with an unknown state: $(cat "$tmp/err")"; fi
kill "$fake" 2>/dev/null

# /metrics: the outbox drained, the finished apps held.
for _ in $(seq 1 50); do
  curl -sf --max-time 5 "http://$web/metrics" >"$tmp/metrics"
  grep -q '^weft_rm_history_outbox_entries 0$' "$tmp/metrics" && break
  sleep 0.2
done
grep -q '^weft_rm_history_outbox_entries 0$' "$tmp/metrics" &&
  grep -q '^weft_rm_finished_apps 2$' "$tmp/metrics" &&
  grep -q '^weft_rm_finished_apps_forgotten_total 1$' "$tmp/metrics" &&
  ok "/metrics: outbox drained, 2 finished apps held, 1 forgotten" ||
  bad "/metrics: $(grep -E 'weft_rm_(history|finished)' "$tmp/metrics")"

[[ $fail -eq 0 ]] && echo PASS
exit $fail
