#!/usr/bin/env bash
# Issue 26's attacks by an ordinary local user, replayed end to end against `weft dev` as root
# with two Unix users this test creates (weft-alice, weft-bob). Each must now fail, for the
# reason named in docs/security.md ("The attacks, and what stops each", rows 9-15):
#   9.  secrets at rest: the RM's SQLite store (master keys, submissions), its -wal/-shm, the
#       CA's and daemons' keys and the federation store are unreadable to another user and to
#       any container; a daemon refuses a state directory others can read;
#   10. a fork bomb in a 1-vcore container stops at its pids limit and the node keeps running;
#   11. writing past the work dir's disk limit ends the container with a diagnostic naming it;
#   12. 200 MB on stdout leaves at most the log cap on disk;
#   13. with --no-cgroups, `weft app kill` leaves no process of the app (setsid, double fork,
#       a SIGTERM-ignoring child) and frees its port;
#   14. 64 slow clients on the RM's web port: GET /ws/v1/cluster/info still answers within 1 s;
#   15. app names with ESC and newlines are escaped in `weft app list`; --goal-s inf|nan refused;
#   16. `unshare -Ur` in a container is refused (user namespaces off unless the node allows them).
# The ZooKeeper and PostgreSQL stores' ACLs and roles are in-process tests (zk_store_test,
# federation_store_conformance_test). Every wait and load loop is bounded.
# Usage: local_attacks_test.sh WEFT. Exit 77 (skipped, saying why) only when not root.
set -uo pipefail
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root (creates Unix users, runs containers as them)"; exit 77
fi
src_weft=$1
dev_allow_root=0
weft=""
source "$(dirname "$0")/../lib/dev_cluster.sh"

for u in weft-alice weft-bob; do
  id "$u" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$u" ||
    { echo "FAIL: useradd $u"; exit 1; }
done
mkdir -p "$tmp/bin" && cp "$src_weft" "$tmp/bin/weft" && chmod 755 "$tmp/bin" "$tmp/bin/weft"
monitor=$(dirname "$src_weft")/weft-container-monitor
[[ -x $monitor ]] && cp "$monitor" "$tmp/bin/" && chmod 755 "$tmp/bin/weft-container-monitor"
weft=$tmp/bin/weft

as() {
  local user=$1; shift
  runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/nonexistent WEFT_RM="$rm_address" \
    WEFT_TLS_CA="$tmp/ca.pem" timeout 120 "$@"
}
app_of() { sed -n 's/.*\(application_[0-9]*_[0-9]*\).*/\1/p' "$1" | head -1; }

# ---- 9a. A daemon refuses a state directory that others can read, and leaves it as it was.
mkdir -p "$tmp/open" && chmod 755 "$tmp/open"
if "$weft" dev --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/open" >"$tmp/open.out" 2>&1
then bad "weft dev started on a 0755 data directory"
elif grep -q "'$tmp/open' has mode 0755" "$tmp/open.out" && [[ -z $(ls -A "$tmp/open") ]]; then
  ok "weft dev refuses a 0755 --data-dir: $(head -1 "$tmp/open.out")"
else bad "weft dev on a 0755 data dir: $(cat "$tmp/open.out"); left: $(ls -A "$tmp/open")"; fi
if "$weft" rm --port 0 --http-port 0 --state-store "$tmp/open/rm-state.db" >"$tmp/rm-open.out" 2>&1
then bad "weft rm started with its state store in a 0755 directory"
elif grep -q "'$tmp/open' has mode 0755" "$tmp/rm-open.out"; then
  ok "weft rm refuses --state-store in a 0755 directory: $(head -1 "$tmp/rm-open.out")"
else bad "weft rm on a 0755 state dir: $(cat "$tmp/rm-open.out")"; fi

# ---- The cluster for the rest: root's weft dev, as the README starts it.
dev_start --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=4096,vcores=4 --container-disk-limit-mb 64 --container-log-limit-mb 8
dev_wait_nodes 1 || exit 1
ok "weft dev as root: RM at $rm_address, web at $web"
cp "$WEFT_TLS_CA" "$tmp/ca.pem" && chmod 644 "$tmp/ca.pem"
data=$tmp/data
work_root=$data/nm0

