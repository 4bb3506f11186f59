#!/usr/bin/env bash
# The web UI in a real browser: `weft dev` (RM web server on a free port) with a finished, a
# running and a killed app; headless Chromium loads every page (overview, applications, one
# application, nodes, scheduler), the test checks the rendered DOM (the pages render from the
# REST API in JavaScript, so this proves the scripts ran and their data arrived) and saves a
# screenshot of each page to SHOT_DIR. The RM samples its utilisation history every 200 ms:
# the test waits (by polling GET /ws/v1/cluster/history) for two samples, then checks that the
# overview's charts are drawn with at least two points each, and saves a taller screenshot of
# the overview with its charts (SHOT_DIR/overview-history.png, which is what
# docs/images/ui-overview-history.png shows). Every wait is bounded; the whole test takes ~40 s.
# Usage: web_ui_test.sh WEFT SHOT_DIR
set -uo pipefail
weft=$1
shots=$2
source "$(dirname "$0")/lib/dev_cluster.sh"
source "$(dirname "$0")/lib/snapshot.sh"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
[[ -n "$browser" ]] || { echo "FAIL: no chromium (scripts/install-deps.sh installs it)"; exit 1; }
mkdir -p "$shots"

dev_start --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=8192,vcores=8,network-mbps=1000 \
  --history-sample-ms 200 --history-retention-s 600
[[ -n "$web" ]] || { echo "FAIL: weft dev printed no web UI address"; cat "$tmp/dev.out"; exit 1; }
ok "weft dev: RM $rm_address, web UI http://$web/cluster"

# A finished app, a running distributed shell with two containers, a killed app.
timeout 90 "$weft" app submit --name hello-world --command 'echo hello' --wait --timeout-s 60 \
  >"$tmp/a1" 2>&1 || bad "app submit --wait: $(cat "$tmp/a1")"
finished=$(head -1 "$tmp/a1")
timeout 60 "$weft" app run-shell --num-containers 2 --command 'sleep 60' >"$tmp/a2" 2>&1 &
timeout 30 "$weft" app submit --name doomed --command 'sleep 300' >"$tmp/a3" 2>&1 ||
  bad "app submit: $(cat "$tmp/a3")"
timeout 10 "$weft" app kill "$(head -1 "$tmp/a3")" >/dev/null 2>&1 || bad "app kill"
# Wait until the shell's containers run (bounded: 30 s), so the pages show live usage.
for _ in $(seq 1 150); do
  n=$(curl -sf "http://$web/ws/v1/cluster/metrics" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["clusterMetrics"]["containersAllocated"])')
  [[ "${n:-0}" -ge 3 ]] && break
  sleep 0.2
done
[[ "${n:-0}" -ge 3 ]] && ok "$n containers running" || bad "only ${n:-0} containers running"
wait_next_snapshot "$web" || bad "no snapshot after the containers started"

chrome=("$browser" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage
  --no-first-run --hide-scrollbars --user-data-dir="$tmp/profile" --virtual-time-budget=5000)

