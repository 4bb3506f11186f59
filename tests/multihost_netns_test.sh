#!/usr/bin/env bash
# A cluster of several hosts on one machine (issue 18, "multi-host"): the RM, two NMs and a
# client each in a network namespace of their own, joined by a bridge in a fifth ("switch")
# namespace, each with its own address on a private /24. Nothing may rely on 127.0.0.1:
#
#   weft-rm-PID      eth0 10.213.7.1    weft rm  --bind 10.213.7.1   (gRPC 8032, web 8088)
#   weft-nm1-PID     eth0 10.213.7.11   weft nm  --bind 10.213.7.11  (gRPC 8041, web 8042)
#   weft-nm2-PID     eth0 10.213.7.12   weft nm  --bind 10.213.7.12  (gRPC 8041, web 8042)
#   weft-client-PID  eth0 10.213.7.100  the CLI, curl and a transfer sink
#   weft-sw-PID      br0, the other end of every eth0
#
# Security is on as in production: each daemon has a certificate of the cluster CA valid for
# its own address (the RM's by --san, an NM's by its node id), users are authenticated by the
# machine's munged (its Unix socket is shared by every network namespace). The checks, from the
# client namespace:
#   1. both NMs registered, each under its own address (node list);
#   2. the daemons listen on their namespace's address, none on a loopback address (ss);
#   3. `weft app run-shell --num-containers 4` SUCCEEDS with containers on both NMs (the AM, on
#      one NM, reaches the RM and both NMs across namespaces);
#   4. the RM's web UI and /ws/v1/cluster/nodes over HTTP (each node's own id, host and HTTP
#      address), the AM's logs at its NM's address, each NM's /metrics;
#   5. bandwidth: one container of 50 Mbit/s per NM, each NM shaping its own eth0: the HTB class
#      of each container is on its NM's interface, and a 6 s transfer from each to the
#      client's sink measures within 20% of 50 Mbit/s.
# Exit 77 (skipped, saying why) only where root, network namespaces, veth pairs or bridges are
# unavailable. Everything it makes is removed on every exit path.
set -euo pipefail
weft=$(readlink -f "$1")