# ---- 9b. Secrets at rest: modes, then bob reads, then a container of bob's reads.
as weft-alice "$weft" app submit --name alices-job --command 'true' --wait --timeout-s 90 \
  >"$tmp/alice.out" 2>&1 || bad "alice's app: $(cat "$tmp/alice.out")"
modes=""
for f in "$data" "$data/rm-state.db" "$data/rm-state.db-wal" "$data/rm-state.db-shm" \
  "$data/tls"; do
  modes+="$(stat -c '%n %a' "$f" 2>&1 | sed "s|$data|DATA|")"$'\n'
done
want=$'DATA 711\nDATA/rm-state.db 600\nDATA/rm-state.db-wal 600\nDATA/rm-state.db-shm 600\nDATA/tls 700\n'
[[ $modes == "$want" ]] && ok "state dir 0711, store and its -wal/-shm 0600, tls/ 0700" ||
  bad "modes: $modes"
open_files=$(find "$data" -maxdepth 1 -type f -perm /044 2>/dev/null)
[[ -z $open_files ]] && ok "no file at the top of the data dir is readable by others" ||
  bad "readable by others: $open_files"

# The attack's first step: read the master keys with sqlite3 as another user.
if as weft-bob sqlite3 -readonly "$data/rm-state.db" \
  'SELECT purpose, hex(secret) FROM master_keys' >"$tmp/bob-sqlite.out" 2>&1; then
  bad "bob read the master keys: $(head -3 "$tmp/bob-sqlite.out")"
else ok "bob cannot open the state store: $(head -1 "$tmp/bob-sqlite.out")"; fi
stolen=0
for f in "$data"/rm-state.db* "$data"/tls/*.key; do
  as weft-bob cat "$f" >/dev/null 2>&1 && { stolen=1; bad "bob read $f"; }
done
[[ $stolen -eq 0 ]] && ok "bob reads none of rm-state.db*, tls/*.key"
# ... nor from inside a container of his.
attack="sqlite3 -readonly '$data/rm-state.db' 'SELECT hex(secret) FROM master_keys';
head -c 16 '$data/rm-state.db-wal'; head -1 '$data'/tls/ca.key"
as weft-bob "$weft" app submit --command "$attack" --max-attempts 1 --wait --timeout-s 60 \
  >"$tmp/bob-c.out" 2>&1
bob_app=$(app_of "$tmp/bob-c.out")
bob_stdout=$(cat "$work_root"/logs/container_*_"${bob_app#application_}"_*/stdout 2>/dev/null)
bob_stderr=$(cat "$work_root"/logs/container_*_"${bob_app#application_}"_*/stderr 2>/dev/null)
if [[ -z $bob_app ]]; then bad "bob's reading container did not run: $(cat "$tmp/bob-c.out")"
elif [[ -z $bob_stdout && $bob_stderr == *"Permission denied"* ]]; then
  ok "bob's container reads no key: $(head -1 <<<"$bob_stderr")"
else bad "bob's container: stdout '$bob_stdout' stderr '$bob_stderr'"; fi

# ---- 9c. The federation store: a two-sub-cluster weft dev, its files as private.
mkdir -p "$tmp/fed"
"$weft" dev --subclusters 2 --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/fed/data" \
  >"$tmp/fed/out" 2>"$tmp/fed/err" &
fed_pid=$!
for _ in $(seq 1 300); do
  grep -q "Ctrl-C" "$tmp/fed/out" 2>/dev/null && break
  kill -0 "$fed_pid" 2>/dev/null || break
  sleep 0.1
done
fed_modes=$(cd "$tmp/fed/data" 2>/dev/null && stat -c '%n %a' . federation.db federation.db-wal \
  */rm-state.db 2>&1 | tr '\n' ' ')
