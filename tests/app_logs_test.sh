#!/usr/bin/env bash
# `weft app logs` end to end (docs/operations.md, "Container logs"): `weft dev` with a 1 s log
# retention, so a finished app's logs leave the NMs and can only come from the RM's aggregated
# copy; --container; refusals of another user and of an anonymous reader (RM and NM); --follow
# on a running container. Every wait is bounded.
# Usage: app_logs_test.sh WEFT
set -uo pipefail
weft=$1
source "$(dirname "$0")/lib/dev_cluster.sh"

dev_start --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=4096,vcores=4 --log-retention-s 1
export WEFT_RM_HTTP=$web
ok "weft dev: RM at $rm_address, web $web"
dev_wait_nodes 2 || bad "nodes not RUNNING"
nm_web=$(sed -n 's|.*NodeManager 0: .*(metrics at http://\([0-9.]*:[0-9]*\)/metrics).*|\1|p' \
  "$tmp/dev.out")

# An app whose 3 containers echo a marker, to its end.
marker="weft-logs-marker-$$"
if ! timeout 120 "$weft" app run-shell --num-containers 3 --command "echo $marker" --wait \
  >"$tmp/run.out" 2>"$tmp/run.err"; then
  bad "run-shell failed: $(cat "$tmp/run.out" "$tmp/run.err")"
fi
id=$(head -1 "$tmp/run.out")
ok "app $id finished"

# Its logs leave the nodes (work dirs at the app's end, logs 1 s later).
suffix=${id#application_}
for _ in $(seq 1 150); do
  ls -d "$tmp"/data/nm*/logs/container_*"$suffix"_* >/dev/null 2>&1 || break
  sleep 0.2
done
if ls -d "$tmp"/data/nm*/logs/container_*"$suffix"_* >/dev/null 2>&1; then
  bad "the NMs still hold the logs of $id after 30 s"
else ok "the NMs deleted the logs of $id"; fi

# So they come from the aggregated copy: the marker once per worker container.
if timeout 30 "$weft" app logs "$id" >"$tmp/logs.out" 2>"$tmp/logs.err"; then
  n=$(grep -c "^$marker\$" "$tmp/logs.out")
  [[ "$n" == 3 ]] && ok "app logs: the marker of each of the 3 containers" ||
    bad "app logs: marker $n times, not 3: $(head -50 "$tmp/logs.out")"
  grep -q "^LogAggregationType: AGGREGATED" "$tmp/logs.out" && ok "app logs: AGGREGATED" ||
    bad "app logs: not from the aggregated logs"
  grep -q "^End of LogType:stdout" "$tmp/logs.out" && grep -q "^LogLength:" "$tmp/logs.out" &&
    ok "app logs: YARN's layout" || bad "app logs: no LogLength/End of LogType"
else
  bad "app logs $id exited non-zero: $(cat "$tmp/logs.out" "$tmp/logs.err")"
fi
perms=$(find "$tmp/data/aggregated-logs" -mindepth 1 -perm /o=rwx | head -3)
[[ -z "$perms" ]] && ok "aggregated logs not readable by others" ||
  bad "aggregated logs readable by others: $perms"

# --container: only that container's logs.
one=$(awk -v m="$marker" '/^Container: /{c=$2} $0==m{print c; exit}' "$tmp/logs.out")
if [[ -n "$one" ]] && timeout 30 "$weft" app logs "$id" --container "$one" >"$tmp/one.out"; then
  containers=$(grep -c '^Container: ' "$tmp/one.out")
  if [[ "$containers" == 1 ]] && grep -q "^Container: $one " "$tmp/one.out" &&
    grep -q "^$marker\$" "$tmp/one.out"; then ok "app logs --container $one"
  else bad "app logs --container $one: $(cat "$tmp/one.out")"; fi
else
  bad "app logs --container '$one' failed"
fi

# Another user is refused (the app's owner is root and its view ACL is empty); so is an
# anonymous reader, at the RM and at an NM.
cp "$WEFT_TLS_CA" "$tmp/ca.pem" && chmod 644 "$tmp/ca.pem"
if id nobody >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
  if runuser -u nobody -- env WEFT_RM="$WEFT_RM" WEFT_TLS_CA="$tmp/ca.pem" \
    WEFT_RM_HTTP="$WEFT_RM_HTTP" timeout 30 "$weft" app logs "$id" >"$tmp/nobody.out" \
    2>"$tmp/nobody.err"; then
    bad "user nobody read the logs of root's $id: $(head -5 "$tmp/nobody.out")"
  elif grep -q "refused (403)" "$tmp/nobody.err" && ! grep -q "$marker" "$tmp/nobody.out"; then
    ok "user nobody refused (403)"
  else bad "user nobody: $(cat "$tmp/nobody.err")"; fi
else
  echo "skip: another user's refusal needs root and user nobody"
fi
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$web/ws/v1/cluster/apps/$id/logs")
[[ "$code" == 401 ]] && ok "RM: anonymous read of aggregated logs -> 401" ||
  bad "RM: anonymous read of aggregated logs -> $code"

# --follow on a running container: lines as they come, exit when it ends.
fid=$(timeout 30 "$weft" app run-shell --num-containers 1 \
  --command 'for i in 1 2 3 4 5 6; do echo follow-line-$i; sleep 1; done')
worker=""
for _ in $(seq 1 150); do
  timeout 10 "$weft" app logs "$fid" --log-files stdout >"$tmp/f.list" 2>/dev/null
  worker=$(awk '/^Container: /{c=$2} /^follow-line-/{print c; exit}' "$tmp/f.list")
  [[ -n "$worker" ]] && break
  sleep 0.2
done
if [[ -z "$worker" ]]; then
  bad "no running container of $fid printed follow-line-1"
else
  code=$(curl -s -o /dev/null -w '%{http_code}' \
    "http://$nm_web/node/containerlogs/$worker/root/stdout")
  code1=$(curl -s -o /dev/null -w '%{http_code}' \
    "http://$(timeout 10 "$weft" node list --json | tr '{' '\n' |
      sed -n 's/.*"httpAddress":"\([0-9.:]*\)".*/\1/p' | head -1)/ws/v1/node/apps/$fid/containerlogs")
  [[ "$code" == 401 || "$code" == 404 ]] && [[ "$code1" == 401 ]] &&
    ok "NM: anonymous read of container logs -> 401" || bad "NM: anonymous read -> $code, $code1"
  timeout 60 "$weft" app logs "$fid" --container "$worker" --log-files stdout --follow \
    >"$tmp/follow.out" 2>"$tmp/follow.err" &
  follow_pid=$!
  # Lines arrive while the container still runs: follow-line-2 before follow-line-6.
  early=0
  for _ in $(seq 1 100); do
    if grep -q '^follow-line-2$' "$tmp/follow.out"; then
      grep -q '^follow-line-6$' "$tmp/follow.out" || early=1
      break
    fi
    sleep 0.1
  done
  [[ "$early" == 1 ]] && ok "--follow prints lines as they come" ||
    bad "--follow: nothing before the container's end: $(cat "$tmp/follow.out")"
  if wait "$follow_pid"; then
    if [[ "$(grep -c '^follow-line-' "$tmp/follow.out")" == 6 ]]; then
      ok "--follow exits 0 when the container ends, with its 6 lines"
    else bad "--follow output: $(cat "$tmp/follow.out")"; fi
  else
    bad "--follow exited non-zero (or timed out): $(cat "$tmp/follow.out" "$tmp/follow.err")"
  fi
fi

exit $fail
