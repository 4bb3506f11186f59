#!/usr/bin/env bash
# The live-cluster CLI end to end: `weft dev` (an RM and two NMs on 127.0.0.1, the RM on a port
# the kernel picks) in the background, then the client commands against it with real processes.
# Without root the cluster runs with --no-cgroups. Every wait is bounded.
# Usage: cli_test.sh WEFT
set -uo pipefail
weft=$1
source "$(dirname "$0")/lib/dev_cluster.sh"

dev_start --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=4096,vcores=4
ok "weft dev: RM at $rm_address"
if dev_wait_nodes 2; then ok "2 nodes RUNNING"; else
  bad "nodes not RUNNING"; timeout 10 "$weft" node list; fi
timeout 10 "$weft" node list --json | grep -q '"state":"NODE_RUNNING"' && ok "node list --json" ||
  bad "node list --json"

# app_state ID: the app's state from `app status --json`.
app_state() {
  timeout 10 "$weft" app status --json "$1" | sed -n 's/.*"state":"APP_\([A-Z]*\)".*/\1/p'
}

# A command that exits 0: FINISHED, SUCCEEDED, exit code 0.
if timeout 90 "$weft" app submit --command 'exit 0' --wait --timeout-s 60 >"$tmp/ok.out" \
  2>"$tmp/ok.err"; then
  if grep -q 'FINISHED SUCCEEDED' "$tmp/ok.out"; then ok "submit 'exit 0' --wait -> FINISHED"
  else bad "submit 'exit 0': $(cat "$tmp/ok.out")"; fi
else
  bad "submit 'exit 0' --wait exited non-zero: $(cat "$tmp/ok.out" "$tmp/ok.err")"
fi
id=$(head -1 "$tmp/ok.out")
[[ "$(app_state "$id")" == FINISHED ]] && ok "app status $id -> FINISHED" ||
  bad "app status $id: $(app_state "$id")"
# The RM tells the NMs that ran it that the app ended; they delete its work dirs (its
# container logs stay under logs/). Bounded: 10 s (the next heartbeats).
# (Its containers' logs there show the path is right: the work dirs are their siblings.)
ls -d "$tmp"/data/nm*/logs/container_*"${id#application_}"_* >/dev/null 2>&1 ||
  bad "no container logs of $id under $tmp/data/nm*/logs"
for _ in $(seq 1 100); do
  ls -d "$tmp"/data/nm*/"$id" >/dev/null 2>&1 || break
  sleep 0.1
done
if ls -d "$tmp"/data/nm*/"$id" >/dev/null 2>&1; then
  bad "work dir of finished $id still there: $(ls -d "$tmp"/data/nm*/"$id")"
else ok "the NMs deleted the work dir of finished $id"; fi

# A command that exits 3 with two attempts: FAILED after attempt 2, non-zero exit.
if timeout 120 "$weft" app submit --command 'exit 3' --max-attempts 2 --wait --timeout-s 90 \
  >"$tmp/fail.out" 2>"$tmp/fail.err"; then
  bad "submit 'exit 3' --wait exited 0"
else
  id=$(head -1 "$tmp/fail.out")
  attempts=$(timeout 10 "$weft" app status --json "$id" |
    sed -n 's/.*"currentAttempt":\([0-9]*\).*/\1/p')
  if [[ "$(app_state "$id")" == FAILED && "$attempts" == 2 ]]; then
    ok "submit 'exit 3' --max-attempts 2 -> FAILED after 2 attempts, exit non-zero"
  else
    bad "submit 'exit 3': state $(app_state "$id"), attempts $attempts: $(cat "$tmp/fail.out")"
  fi
fi

# Kill a long-running app: KILLED; `app wait` then exits non-zero.
id=$(timeout 10 "$weft" app submit --command 'sleep 100')
for _ in $(seq 1 100); do
  [[ "$(app_state "$id")" == RUNNING ]] && break
  sleep 0.1