if [[ $fed_modes =~ ^". 711 federation.db 600 federation.db-wal 600 ".*"rm-state.db 600 " ]] &&
  [[ $fed_modes != *" 644"* ]]; then
  ok "federation: $fed_modes"
else bad "federation files: $fed_modes; $(cat "$tmp/fed/out" "$tmp/fed/err" | tail -5)"; fi
as weft-bob sqlite3 -readonly "$tmp/fed/data/federation.db" \
  'SELECT count(*) FROM router_master_keys' >"$tmp/fed/bob" 2>&1 &&
  bad "bob read the routers' master keys: $(cat "$tmp/fed/bob")" ||
  ok "bob cannot open federation.db: $(head -1 "$tmp/fed/bob")"
kill -TERM "$fed_pid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$fed_pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$fed_pid" 2>/dev/null

# ---- 10. A fork bomb in a 1-vcore container stops at its pids limit; the node goes on.
as weft-alice "$weft" app submit --name fork-bomb --am-vcores 1 \
  --max-attempts 1 --command 'bomb() { bomb | bomb & }; bomb; sleep 600' >"$tmp/bomb.out" 2>&1
bomb_app=$(app_of "$tmp/bomb.out")
bomb_cg="" current=0 max=""
# The bomb's cgroup: that of the container of alice's with the most processes.
for _ in $(seq 1 150); do
  for cg in $(pgrep -u weft-alice | xargs -I{} sed -n 's/^[0-9]*:pids:\(.*container_.*\)/\1/p' \
    /proc/{}/cgroup 2>/dev/null | sort | uniq -c | sort -rn | head -1 | awk '{print $2}'); do
    bomb_cg=$cg
  done
  if [[ -n $bomb_cg && -r /sys/fs/cgroup/pids$bomb_cg/pids.max ]]; then
    max=$(cat "/sys/fs/cgroup/pids$bomb_cg/pids.max")
    current=$(cat "/sys/fs/cgroup/pids$bomb_cg/pids.current" 2>/dev/null || echo 0)
    [[ $max =~ ^[0-9]+$ && $current -ge $((max - 2)) ]] && break
  fi
  sleep 0.2
done
if [[ $max == 512 && $current -ge 500 && $current -le 512 ]]; then
  ok "fork bomb held at its pids limit: pids.current $current of pids.max $max ($bomb_cg)"
else bad "fork bomb: app '$bomb_app' cgroup '$bomb_cg' pids.max '$max' current '$current'"; fi
if as weft-bob "$weft" app submit --command 'echo alive' --wait --timeout-s 90 \
  >"$tmp/beside.out" 2>&1 && dev_wait_nodes 1; then
  ok "beside the bomb the node runs bob's app and stays RUNNING"
else bad "beside the bomb: $(cat "$tmp/beside.out"); $(as weft-bob "$weft" app status "$(app_of "$tmp/beside.out")" 2>&1)"; fi
as weft-alice "$weft" app kill "$bomb_app" >/dev/null 2>&1
for _ in $(seq 1 150); do pgrep -u weft-alice -f 'bomb\(\)' >/dev/null || break; sleep 0.2; done
pgrep -u weft-alice -f 'bomb\(\)' >/dev/null &&
  bad "the bomb's processes outlived the kill: $(pgrep -u weft-alice -f 'bomb\(\)' | wc -l)" ||
  ok "killed: no process of the bomb is left"

# ---- 16. `unshare -Ur` (a user namespace: the kernel's largest attack surface for a user) is
# refused in containers unless the node allows it (--container-user-namespaces).
as weft-alice "$weft" app submit --name userns --max-attempts 1 --wait --timeout-s 90 \
  --command 'unshare -Ur id' >"$tmp/userns.out" 2>&1
