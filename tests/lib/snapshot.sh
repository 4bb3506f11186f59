# wait_next_snapshot WEB: waits (bounded: 15 s) until the RM web server at WEB (host:port) has
# taken a snapshot after this call, by its clusterInfo.snapshotGeneration; returns 1 otherwise.
# Use it after a change made through gRPC (the CLI) instead of sleeping for the next snapshot.
snapshot_generation() {
  curl -sf "http://$1/ws/v1/cluster/info" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["clusterInfo"]["snapshotGeneration"])' \
    2>/dev/null
}
wait_next_snapshot() {
  local g0 g
  g0=$(snapshot_generation "$1") || return 1
  for _ in $(seq 1 150); do
    g=$(snapshot_generation "$1")
    [[ -n "$g" && "$g" -gt "$g0" ]] && return 0
    sleep 0.1
  done
  return 1
}
