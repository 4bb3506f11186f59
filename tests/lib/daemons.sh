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
#   make_pki SECRET NM_PORT...
#                       a CA in $tmp/pki with the RM's certificate (rm-rm1) and an NM's for each
#                       127.0.0.1:NM_PORT, and $tmp/secret (mode 600) holding SECRET; sets
#                       tls=(--tls-ca CA). Exits the test when `weft certs` fails.
#   start_rm PORT       `weft rm` on PORT (0 = any free one) with that PKI and secret, its state
#                       in $tmp/rm-state.db, stdout in $tmp/rm.out, stderr appended to
#                       $tmp/rm.err (a restart adds to it); sets rm_pid and rm_address and
#                       exports WEFT_RM, WEFT_TLS_CA and WEFT_SECRET_FILE for the CLI. Exits the
#                       test when the RM does not start.
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
make_pki() {
  local secret=$1 port
  shift
  "$weft" certs init-ca --dir "$tmp/pki" >/dev/null &&
    "$weft" certs issue --ca-dir "$tmp/pki" --out-dir "$tmp/pki" --role rm --name rm1 >/dev/null ||
    { echo "FAIL: weft certs"; exit 1; }
  for port in "$@"; do
    "$weft" certs issue --ca-dir "$tmp/pki" --out-dir "$tmp/pki" --role nm \
      --name "127.0.0.1:$port" >/dev/null || { echo "FAIL: weft certs issue nm $port"; exit 1; }
  done
  printf '%s\n' "$secret" >"$tmp/secret"
  chmod 600 "$tmp/secret"
  tls=(--tls-ca "$tmp/pki/ca.pem")
}
start_rm() {
  "$weft" rm --port "$1" --http-port 0 --state-store "$tmp/rm-state.db" "${tls[@]}" \
    --tls-cert "$tmp/pki/rm-rm1.pem" --tls-key "$tmp/pki/rm-rm1.key" \
    --secret-file "$tmp/secret" >"$tmp/rm.out" 2>>"$tmp/rm.err" &
  rm_pid=$!
  if ! wait_rm_address "$tmp/rm.out" "$rm_pid"; then
    echo "FAIL: weft rm did not start"; cat "$tmp/rm.out" "$tmp/rm.err"; exit 1
  fi
  export WEFT_RM=$rm_address WEFT_TLS_CA=$tmp/pki/ca.pem WEFT_SECRET_FILE=$tmp/secret
}