userns_app=$(app_of "$tmp/userns.out")
userns_err=$(cat "$work_root"/logs/container_*_"${userns_app#application_}"_*/stderr 2>/dev/null)
userns_out=$(cat "$work_root"/logs/container_*_"${userns_app#application_}"_*/stdout 2>/dev/null)
if [[ -n $userns_app && $userns_out != *"uid=0(root)"* && $userns_err == *"Operation not permitted"* ]]
then ok "unshare -Ur in alice's container refused: $(head -1 <<<"$userns_err")"
else bad "unshare -Ur: $(cat "$tmp/userns.out"); stdout '$userns_out' stderr '$userns_err'"; fi

# ---- 11. Writing past the work dir's disk limit (this cluster: 64 MB) ends the container.
as weft-alice "$weft" app submit --name disk-filler --max-attempts 1 --wait --timeout-s 90 \
  --command 'head -c 200000000 /dev/zero >filler; sleep 30' >"$tmp/disk.out" 2>&1
disk_app=$(app_of "$tmp/disk.out")
as weft-alice "$weft" app status "$disk_app" >"$tmp/disk.status" 2>&1
if grep -q "over the disk limit of 64 MB (--container-disk-limit-mb)" "$tmp/disk.out" \
  "$tmp/disk.status"; then
  ok "disk filler killed: $(grep -o 'Container killed: its work dir[^;]*limit-mb)' "$tmp/disk.out" \
    "$tmp/disk.status" | head -1 | cut -d: -f2-)"
else bad "disk filler: $(cat "$tmp/disk.out" "$tmp/disk.status")"; fi

# ---- 12. 200 MB on stdout leaves at most the log limit (this cluster: 8 MB) on disk.
as weft-alice "$weft" app submit --name chatty --max-attempts 1 --wait --timeout-s 120 \
  --command 'yes weft-log-line | head -c 200000000' >"$tmp/chatty.out" 2>&1
chatty=$(app_of "$tmp/chatty.out")
stdout_file=$(ls "$work_root"/logs/container_*_"${chatty#application_}"_*/stdout 2>/dev/null | head -1)
size=$(stat -c %s "$stdout_file" 2>/dev/null || echo missing)
if [[ $size =~ ^[0-9]+$ && $size -le $((8 * 1048576)) && $size -gt 0 ]] &&
  head -1 "$stdout_file" | grep -q "earlier bytes of this log were dropped" &&
  tail -c 100 "$stdout_file" | grep -q "weft-log-line"; then
  ok "200 MB of stdout left $size bytes (limit 8 MiB), oldest dropped after a note"
else bad "chatty stdout: '$stdout_file' size $size; $(head -c 300 "$stdout_file" 2>/dev/null)"; fi

# ---- 14. 64 slow clients hold connections to the RM's web port; the REST API still answers.
python3 - "$web" >"$tmp/slow.out" 2>&1 <<'PY' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
clients = []
for _ in range(64):
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(b"GET /ws/v1/cluster/info HTTP/1.1\r\nHost: x\r\n")
    clients.append(s)
print("holding", len(clients), flush=True)
end = time.time() + 20  # bounded: one header byte a second per client, never the end
while time.time() < end:
    for s in clients:
        try:
            s.sendall(b"X")
        except OSError:
            pass
    time.sleep(1)
PY
slow_pid=$!
for _ in $(seq 1 100); do grep -q holding "$tmp/slow.out" 2>/dev/null && break; sleep 0.1; done
code=$(curl -s -o "$tmp/info.json" -w '%{http_code} %{time_total}' --max-time 1 \
  "http://$web/ws/v1/cluster/info")
if grep -q holding "$tmp/slow.out" && [[ $code == 200\ * ]] && grep -q clusterInfo "$tmp/info.json"; then
  ok "with 64 slow clients holding connections, GET /ws/v1/cluster/info: HTTP $code s"
else bad "under 64 slow clients: '$code' $(cat "$tmp/slow.out")"; fi
kill "$slow_pid" 2>/dev/null; wait "$slow_pid" 2>/dev/null