# page NAME PATH PATTERN...: the rendered DOM contains every pattern; a screenshot is saved.
page() {
  local name=$1 path=$2; shift 2
  local url="http://$web$path"
  if ! timeout 60 "${chrome[@]}" --dump-dom "$url" >"$tmp/$name.html" 2>"$tmp/$name.err"; then
    bad "$name: chromium failed: $(tail -3 "$tmp/$name.err")"; return
  fi
  local missing=()
  for pattern in "$@"; do grep -q -- "$pattern" "$tmp/$name.html" || missing+=("$pattern"); done
  if [[ ${#missing[@]} -eq 0 ]]; then ok "$name ($path) renders: $*"; else
    bad "$name ($path) lacks: ${missing[*]}"; grep -o '<main.*</main>' "$tmp/$name.html" | head -c 2000; echo
  fi
  if timeout 60 "${chrome[@]}" --window-size=1280,900 --screenshot="$shots/$name.png" "$url" \
    >/dev/null 2>"$tmp/$name.shot.err" && [[ -s "$shots/$name.png" ]]; then
    ok "screenshot $shots/$name.png ($(stat -c %s "$shots/$name.png") bytes)"
  else
    bad "$name: no screenshot: $(tail -3 "$tmp/$name.shot.err")"
  fi
}

# The history: at least two samples since the containers started (bounded: 15 s).
history_samples() {
  curl -sf "http://$web/ws/v1/cluster/history?since=$1" | python3 -c \
    'import json,sys; print(len(json.load(sys.stdin)["clusterHistory"]["samples"]))' 2>/dev/null
}
since=$(($(date +%s%3N) - 1))
for _ in $(seq 1 150); do
  n=$(history_samples "$since")
  [[ "${n:-0}" -ge 2 ]] && break
  sleep 0.1
done
[[ "${n:-0}" -ge 2 ]] && ok "history: $n samples since the containers started" ||
  bad "history: ${n:-0} samples in 15 s at --history-sample-ms 200"

page overview /cluster "Cluster overview" "submitted" "memory-mb" "network-mbps" "live" \
  "2 active" "Cluster utilisation per resource" "Containers running and pending" \
  "Queue utilisation" "% of capacity" "time (local clock, hh:mm:ss)" "root.default used"
# Each chart's <svg> says how many samples its longest line has (data-samples), each line its
# points (data-points): the utilisation chart must have a line of >= 2 points per resource.
charts=$(python3 - "$tmp/overview.html" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8", errors="replace").read()
out = []
for chart in ("chart-utilisation", "chart-containers", "chart-queues"):
    m = re.search(r'<svg[^>]*id="%s"[^>]*>(.*?)</svg>' % chart, html, re.S)
    tag = re.search(r'<svg[^>]*id="%s"[^>]*>' % chart, html)
    samples = re.search(r'data-samples="(\d+)"', tag.group(0)) if tag else None
    points = [int(p) for p in
              re.findall(r'<polyline[^>]*data-points="(\d+)"', m.group(1))] if m else []
    out.append("%s=%s/%s" % (chart, samples.group(1) if samples else 0,
                             min(points) if points else 0))
print(" ".join(out))
PY
)
bad_charts=0
for c in $charts; do
  v=${c#*=}
  [[ ${v%/*} -ge 2 && ${v#*/} -ge 2 ]] || bad_charts=1
done
[[ $bad_charts -eq 0 && -n "$charts" ]] && ok "charts drawn (id=samples/fewest points): $charts" ||
  bad "charts not drawn with >= 2 samples: ${charts:-none}"
if timeout 60 "${chrome[@]}" --window-size=1280,1400 --screenshot="$shots/overview-history.png" \
  "http://$web/cluster" >/dev/null 2>"$tmp/history.shot.err" &&
  [[ -s "$shots/overview-history.png" ]]; then ok "screenshot $shots/overview-history.png"; else
  bad "no screenshot of the history: $(tail -3 "$tmp/history.shot.err")"; fi
page applications /cluster/apps "$finished" "hello-world" "doomed" "distributed-shell" \
  ">FINISHED<" ">KILLED<" ">RUNNING<" "sorted-desc"
page application "/cluster/app/$finished" "Application" "hello-world" "SUCCEEDED" \
  "appattempt_" "container_e" "/node/containerlogs/"
page nodes /cluster/nodes "127.0.0.1:" "RUNNING" "Healthy" "network-mbps used / capacity" \
  "vcores used / capacity"
page scheduler /cluster/scheduler "Scheduler" "fair policy" "root" "default" "guaranteed"

# Browser sign-in (docs/web.md): `weft web login` (MUNGE) prints a single-use link; the page
# that opens it shows who it is signed in as, and the link is then used up.
if timeout 30 "$weft" web login --rm-http "$web" >"$tmp/login.out" 2>"$tmp/login.err"; then
  link=$(head -1 "$tmp/login.out")
  me=$(id -un)
  if [[ "$link" == "http://$web/cluster#sign-in="* ]]; then
    ok "weft web login printed a link: ${link%%#*}#sign-in=..."
    if timeout 60 "${chrome[@]}" --dump-dom "$link" >"$tmp/signed-in.html" 2>"$tmp/signed-in.err" &&
      grep -q "<span id=\"who\" class=\"who\"><span>$me </span><button" "$tmp/signed-in.html"; then
      ok "the page that opened the link is signed in as $me"
    else
      bad "signed-in page: $(grep -o '<span id="who".\{0,200\}' "$tmp/signed-in.html")"
    fi
    code=$(curl -s -o "$tmp/again.json" -w '%{http_code}' -X POST \
      -H "X-Weft-Sign-In-Ticket: ${link##*#sign-in=}" "http://$web/ws/v1/cluster/session")
    [[ "$code" == 401 ]] && ok "the link works once (again: 401)" ||
      bad "the link opened again: $code $(cat "$tmp/again.json")"
  else
    bad "weft web login printed no link: $(cat "$tmp/login.out" "$tmp/login.err")"
  fi
  # The same browser (its profile keeps the origin's localStorage) stays signed in; another is
  # anonymous.
  if timeout 60 "${chrome[@]}" --dump-dom "http://$web/cluster/apps" >"$tmp/again.html" \
    2>/dev/null && grep -q "<span id=\"who\" class=\"who\"><span>$me </span>" "$tmp/again.html"; then
    ok "the signed-in browser stays signed in on its next page"
  else
    bad "next page: $(grep -o '<span id="who".\{0,200\}' "$tmp/again.html")"
  fi
  if timeout 60 "${chrome[@]/--user-data-dir=*/--user-data-dir=$tmp/profile2}" --dump-dom \
    "http://$web/cluster" >"$tmp/anon.html" 2>/dev/null &&
    grep -q '<span id="who" class="who"><span title="[^"]*">anonymous</span>' "$tmp/anon.html"; then
    ok "a browser without a session is anonymous"
  else
    bad "anonymous page: $(grep -o '<span id="who".\{0,200\}' "$tmp/anon.html")"
  fi
else
  bad "weft web login: $(cat "$tmp/login.out" "$tmp/login.err")"
fi

# Through a standby: what a standby RM answers (307 to the active's web server) is followed once.
standby_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$standby_port" "$web" <<'PY' >"$tmp/standby.log" 2>&1 &
import http.server, sys
port, active = int(sys.argv[1]), sys.argv[2]
class Standby(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(307)
        self.send_header("Location", "http://%s%s" % (active, self.path))
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", port), Standby)
server.timeout = 5
for _ in range(12):  # bounded: about a minute, and the test kills it before
    server.handle_request()
PY
standby_pid=$!
for _ in $(seq 1 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$standby_port") 2>/dev/null && break
  sleep 0.1
done
if timeout 30 "$weft" web login --rm-http "127.0.0.1:$standby_port" >"$tmp/standby.out" \
  2>"$tmp/standby.err" && [[ "$(head -1 "$tmp/standby.out")" == "http://$web/cluster#sign-in="* ]] &&
  grep -q "is a standby; signing in at the active, http://$web" "$tmp/standby.err"; then
  ok "weft web login through a standby's redirect signs in at the active"
else
  bad "web login through a standby: $(cat "$tmp/standby.out" "$tmp/standby.err" "$tmp/standby.log")"
fi
kill "$standby_pid" 2>/dev/null

if [[ $fail -eq 0 ]]; then echo "PASS (screenshots in $shots)"; else
  echo "--- weft dev output"; cat "$tmp/dev.out"; tail -20 "$tmp/dev.err"; exit 1; fi
