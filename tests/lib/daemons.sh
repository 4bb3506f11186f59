# Shared by the end-to-end tests that start `weft rm` and `weft nm` themselves (not `weft dev`).
# Source it after setting `weft`; it makes `tmp` (a scratch directory, mode 711 so that
# containers of other users reach their own dirs inside), sets fail=0, rm_pid and nm_pid, and
# installs an EXIT trap that stops the NM and the RM (their pids in nm_pid and rm_pid) and
# removes `tmp`.
#   ok MSG / bad MSG    report a check; bad makes the test fail (fail=1).
#   stop PID            SIGTERM, up to 10 s, then SIGKILL; returns when it is gone.
#   free_port           prints a free TCP port on 127.0.0.1.
#   wait_rm_address OUT PID
#                       waits (bounded: 30 s) until `weft rm` (PID, its stdout in OUT) prints
#                       its address: sets rm_address; returns 1 when the RM exited or never did.
tmp=$(mktemp -d)
chmod 711 "$tmp"
fail=0
rm_pid=""
nm_pid=""
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
stop() {
  local pid=$1
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
daemons_cleanup() {
  stop "$nm_pid"
  stop "$rm_pid"
  rm -rf "$tmp"
}
trap daemons_cleanup EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_rm_address() {
  local out=$1 pid=$2
  rm_address=""
  for _ in $(seq 1 300); do
    rm_address=$(sed -n 's/.*ResourceManager listening on \([0-9.]*:[0-9]*\).*/\1/p' "$out")
    [[ -n "$rm_address" ]] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