# ---- 15. Names others chose are escaped on bob's terminal; --goal-s inf|nan refused.
evil=$'evil\e[2J\e]0;owned\a\napplication_1_9999  root  FORGED  RUNNING'
as weft-alice "$weft" app submit --name "$evil" --command true --wait --timeout-s 90 \
  >"$tmp/evil.out" 2>&1
evil_app=$(app_of "$tmp/evil.out")
as weft-bob "$weft" app list >"$tmp/list.out" 2>&1
as weft-bob "$weft" app list --json >"$tmp/list.json" 2>&1
if grep -q "$evil_app" "$tmp/list.out" && ! grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$tmp/list.out" &&
  ! grep -q '^application_1_9999' "$tmp/list.out" &&
  grep -qF 'evil\x1b[2J\x1b]0;owned\x07\napplication_1_9999' "$tmp/list.out"; then
  ok "weft app list shows the name escaped: $(grep -oF 'evil\x1b[2J' "$tmp/list.out" | head -1)..."
else bad "weft app list: $(cat -A "$tmp/list.out" | head -20)"; fi
python3 -c '
import json, sys
apps = json.load(open(sys.argv[1])).get("applications", [])
sys.exit(0 if any(a.get("name") == sys.argv[2] for a in apps) else 1)' "$tmp/list.json" "$evil" &&
  ok "--json keeps the exact name" || bad "--json: $(head -c 600 "$tmp/list.json")"
for goal in inf nan -inf; do
  if as weft-alice "$weft" app submit --command true --goal-s "$goal" >"$tmp/goal.out" 2>&1; then
    bad "--goal-s $goal accepted: $(cat "$tmp/goal.out")"
  elif grep -qi "finite" "$tmp/goal.out"; then ok "--goal-s $goal refused: $(head -1 "$tmp/goal.out")"
  else bad "--goal-s $goal: $(cat "$tmp/goal.out")"; fi
done

# ---- 13. Without cgroups, `weft app kill` leaves no process of the app and frees its port.
kill -TERM "$dev_pid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$dev_pid" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dev_start --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/nocg" --no-cgroups \
  --node-resources memory-mb=4096,vcores=4
dev_wait_nodes 1 || exit 1
ok "weft dev --no-cgroups: RM at $rm_address"
cp "$WEFT_TLS_CA" "$tmp/ca.pem"
escapees="setsid sleep 1001 & (sleep 1002 &) ; bash -c 'trap \"\" TERM; sleep 1003' &
setsid python3 -c 'import socket,time; s=socket.socket(); s.bind((\"127.0.0.1\", $port)); s.listen(); time.sleep(1004)' &
sleep 1005"
as weft-alice "$weft" app submit --name escapees --command "$escapees" >"$tmp/esc.out" 2>&1
esc_app=$(app_of "$tmp/esc.out")
for _ in $(seq 1 150); do
  [[ $(pgrep -u weft-alice -f 'sleep 100[1-5]|time.sleep\(1004\)' | wc -l) -ge 5 ]] && break
  sleep 0.2
done
before=$(pgrep -u weft-alice -f 'sleep 100[1-5]|time.sleep\(1004\)' | wc -l)
as weft-alice "$weft" app kill "$esc_app" >"$tmp/esc-kill.out" 2>&1
left=99
for _ in $(seq 1 150); do
  left=$(pgrep -u weft-alice -f 'sleep 100[1-5]|time.sleep\(1004\)' | wc -l)
  [[ $left -eq 0 ]] && break
  sleep 0.2
done
if [[ $before -ge 5 && $left -eq 0 ]] &&
  python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', $port))" 2>/dev/null; then
  ok "--no-cgroups kill: $before escapees (setsid, double fork, SIGTERM-ignoring, a listener) gone, port $port free"
else bad "--no-cgroups kill: before $before, left $left: $(pgrep -a -u weft-alice); $(cat "$tmp/esc.out" "$tmp/esc-kill.out")"; fi

if [[ $fail -eq 0 ]]; then echo PASS; else
  echo "--- weft dev output"; tail -30 "$tmp/dev.out"; tail -40 "$tmp/dev.err"; exit 1; fi