done
if timeout 10 "$weft" app kill "$id" >/dev/null; then
  if timeout 30 "$weft" app wait "$id" --timeout-s 20 >/dev/null 2>&1; then
    bad "wait on killed app exited 0"
  fi
  [[ "$(app_state "$id")" == KILLED ]] && ok "app kill $id -> KILLED" ||
    bad "app kill $id: state $(app_state "$id")"
else
  bad "app kill $id failed"
fi
timeout 10 "$weft" app list --state KILLED | grep -q "$id" && ok "app list --state KILLED" ||
  bad "app list --state KILLED does not show $id"

# Errors: one line on stderr, exit code 1. With no history server named (no --history, no
# $WEFT_HISTORY_ADDRESS), an app the RM does not hold is not looked for anywhere else.
timeout 10 env -u WEFT_HISTORY_ADDRESS "$weft" app status application_0_0000 >"$tmp/out" \
  2>"$tmp/err"
rc=$?
if [[ $rc -eq 1 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q '^weft: .*not found' "$tmp/err" &&
    grep -q "give --history URL" "$tmp/err"; then
  ok "app status application_0_0000 -> $(cat "$tmp/err")"
else
  bad "app status application_0_0000: rc $rc, stderr: $(cat "$tmp/err")"
fi
timeout 10 "$weft" app submit --queue nosuch --command true >"$tmp/out" 2>"$tmp/err"
rc=$?
if [[ $rc -ne 0 ]] && grep -q "nosuch" "$tmp/err"; then
  ok "submit --queue nosuch -> $(cat "$tmp/err")"
else
  bad "submit --queue nosuch: rc $rc, stderr: $(cat "$tmp/err")"
fi
timeout 10 "$weft" app list --state bogus >/dev/null 2>"$tmp/err" && bad "app list --state bogus" ||
  ok "app list --state bogus -> $(cat "$tmp/err")"
timeout 20 "$weft" node list --rm 127.0.0.1:1 >/dev/null 2>"$tmp/err"
rc=$?
if [[ $rc -eq 1 ]] && grep -q "cannot reach the ResourceManager at 127.0.0.1:1" "$tmp/err"; then
  ok "unreachable RM -> one-line error"
else
  bad "unreachable RM: rc $rc, stderr: $(cat "$tmp/err")"
fi

# The distributed shell through `weft am shell`: three containers, SUCCEEDED.
if timeout 150 "$weft" app run-shell --num-containers 3 --command 'echo hi' --wait \
  --timeout-s 120 >"$tmp/shell.out" 2>"$tmp/shell.err" &&
  grep -q 'FINISHED SUCCEEDED' "$tmp/shell.out"; then
  ok "run-shell --num-containers 3 -> $(tail -1 "$tmp/shell.out")"
else
  bad "run-shell: $(cat "$tmp/shell.out" "$tmp/shell.err")"
fi

# Terminal-safe output (issue 26): names others chose are printed escaped (common/terminal_text.h)
# by the human commands, exactly by --json; an app name that clears the screen and starts a
# row of its own does neither.
evil=$'evil\e[2J\nforged-row'
apps_before=$(timeout 10 "$weft" app list --json | grep -o '"applicationId"' | wc -l)
if evil_id=$(timeout 10 "$weft" app submit --name "$evil" --command 'sleep 100' 2>"$tmp/evil.err"); then
  timeout 10 "$weft" app list >"$tmp/evil.list" 2>&1
  if grep -q $'\e' "$tmp/evil.list"; then
    bad "app list printed a raw ESC: $(cat -v "$tmp/evil.list")"
  elif grep -q '^forged-row' "$tmp/evil.list"; then
    bad "app list printed a forged row: $(cat -v "$tmp/evil.list")"
  elif [[ $(wc -l <"$tmp/evil.list") -ne $((apps_before + 2)) ]]; then
    bad "app list: $(wc -l <"$tmp/evil.list") lines for $((apps_before + 1)) apps and a header"
  elif ! grep "$evil_id" "$tmp/evil.list" | grep -qF 'evil\x1b[2J\nforged-row'; then
    bad "app list does not show the escaped name: $(cat -v "$tmp/evil.list")"
  else
    ok "app list shows the name escaped: $(grep "$evil_id" "$tmp/evil.list" | awk '{print $2}')"
  fi
  timeout 10 "$weft" app status "$evil_id" >"$tmp/evil.status" 2>&1
  if ! grep -q $'\e' "$tmp/evil.status" && ! grep -q '^forged-row' "$tmp/evil.status" &&
    grep '^Name:' "$tmp/evil.status" | grep -qF 'evil\x1b[2J\nforged-row'; then
    ok "app status shows the name escaped"
  else
    bad "app status: $(cat -v "$tmp/evil.status")"
  fi
  json_name=$(timeout 10 "$weft" app status --json "$evil_id" | jq -j .name)
  if [[ "$json_name" == "$evil" ]]; then ok "app status --json keeps the exact name"
  else bad "app status --json name: $(printf '%s' "$json_name" | cat -v)"; fi
  json_name=$(timeout 10 "$weft" app list --json |
    jq -j --arg id "$evil_id" '.applications[] | select(.applicationId == $id) | .name')
  if [[ "$json_name" == "$evil" ]]; then ok "app list --json keeps the exact name"
  else bad "app list --json name: $(printf '%s' "$json_name" | cat -v)"; fi
  timeout 10 "$weft" app kill "$evil_id" >/dev/null 2>&1 || bad "app kill $evil_id"
else
  bad "submit --name with control characters: $(cat "$tmp/evil.err")"
fi
# An unknown queue's name comes back in the RM's error: printed escaped, one line.
"$weft" queue status $'no\e[2J\nsuch' >/dev/null 2>"$tmp/evilq.err"
rc=$?
if [[ $rc -ne 0 && $(wc -l <"$tmp/evilq.err") -eq 1 ]] && ! grep -q $'\e' "$tmp/evilq.err" &&
  grep -qF "unknown queue 'no\x1b[2J\nsuch'" "$tmp/evilq.err"; then
  ok "queue status with control characters -> $(cat "$tmp/evilq.err")"
else
  bad "queue status with control characters: rc $rc, $(cat -v "$tmp/evilq.err")"
fi
timeout 10 "$weft" app submit --queue $'q\e[2J' --command true >/dev/null 2>"$tmp/evilq.err"
rc=$?
if [[ $rc -ne 0 ]] && ! grep -q $'\e' "$tmp/evilq.err" && grep -qF 'q\x1b[2J' "$tmp/evilq.err"; then
  ok "submit --queue with control characters -> $(cat "$tmp/evilq.err")"
else
  bad "submit --queue with control characters: rc $rc, $(cat -v "$tmp/evilq.err")"
fi
# Floats: --goal-s inf overflowed into a negative goal and nan was ignored; both are refused
# before anything reaches the RM.
apps_before=$(timeout 10 "$weft" app list --json | grep -o '"applicationId"' | wc -l)
for v in inf nan -1 1e400; do
  timeout 10 "$weft" app submit --goal-s="$v" --command true >/dev/null 2>"$tmp/goal.err"
  rc=$?
  if [[ $rc -ne 0 && $rc -lt 128 ]] && grep -qF -- "--goal-s: '$v' is" "$tmp/goal.err"; then
    ok "--goal-s $v refused: $(head -1 "$tmp/goal.err")"
  else
    bad "--goal-s $v: exit $rc, $(cat "$tmp/goal.err")"
  fi
done
timeout 10 "$weft" app wait application_0_0000 --timeout-s nan >/dev/null 2>"$tmp/goal.err"
rc=$?
if [[ $rc -ne 0 ]] && grep -qF -- "--timeout-s: 'nan' is not a finite number of seconds" "$tmp/goal.err"; then
  ok "app wait --timeout-s nan refused"
else bad "app wait --timeout-s nan: exit $rc, $(cat "$tmp/goal.err")"; fi
# GPUs: a share of one GPU (1-1000) or whole GPUs (multiples of 1000), nothing between.
for v in 1500 -5; do
  timeout 10 "$weft" app run-shell --gpu-milli="$v" --command true >/dev/null 2>"$tmp/gpu.err"
  rc=$?
  if [[ $rc -ne 0 && $rc -lt 128 ]] && grep -qF -- "--gpu-milli $v must be" "$tmp/gpu.err"; then
    ok "run-shell --gpu-milli $v refused: $(head -1 "$tmp/gpu.err")"
  else
    bad "run-shell --gpu-milli $v: exit $rc, $(cat "$tmp/gpu.err")"
  fi
done
apps_after=$(timeout 10 "$weft" app list --json | grep -o '"applicationId"' | wc -l)
[[ $apps_after -eq $apps_before ]] && ok "no app was submitted by the refused flags" ||
  bad "refused flags submitted apps: $apps_before before, $apps_after after"

# Queues: the tree with usage; refresh-queues without a config file is refused with the reason.
if "$weft" queue status --rm "$rm_address" >"$tmp/q.out" 2>"$tmp/q.err" &&
  grep -q '^root' "$tmp/q.out" && grep -q 'default' "$tmp/q.out"; then
  ok "queue status lists root and default"
else
  bad "queue status: $(cat "$tmp/q.out" "$tmp/q.err")"
fi
if "$weft" queue status nosuch --rm "$rm_address" >/dev/null 2>"$tmp/q.err"; then
  bad "queue status nosuch succeeded"
elif grep -q "unknown queue 'nosuch'" "$tmp/q.err"; then
  ok "queue status nosuch -> $(head -1 "$tmp/q.err")"
else
  bad "queue status nosuch: $(cat "$tmp/q.err")"
fi
if "$weft" admin refresh-queues --rm "$rm_address" >/dev/null 2>"$tmp/a.err"; then
  bad "refresh-queues without a config file succeeded"
elif grep -q "without a scheduler configuration file" "$tmp/a.err"; then
  ok "refresh-queues without a file -> $(head -1 "$tmp/a.err")"
else
  bad "refresh-queues: $(cat "$tmp/a.err")"
fi

# Decommissioning a node: it is reported DECOMMISSIONED (bounded wait: 10 s).
first_node=$("$weft" node list --rm "$rm_address" --json | grep -o '"nodeId": *"[^"]*"' | head -1 |
  sed 's/.*"\([^"]*\)"$/\1/')
if "$weft" admin decommission "$first_node" --rm "$rm_address" >/dev/null 2>"$tmp/d.err"; then
  state=""
  for _ in $(seq 1 100); do
    state=$("$weft" node status "$first_node" --rm "$rm_address" 2>/dev/null | grep -o DECOMMISSIONED | head -1)
    [[ -n $state ]] && break
    sleep 0.1
  done
  if [[ $state == DECOMMISSIONED ]]; then
    ok "admin decommission $first_node -> DECOMMISSIONED"
  else
    bad "node $first_node not DECOMMISSIONED after admin decommission"
  fi
else
  bad "admin decommission $first_node: $(cat "$tmp/d.err")"
fi

# SIGTERM stops the dev cluster cleanly (bounded: 20 s).
kill -TERM "$dev_pid"
for _ in $(seq 1 200); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$dev_pid" 2>/dev/null; then
  bad "weft dev still running 20 s after SIGTERM"
else
  wait "$dev_pid"
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q "weft dev: stopped" "$tmp/dev.err"; then
    ok "weft dev stopped on SIGTERM"
  else
    bad "weft dev exit $rc after SIGTERM: $(tail -3 "$tmp/dev.err")"
  fi
fi
# The daemons log structured events (common/log.h) on stderr, named by the subcommand.
if grep -Eq ' info +dev node_registered ' "$tmp/dev.err"; then ok "dev logs node_registered"
else bad "no 'info dev node_registered' event in the dev log: $(head -5 "$tmp/dev.err")"; fi
# Values sent as gRPC metadata are checked first: a line break in --user or in the secret file
# is a one-line error (CLI11's exit 105), never gRPC's abort (SIGABRT, 134).
"$weft" app list --user $'alice\nroot' >/dev/null 2>"$tmp/nl.err"
rc=$?
if [[ $rc -ne 0 && $rc -lt 128 ]] && grep -q "has a line break" "$tmp/nl.err"; then
  ok "--user with a newline refused: $(head -1 "$tmp/nl.err")"
else bad "--user with a newline: exit $rc, $(cat "$tmp/nl.err")"; fi
printf 'two\nlines\n' >"$tmp/nl.secret"
WEFT_SECRET_FILE="$tmp/nl.secret" "$weft" app list >/dev/null 2>"$tmp/nls.err"
rc=$?
if [[ $rc -ne 0 && $rc -lt 128 ]] && grep -q "secret file .* has a line break" "$tmp/nls.err"; then
  ok "a secret file with two lines refused"
else bad "secret with a newline: exit $rc, $(cat "$tmp/nls.err")"; fi
# --log-level is checked before anything starts.
if "$weft" rm --port 0 --log-level loud >/dev/null 2>"$tmp/ll.err"; then
  bad "--log-level loud accepted"
elif grep -q "log level 'loud' is not one of debug, info, warn, error, off" "$tmp/ll.err"; then
  ok "--log-level loud refused with the known levels"
else bad "--log-level loud: $(cat "$tmp/ll.err")"; fi

# HA flags: bad ones are refused, naming what is wrong, before anything starts.
ha_refused() {  # EXPECTED-TEXT FLAGS...
  local want=$1; shift
  if "$weft" rm --port 0 "$@" >"$tmp/ha.out" 2>&1; then
    bad "weft rm $* started"
  elif grep -qF -- "$want" "$tmp/ha.out"; then
    ok "weft rm $* refused: $want"
  else bad "weft rm $*: $(cat "$tmp/ha.out")"; fi
}
ha_refused "--state-store and --ha-id do not go together" --ha-id rm1 --ha-zk 127.0.0.1:2181 \
  --state-store "$tmp/x.db"
ha_refused "RM id 'rm 1' may hold only letters" --ha-id "rm 1" --ha-zk 127.0.0.1:2181
ha_refused "no ZooKeeper given" --ha-id rm1
ha_refused "must be an absolute path like /weft" --ha-id rm1 --ha-zk 127.0.0.1:2181 \
  --ha-zk-root weft
ha_refused "--ha-zk and --ha-rm-addresses need --ha-id" --ha-zk 127.0.0.1:2181
# So is a loop poll outside -1..1,000,000 µs.
ha_refused "--loop-poll-us: loop poll -2 µs must be -1 (never sleep)" --loop-poll-us -2

# A refused RM leaves no state store directory behind (it is made when the store opens).
if "$weft" rm --port 0 --state-store "$tmp/rm-refused/state/rm.db" >"$tmp/refused.out" 2>&1; then
  bad "weft rm without TLS started"
elif [[ -e $tmp/rm-refused ]]; then bad "a refused weft rm made $tmp/rm-refused"
else ok "a refused weft rm left its --state-store directory unmade"; fi

# A standalone RM: it runs only with TLS, from certificates `weft certs` makes.
if "$weft" rm --port 0 --state-store "" >"$tmp/notls.out" 2>&1; then
  bad "weft rm started without TLS"
elif grep -q "every Weft daemon speaks mutual TLS" "$tmp/notls.out"; then
  ok "weft rm without --tls-* refused: $(head -c 80 "$tmp/notls.out")..."
else bad "weft rm without TLS: $(cat "$tmp/notls.out")"; fi
"$weft" certs init-ca --dir "$tmp/pki" >/dev/null &&
  "$weft" certs issue --ca-dir "$tmp/pki" --out-dir "$tmp/pki" --role rm --name rm1 >/dev/null ||
  bad "weft certs init-ca / issue"
# The client secret makes its holder a cluster admin; everyone else is who MUNGE says.
printf 's3cret\n' >"$tmp/secret"
"$weft" rm --port 0 --state-store "" --secret-file "$tmp/secret" --tls-ca "$tmp/pki/ca.pem" \
  --tls-cert "$tmp/pki/rm-rm1.pem" --tls-key "$tmp/pki/rm-rm1.key" >"$tmp/rm.out" 2>"$tmp/rm.err" &
rm_pid=$!
secured=""
for _ in $(seq 1 100); do
  secured=$(grep -o '[0-9.]*:[0-9]\+' "$tmp/rm.out" 2>/dev/null | head -1)
  [[ -n $secured ]] && break
  sleep 0.1
done
if [[ -z $secured ]]; then
  bad "weft rm with TLS did not start: $(cat "$tmp/rm.out" "$tmp/rm.err")"
else
  if HOME="$tmp" WEFT_TLS_CA= timeout 20 "$weft" app list --rm "$secured" >/dev/null 2>"$tmp/s.err"; then
    bad "a TLS RM answered a plaintext client"
  elif grep -q "set WEFT_TLS_CA" "$tmp/s.err"; then
    ok "a client without the cluster CA is told to set WEFT_TLS_CA"
  else
    bad "plaintext client against a TLS RM: $(cat "$tmp/s.err")"
  fi
  if WEFT_TLS_CA="$tmp/pki/ca.pem" "$weft" app list --rm "$secured" >/dev/null 2>"$tmp/s.err"; then
    ok "the TLS RM serves a MUNGE-authenticated client"
  else
    bad "TLS RM with MUNGE: $(cat "$tmp/s.err")"
  fi
  printf 'guess\n' >"$tmp/wrong"
  if WEFT_TLS_CA="$tmp/pki/ca.pem" WEFT_SECRET_FILE="$tmp/wrong" "$weft" app list \
    --rm "$secured" >/dev/null 2>"$tmp/s.err"; then
    bad "a wrong admin secret was accepted"
  elif grep -q "wrong admin secret" "$tmp/s.err"; then
    ok "a wrong admin secret is refused"
  else
    bad "wrong admin secret: $(cat "$tmp/s.err")"
  fi
  if WEFT_TLS_CA="$tmp/pki/ca.pem" WEFT_SECRET_FILE="$tmp/secret" "$weft" app list \
    --rm "$secured" >/dev/null 2>"$tmp/s.err"; then
    ok "the TLS RM serves the admin secret's holder"
  else
    bad "TLS RM with the secret: $(cat "$tmp/s.err")"
  fi
fi
kill -TERM "$rm_pid" 2>/dev/null
wait "$rm_pid" 2>/dev/null

# `weft web login` names what is wrong: a bad --rm-http, a web server that cannot be reached
# (its sign-in against a live RM is in web_ui_test).
if "$weft" web login --rm-http "no-port" >/dev/null 2>"$tmp/w.err"; then
  bad "weft web login --rm-http no-port succeeded"
else
  grep -q "'no-port' is not HOST:PORT" "$tmp/w.err" && ok "web login: a bad --rm-http is named" ||
    bad "web login bad address: $(cat "$tmp/w.err")"
fi
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if "$weft" web login --rm-http "127.0.0.1:$closed" >"$tmp/w.out" 2>"$tmp/w.err"; then
  bad "weft web login against a closed port succeeded: $(cat "$tmp/w.out")"
else
  grep -q "cannot reach the RM's web server at http://127.0.0.1:$closed" "$tmp/w.err" &&
    ok "web login: an unreachable web server is named" ||
    bad "web login unreachable: $(cat "$tmp/w.err")"
fi

if [[ $fail -ne 0 ]]; then
  echo "--- weft dev output"; cat "$tmp/dev.out"; tail -30 "$tmp/dev.err"
fi
exit $fail
