# Shared by the end-to-end tests that drive a `weft dev` cluster. Source it after setting
# `weft` (the binary); it makes `tmp` (a scratch directory) and installs an EXIT trap that stops
# the cluster and removes `tmp` (a test with its own cleanup calls dev_cleanup from it).
#   dev_start FLAGS...  starts `weft dev FLAGS...` in the background (with --no-cgroups when not
#                       root) and waits (bounded: 30 s) until it has printed every address: sets
#                       rm_address, web (host:port of the RM's web UI; "" without one) and
#                       exports WEFT_RM and WEFT_TLS_CA (the cluster CA). Without them it prints
#                       dev's output and exits 1.
#   dev_wait_nodes N    waits (bounded: 30 s) until N nodes are RUNNING; returns 1 otherwise.
#   ok MSG / bad MSG    report a check; bad makes the test fail (fail=1).
tmp=$(mktemp -d)
chmod 711 "$tmp"  # NM work roots live inside: containers of other users reach their own dirs
fail=0
dev_pid=""
rm_address=""
web=""
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

dev_cleanup() {
  if [[ -n "$dev_pid" ]] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -TERM "$dev_pid"
    for _ in $(seq 1 100); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$dev_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap dev_cleanup EXIT

dev_start() {
  local flags=("$@")
  # Containers run as the submitting user; root's are refused unless allowed explicitly
  # (tests/security/ covers ordinary users and sets dev_allow_root=0).
  if [[ $(id -u) -ne 0 ]]; then flags+=(--no-cgroups)
  elif [[ ${dev_allow_root:-1} -eq 1 ]]; then flags+=(--allowed-system-users root); fi
  "$weft" dev "${flags[@]}" >"$tmp/dev.out" 2>"$tmp/dev.err" &
  dev_pid=$!
  for _ in $(seq 1 300); do
    if grep -q "Ctrl-C" "$tmp/dev.out" 2>/dev/null; then  # its last line: all are printed
      rm_address=$(sed -n 's/.*ResourceManager listening on \([0-9.]*:[0-9]*\).*/\1/p' \
        "$tmp/dev.out")
      web=$(sed -n 's|.*web UI at http://\([0-9.]*:[0-9]*\)/cluster.*|\1|p' "$tmp/dev.out")
      WEFT_TLS_CA=$(sed -n 's|.*cluster CA WEFT_TLS_CA=\([^ ]*\) .*|\1|p' "$tmp/dev.out")
      break
    fi
    kill -0 "$dev_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$rm_address" ]]; then
    echo "FAIL: weft dev did not start"; cat "$tmp/dev.out" "$tmp/dev.err"; exit 1
  fi
  export WEFT_RM=$rm_address WEFT_TLS_CA
}

dev_wait_nodes() {
  local want=$1 running=0
  for _ in $(seq 1 150); do
    running=$(timeout 10 "$weft" node list --state RUNNING 2>/dev/null | grep -c RUNNING)
    [[ "$running" -ge "$want" ]] && return 0
    sleep 0.2
  done
  echo "FAIL: $running of $want nodes RUNNING after 30 s"
  return 1
}