skip() { echo "SKIPPED: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root (network namespaces, bridges, cgroups, tc)"
for tool in ip tc iptables nsenter ss curl python3 munge; do
  command -v $tool >/dev/null || skip "$tool not installed (scripts/install-deps.sh installs it)"
done

tag=$$
sw=weft-sw-$tag
ns_rm=weft-rm-$tag
ns_nm1=weft-nm1-$tag
ns_nm2=weft-nm2-$tag
ns_client=weft-client-$tag
net=10.213.7
rm_ip=$net.1
nm1_ip=$net.11
nm2_ip=$net.12
client_ip=$net.100
rm_port=8032
rm_http=8088
nm_port=8041
nm_http=8042
rm_addr=$rm_ip:$rm_port
rm_addr_http=$rm_ip:$rm_http

tmp=$(mktemp -d /tmp/weft-multihost.XXXXXX)
chmod 711 "$tmp"  # the NMs' work roots live inside
pids=()
made_ns=()
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

cleanup() {
  local rc=$?
  set +e
  # Daemons first (SIGTERM: the NMs stop their containers and remove their HTB classes and
  # cgroups), SIGKILL after 10 s.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Whatever still runs in the namespaces (containers an NM killed by SIGKILL left, their
  # monitors) is killed: a deleted namespace's processes would live on, unreachable.
  for ns in "${made_ns[@]}"; do
    for _ in $(seq 1 50); do
      left=$(ip netns pids "$ns" 2>/dev/null)
      [[ -z $left ]] && break
      # shellcheck disable=SC2086  # one pid a word
      kill -KILL $left 2>/dev/null
      sleep 0.1
    done
  done
  # Deleting a namespace deletes its veth ends, and with the switch's, the bridge.
  for ns in "${made_ns[@]}"; do ip netns del "$ns" 2>/dev/null; done
  for h in nm1 nm2; do
    for root in /sys/fs/cgroup /sys/fs/cgroup/*; do
      [[ -d $root/weft-mh-$tag-$h ]] && find "$root/weft-mh-$tag-$h" -depth -type d \
        -exec rmdir {} \; 2>/dev/null
    done
  done
  if [[ $rc != 0 && -d $tmp ]]; then
    for f in "$tmp"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 30 "$f"; }; done
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Namespaces, a bridge and veth pairs: skipped only if the kernel or iproute2 cannot make them.
ip netns add "$sw" 2>/dev/null || skip "cannot create network namespaces"
made_ns+=("$sw")
ip -n "$sw" link add br0 type bridge 2>/dev/null || skip "cannot create a bridge"
ip -n "$sw" link set br0 up
ip -n "$sw" link set lo up
host_ns() {  # NAME IP: a namespace with eth0 (ip/24) into the switch's bridge, lo up
  local ns=$1 ip=$2 port=p${#made_ns[@]}
  ip netns add "$ns"
  made_ns+=("$ns")
  ip -n "$sw" link add "$port" type veth peer name eth0 netns "$ns" 2>/dev/null ||
    skip "cannot create veth pairs"
  ip -n "$sw" link set "$port" master br0 up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}
host_ns "$ns_rm" $rm_ip
host_ns "$ns_nm1" $nm1_ip
host_ns "$ns_nm2" $nm2_ip
host_ns "$ns_client" $client_ip

# Daemons run under nsenter --net: it keeps this mount namespace, where `ip netns exec` would
# remount /sys and hide the cgroup hierarchies the NMs need. The client uses `ip netns exec`.
in_ns() { local ns=$1; shift; nsenter --net=/run/netns/"$ns" "$@"; }
client() { ip netns exec "$ns_client" "$@"; }
daemon() {  # NAMESPACE LOG COMMAND...: in the background, its pid (not a subshell's) in pids
  local ns=$1 log=$2
  shift 2
  nsenter --net=/run/netns/"$ns" "$@" >"$log" 2>&1 &
  pids+=($!)
}

# munged authenticates the CLI's user: through its Unix socket, which every namespace shares.
munge -n </dev/null >/dev/null 2>&1 ||
  { echo "FAIL: munged does not answer (start it: /etc/init.d/munge start)"; exit 1; }

# The cluster CA and one certificate per daemon, naming the address others dial it at: the
# RM's by --san; an NM's by its name, its node id HOST:PORT, whose HOST `weft certs issue` adds.
pki=$tmp/pki
"$weft" certs init-ca --dir "$pki" >/dev/null
"$weft" certs issue --ca-dir "$pki" --out-dir "$pki" --role rm --name rm --san $rm_ip >/dev/null
for ip in $nm1_ip $nm2_ip; do
  "$weft" certs issue --ca-dir "$pki" --out-dir "$pki" --role nm --name "$ip:$nm_port" >/dev/null
done
tls() { echo --tls-ca "$pki/ca.pem" --tls-cert "$pki/$1.pem" --tls-key "$pki/$1.key"; }
export WEFT_TLS_CA=$pki/ca.pem WEFT_RM=$rm_addr

# The RM. Containers run as root here (the test's user): allowed explicitly on the NMs.
# shellcheck disable=SC2046
daemon "$ns_rm" "$tmp/rm.log" "$weft" rm --bind $rm_ip --port $rm_port --http-port $rm_http \
  --state-store "$tmp/rm/state.db" --resource-limit network-mbps:1:100 --http-anonymous-view \
  $(tls rm-rm)
ready=0
for _ in $(seq 1 150); do
  client timeout 10 "$weft" node list >/dev/null 2>&1 && { ready=1; break; }
  kill -0 "${pids[0]}" 2>/dev/null || break
  sleep 0.2
done
[[ $ready == 1 ]] || { echo "FAIL: the RM did not answer at $rm_addr from $ns_client"; exit 1; }
ok "the RM answers at $rm_addr from the client namespace"

# The NMs: each shapes its own eth0 (link 100 Mbit/s, containers' total 80, strict ceilings).
start_nm() {  # NAMESPACE IP NAME
  # shellcheck disable=SC2046
  daemon "$1" "$tmp/$3.log" "$weft" nm --rm $rm_addr --bind "$2" --port $nm_port \
    --http-port $nm_http \
    --work-root "$tmp/$3" --node-resources memory-mb=1024,vcores=4 \
    --cgroup-hierarchy "weft-mh-$tag-$3" --allowed-system-users root \
    --network-interface eth0 --link-mbps 100 --network-containers-mbps 80 \
    --network-burst strict $(tls "nm-$2:$nm_port")
}
start_nm "$ns_nm1" $nm1_ip nm1
start_nm "$ns_nm2" $nm2_ip nm2

echo "== 1. both NMs registered under their own addresses"
running=0
for _ in $(seq 1 150); do
  running=$(client timeout 10 "$weft" node list --state RUNNING 2>/dev/null | grep -c RUNNING) ||
    true
  [[ $running -ge 2 ]] && break
  sleep 0.2
done
nodes=$(client timeout 60 "$weft" node list)
echo "$nodes"
if [[ $running -ge 2 && $nodes == *"$nm1_ip:$nm_port"* && $nodes == *"$nm2_ip:$nm_port"* ]]; then
  ok "node list shows $nm1_ip:$nm_port and $nm2_ip:$nm_port RUNNING"
else
  bad "node list: $running RUNNING, want both NMs by their addresses"
fi
[[ $nodes != *127.0.0.1* ]] || bad "node list mentions 127.0.0.1"

echo "== 2. every daemon listens on its namespace's address, none on 127.0.0.1 only"
listening() {  # NAMESPACE PID: the addresses PID listens on (TCP)
  # gRPC listens on an IPv6 socket: an IPv4 address shows as [::ffff:A.B.C.D].
  in_ns "$1" ss -Hltnp | awk -v p="pid=$2," 'index($0, p) {print $4}' |
    sed 's/^\[::ffff:\([0-9.]*\)\]/\1/' | sort -u
}
check_listen() {  # NAMESPACE PID IP PORT...
  local ns=$1 pid=$2 ip=$3
  shift 3
  local addrs
  addrs=$(listening "$ns" "$pid")
  for port in "$@"; do
    if grep -qx "$ip:$port" <<<"$addrs"; then ok "$ns: pid $pid listens on $ip:$port"
    else bad "$ns: pid $pid does not listen on $ip:$port: $(tr '\n' ' ' <<<"$addrs")"; fi
  done
  if grep -q '^127\.' <<<"$addrs"; then bad "$ns: pid $pid listens on loopback: $addrs"; fi
}
check_listen "$ns_rm" "${pids[0]}" $rm_ip $rm_port $rm_http
check_listen "$ns_nm1" "${pids[1]}" $nm1_ip $nm_port $nm_http
check_listen "$ns_nm2" "${pids[2]}" $nm2_ip $nm_port $nm_http

echo "== 3. run-shell, 4 containers, across namespaces"
# A node holds 1024 MB: the AM (256) and two 384-MB containers at most, so four containers
# running together need both NMs. Each prints the address of the host it ran on.
# shellcheck disable=SC2016  # $4 is awk's, in the container
out=$(client timeout 180 "$weft" app run-shell --num-containers 4 --memory-mb 384 \
  --am-memory-mb 256 --max-retries 0 --name multihost \
  --command 'ip -4 -o addr show dev eth0 | awk "{print \$4}"; sleep 3' --wait --timeout-s 150 \
  2>&1) && rc=0 || rc=$?
echo "$out"
app=$(grep -o 'application_[0-9_]*' <<<"$out" | head -1)
if [[ $rc == 0 ]]; then ok "run-shell $app SUCCEEDED"; else bad "run-shell: exit $rc"; fi
if [[ -n $app ]]; then
  report=$(client timeout 60 "$weft" app status --json "$app" 2>&1) || true
  hosts=""
  for h in nm1 nm2; do
    ipvar=${h}_ip
    # Each task container's stdout is in its NM's log directory.
    n=$(grep -rlx "${!ipvar}/24" "$tmp/$h" 2>/dev/null | grep -c stdout) || true
    eval "count_$h=$n"
    hosts+=" $h:$n"
  done
  echo "task containers by NM:$hosts"
  if [[ ${count_nm1:-0} -ge 1 && ${count_nm2:-0} -ge 1 &&
        $((count_nm1 + count_nm2)) == 4 ]]; then
    ok "the 4 containers ran on both NMs ($hosts)"
  else
    bad "containers by NM:$hosts (want 4 over both); status: $report"
  fi
fi

echo "== 4. the RM's web UI and REST API over HTTP from the client namespace"
page=$(client curl -sS --max-time 20 "http://$rm_addr_http/cluster" 2>&1) || true
if [[ $page == *"<html"* || $page == *"<!DOCTYPE"* || $page == *"<!doctype"* ]]; then
  ok "web UI http://$rm_addr_http/cluster served ($(wc -c <<<"$page") bytes)"
else
  bad "web UI: $(head -c 300 <<<"$page")"
fi
rest=$(client curl -sS --max-time 20 "http://$rm_addr_http/ws/v1/cluster/nodes" 2>&1) || true
echo "$rest" | head -c 600; echo
verdict=$(python3 - "$rest" "$nm1_ip" "$nm2_ip" "$nm_port" "$nm_http" <<'PY'
import json, sys
body, ips, port, http = sys.argv[1], sys.argv[2:4], sys.argv[4], sys.argv[5]
try:
    nodes = json.loads(body)["nodes"]["node"]
except (ValueError, KeyError, TypeError) as e:
    print(f"not YARN's nodes JSON: {e}"); sys.exit()
by_host = {n.get("nodeHostName"): n for n in nodes}
for ip in ips:
    n = by_host.get(ip)
    if n is None:
        print(f"no node with nodeHostName {ip}: {sorted(map(str, by_host))}"); sys.exit()
    want = {"id": f"{ip}:{port}", "nodeHTTPAddress": f"{ip}:{http}", "state": "RUNNING"}
    for k, v in want.items():
        if n.get(k) != v:
            print(f"node {ip}: {k} is {n.get(k)!r}, want {v!r}"); sys.exit()
print("ok")
PY
)
if [[ $verdict == ok ]]; then
  ok "/ws/v1/cluster/nodes: both nodes with their own id, host name and HTTP address"
else
  bad "/ws/v1/cluster/nodes: $verdict"
fi
# The AM's logs, at the web address of the NM it ran on (as the RM reports it), from the client,
# read as the app's owner: container logs need an authenticated reader (a MUNGE credential).
logs=$(client curl -sS --max-time 20 "http://$rm_addr_http/ws/v1/cluster/apps/$app" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["app"]["amContainerLogs"])' 2>&1) ||
  true
if [[ $logs == "http://$nm1_ip:$nm_http/"* || $logs == "http://$nm2_ip:$nm_http/"* ]]; then
  page=$(client curl -sS --max-time 20 -H "X-Weft-Munge-Credential: $(munge -s weft-client)" \
    "$logs" 2>&1) || true
  if [[ $page == *stdout* || $page == *stderr* ]]; then ok "the AM's logs at $logs"
  else bad "the AM's logs at $logs: $(head -c 300 <<<"$page")"; fi
else
  bad "amContainerLogs of $app is '$logs', not on an NM's address"
fi
# The NMs' web servers at the addresses the RM reports, from the client too.
for ip in $nm1_ip $nm2_ip; do
  if client curl -sSf --max-time 20 "http://$ip:$nm_http/metrics" | grep -q '^weft_nm_'; then
    ok "NM metrics at http://$ip:$nm_http/metrics"
  else bad "NM metrics at http://$ip:$nm_http/metrics"; fi
done

echo "== 5. bandwidth shaped on each NM's own interface"
# One container of 50 Mbit/s per NM (a node offers its containers 80: two cannot share one),
# each sending for 6 s to a sink in the client namespace.
rate=50
seconds=6
sink_port=5301
ip netns exec "$ns_client" "$weft" transfer sink --listen "$client_ip:$sink_port" \
  --csv "$tmp/sink.csv" >"$tmp/sink.log" 2>&1 &
pids+=($!)  # the sink's own pid (ip netns exec execs it), not a subshell's
for _ in $(seq 1 100); do
  client ss -Hltn | grep -q "$client_ip:$sink_port" && break
  sleep 0.1
done
ip netns exec "$ns_client" timeout 180 "$weft" app run-shell --num-containers 2 \
  --memory-mb 256 --network-mbps $rate --max-retries 0 --name multihost-bandwidth \
  --command "$weft transfer send --to $client_ip:$sink_port --seconds $seconds" \
  --wait --timeout-s 150 >"$tmp/bw-app.log" 2>&1 &
bw_app=$!
for h in nm1 nm2; do
  ns_var=ns_$h
  found=""
  for _ in $(seq 1 300); do
    # A container's class hangs under the containers' class 1:3, rate = its network-mbps.
    found=$(in_ns "${!ns_var}" tc class show dev eth0 | grep "parent 1:3 " |
      grep "rate ${rate}Mbit" | grep "ceil ${rate}Mbit") || true
    [[ -n $found ]] && break
    kill -0 $bw_app 2>/dev/null || break
    sleep 0.1
  done
  if [[ -n $found ]]; then ok "$h: HTB class on its eth0: $found"
  else
    bad "$h: no HTB class of $rate Mbit/s under 1:3 on its eth0: $(in_ns "${!ns_var}" \
      tc class show dev eth0 | tr '\n' ';')"
  fi
done
wait $bw_app && rc=0 || rc=$?
cat "$tmp/bw-app.log"
if [[ $rc == 0 ]]; then ok "the bandwidth app SUCCEEDED"; else bad "the bandwidth app: exit $rc"; fi
sleep 1.5  # the sink writes the last full second
rates=$(python3 - "$tmp/sink.csv" <<'PY'
import statistics, sys
series = {}
with open(sys.argv[1]) as f:
    next(f, None)
    for line in f:
        second, label, _bytes, mbps = line.strip().split(",")
        series.setdefault(label, {})[int(second)] = float(mbps)
for label, points in sorted(series.items()):
    seconds = sorted(s for s, v in points.items() if v > 0)
    inner = [points[s] for s in seconds[1:-1]] or list(points.values())
    print(f"{label} {statistics.mean(inner):.2f}")
PY
) || true
echo "sink: $(tr '\n' ';' <<<"$rates")"
senders=0
while read -r label mbps; do
  [[ -n ${label:-} ]] || continue
  senders=$((senders + 1))
  if python3 -c "import sys; v=float(sys.argv[1]); sys.exit(0 if abs(v-$rate)<=$rate*0.2 else 1)" \
      "$mbps"; then ok "$label: $mbps Mbit/s (shaped to $rate)"
  else bad "$label: $mbps Mbit/s, not within 20% of $rate"; fi
done <<<"$rates"
[[ $senders == 2 ]] || bad "the sink heard $senders senders, want 2"

if [[ $fail == 0 ]]; then echo "PASS"; else echo "FAILED"; exit 1; fi
