#!/usr/bin/env bash
# An admin's decisions about nodes outlive the RM (docs/cluster.md): `weft rm` (SQLite state
# store, TLS) and two `weft nm` processes; one NM is decommissioned and the other given a
# central attribute; the RM is killed -9 and started again on the same port and store. The
# decommissioned NM's registration is refused (it shuts down), the other registers again and
# has its attribute back. Every wait is bounded.
# Usage: node_admin_restart_test.sh WEFT. Exit 77 (skipped, saying why) only when not root (the
# NMs run their container cgroups).
set -uo pipefail
weft=$1
if [[ $(id -u) -ne 0 ]]; then echo "SKIP: needs root (the NMs make cgroups)"; exit 77; fi
source "$(dirname "$0")/lib/daemons.sh"
nm2_pid=""
trap 'stop "$nm2_pid"; daemons_cleanup' EXIT

rm_port=$(free_port)
p1=$(free_port)
p2=$(free_port)
make_pki node-admin-restart-s3cret "$p1" "$p2"

start_nm() {  # PORT
  local port=$1
  "$weft" nm --rm "127.0.0.1:$rm_port" --port "$port" --http-port 0 --work-root "$tmp/nm$port" \
    --node-resources memory-mb=2048,vcores=2 --allowed-system-users root \
    --cgroup-hierarchy "weft-node-admin-$$-$port" "${tls[@]}" \
    --tls-cert "$tmp/pki/nm-127.0.0.1:$port.pem" --tls-key "$tmp/pki/nm-127.0.0.1:$port.key" \
    >>"$tmp/nm$port.out" 2>>"$tmp/nm$port.err" &
}

running() {  # NODE
  timeout 10 "$weft" node list --state RUNNING 2>/dev/null | grep -q "$1"
}
wait_for() {  # SECONDS COMMAND...
  local seconds=$1; shift
  for _ in $(seq 1 $((seconds * 5))); do "$@" && return 0; sleep 0.2; done
  return 1
}

start_rm "$rm_port"
start_nm "$p1"
nm_pid=$!
start_nm "$p2"
nm2_pid=$!
if ! wait_for 30 running "127.0.0.1:$p1" || ! wait_for 30 running "127.0.0.1:$p2"; then
  echo "FAIL: the NMs did not register"; tail -5 "$tmp"/nm*.err; exit 1
fi
ok "two NMs running"

timeout 10 "$weft" admin decommission "127.0.0.1:$p1" >/dev/null 2>"$tmp/d.err" &&
  ok "admin decommission 127.0.0.1:$p1" || bad "admin decommission: $(cat "$tmp/d.err")"
timeout 10 "$weft" admin node-attributes --add "127.0.0.1:$p2:zone=z7" >/dev/null 2>"$tmp/a.err" &&
  ok "admin node-attributes 127.0.0.1:$p2 zone=z7" || bad "admin node-attributes: $(cat "$tmp/a.err")"
# The decommissioned NM is told to shut down at its next heartbeat.
if wait_for 30 bash -c "! kill -0 $nm_pid 2>/dev/null"; then
  ok "the decommissioned NM shut down"
else
  bad "the decommissioned NM still runs"
fi

# kill -9 of the RM; the decommissioned NM is started again to try its luck with the new RM.
kill -KILL "$rm_pid"
wait "$rm_pid" 2>/dev/null
start_rm "$rm_port"
ok "the RM was killed -9 and started again on the same port and store"
start_nm "$p1"
nm_pid=$!
if wait_for 30 running "127.0.0.1:$p2"; then
  ok "the other NM registered again"
else
  bad "127.0.0.1:$p2 did not register again: $(tail -3 "$tmp/nm$p2.err")"
fi
status=$(timeout 10 "$weft" node status "127.0.0.1:$p2" 2>&1)
grep -q "zone=z7" <<<"$status" && ok "its central attribute is back (zone=z7)" ||
  bad "node status after the restart: $status"
if wait_for 30 bash -c "! kill -0 $nm_pid 2>/dev/null"; then
  grep -q "decommissioned" "$tmp/nm$p1.err" "$tmp/nm$p1.out" &&
    ok "the restarted RM refused the decommissioned NM (it shut down, saying so)" ||
    bad "the NM exited without saying it is decommissioned: $(tail -3 "$tmp/nm$p1.err")"
else
  bad "the decommissioned NM was admitted by the restarted RM"
fi
running "127.0.0.1:$p1" && bad "127.0.0.1:$p1 is RUNNING after the restart"

if [[ $fail -eq 0 ]]; then echo PASS; else
  echo "--- rm.err"; tail -20 "$tmp/rm.err"; exit 1; fi
