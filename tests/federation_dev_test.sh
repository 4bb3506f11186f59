#!/bin/bash
# `weft dev --subclusters 3` end to end (seed 004): three sub-clusters of one 2-vcore node each
# behind a router and the NMs' AMRMProxies. One distributed-shell app asking for more
# containers than its home holds finishes SUCCEEDED with containers in at least two
# sub-clusters; the router serves it like an RM; the GPG published the "*" policy.
# Usage: federation_dev_test.sh WEFT_BINARY
set -u
weft=$1
source "$(dirname "$0")/lib/dev_cluster.sh"

# Bad flags are refused, naming them, before anything starts.
out=$("$weft" dev --subclusters 0 2>&1) && bad "--subclusters 0 accepted" ||
  { [[ "$out" == *"--subclusters 0"* ]] && ok "--subclusters 0 refused: $out" || bad "$out"; }
out=$("$weft" dev --subclusters 2 --network-interface lo 2>&1) && bad "--network-interface accepted" ||
  { [[ "$out" == *"--network-interface"* ]] && ok "refused: $out" || bad "$out"; }

flags=(dev --subclusters 3 --nodes 1 --node-resources memory-mb=2048,vcores=2 --rm-port 0
       --http-port 0 --data-dir "$tmp/data")
if [[ $(id -u) -ne 0 ]]; then flags+=(--no-cgroups); else flags+=(--allowed-system-users root); fi
"$weft" "${flags[@]}" >"$tmp/dev.out" 2>"$tmp/dev.err" &
dev_pid=$!
router=""
for _ in $(seq 1 300); do
  if grep -q "Ctrl-C" "$tmp/dev.out" 2>/dev/null; then
    router=$(sed -n 's/.*router listening on \([0-9.]*:[0-9]*\).*/\1/p' "$tmp/dev.out")
    WEFT_TLS_CA=$(sed -n 's|.*cluster CA WEFT_TLS_CA=\([^ ]*\) .*|\1|p' "$tmp/dev.out")
    break
  fi
  kill -0 "$dev_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$router" ]]; then echo "FAIL: weft dev --subclusters did not start"; cat "$tmp/dev.out" "$tmp/dev.err"; exit 1; fi
export WEFT_RM=$router WEFT_TLS_CA
store="sqlite:$tmp/data/federation.db"
mapfile -t rm_webs < <(sed -n 's|.*sub-cluster sc[0-9]*: RM [0-9.:]*, web UI http://\([0-9.]*:[0-9]*\)/cluster.*|\1|p' "$tmp/dev.out")
[[ ${#rm_webs[@]} -eq 3 ]] && ok "three sub-clusters: ${rm_webs[*]}" || bad "sub-clusters: ${rm_webs[*]}"

# Every sub-cluster heartbeats with its node's capacity.
usable=0
for _ in $(seq 1 150); do
  usable=$("$weft" federation subclusters --federation-store "$store" | grep -c "SC_RUNNING  yes.*2048 MB/2 vc *$")
  [[ "$usable" -eq 3 ]] && break
  sleep 0.2
done
[[ "$usable" -eq 3 ]] && ok "3 sub-clusters RUNNING with 2048 MB/2 vcores each" ||
  { bad "$usable of 3 sub-clusters usable"; "$weft" federation subclusters --federation-store "$store"; }
"$weft" federation policy show --federation-store "$store" | grep -q "gpg/gpg" &&
  ok "the GPG published the * policy" || bad "no policy from the GPG"
# The GPG's first round may run before every sub-cluster reported its node (weight 0 for those):
# the spanning check below needs a round that saw all three with room (one every 5 s in dev).
weighted=0
for _ in $(seq 1 100); do
  weighted=$("$weft" federation policy show --json --federation-store "$store" | python3 -c '
import json, sys
for line in sys.stdin:
    c = json.loads(line)
    if c.get("queue") == "*":
        w = c.get("amrmWeights") or c.get("amrm_weights") or {}
        print(sum(1 for v in w.values() if v > 0))
        break
else:
    print(0)')
  [[ "$weighted" -eq 3 ]] && break
  sleep 0.2
done
[[ "$weighted" -eq 3 ]] && ok "the * policy weighs all 3 sub-clusters for AM asks" ||
  bad "$weighted of 3 sub-clusters weighted: $("$weft" federation policy show --federation-store "$store")"

# 6 containers of 1 vcore: a 2-vcore sub-cluster holds at most 2 beside nothing else.
if timeout 180 "$weft" app run-shell --num-containers 6 --command 'sleep 1' --memory-mb 256 \
    --wait >"$tmp/run.out" 2>&1 && grep -q "FINISHED SUCCEEDED" "$tmp/run.out"; then
  ok "the app finished SUCCEEDED through the router"
else
  bad "run-shell: $(tail -3 "$tmp/run.out")"
fi
app=$(grep -o "application_[0-9]*_[0-9]*" "$tmp/run.out" | head -1)
# Where it ran: its home has the app, each secondary an unmanaged AM that held containers
# (resource-seconds > 0; the AMRMProxy finishes the unmanaged AMs just after the app).
count_spanned() {
  spanned=0
  for w in "${rm_webs[@]}"; do
    n=$(curl -s "http://$w/ws/v1/cluster/apps" | python3 -c '
import json, sys
apps = (json.load(sys.stdin).get("apps") or {}).get("app", [])
print(sum(1 for a in apps if a.get("memorySeconds", 0) > 0))')
    echo "  sub-cluster at $w: ${n:-0} app(s) that held containers"
    [[ "${n:-0}" -ge 1 ]] && spanned=$((spanned + 1))
  done
}
for _ in $(seq 1 20); do
  count_spanned
  [[ "$spanned" -ge 2 ]] && break
  sleep 1
done
[[ "$spanned" -ge 2 ]] && ok "$app ran in $spanned sub-clusters" || bad "$app ran in $spanned sub-cluster(s)"
"$weft" app status "$app" | grep -q "FINISHED" && ok "weft app status through the router" ||
  bad "app status: $("$weft" app status "$app" 2>&1)"
listed=$("$weft" app list 2>&1 | grep -c "$app")
[[ "$listed" -eq 1 ]] && ok "weft app list through the router lists it once" || bad "listed $listed times"
"$weft" federation homes --federation-store "$store" | grep -q "$app" &&
  ok "its home is in the federation store" || bad "no home for $app"

# The operator's hands: a queue's own policy set and deleted; an unknown sub-cluster refused.
fed() { "$weft" federation "$@" --federation-store "$store"; }
if fed policy set --queue root.tmp --router-policy priority --router-weights sc1=5,sc2=1 \
    >"$tmp/pset.out" 2>&1 && fed policy show | grep -q "root.tmp" &&
  fed policy delete --queue root.tmp >"$tmp/pdel.out" 2>&1 && ! fed policy show | grep -q "root.tmp"
then ok "policy set and deleted: $(cat "$tmp/pdel.out")"
else bad "policy set/delete: $(cat "$tmp/pset.out" "$tmp/pdel.out" 2>/dev/null)"; fi
fed policy delete --queue root.tmp >"$tmp/pdel2.out" 2>&1 &&
  bad "deleting root.tmp twice succeeded" ||
  ok "deleting it again refused: $(head -1 "$tmp/pdel2.out")"
fed deregister sc9 >"$tmp/dereg.out" 2>&1 && bad "deregistered an unknown sub-cluster" ||
  { grep -q "sc9" "$tmp/dereg.out" && ok "deregister sc9 refused: $(head -1 "$tmp/dereg.out")" ||
    bad "deregister sc9: $(cat "$tmp/dereg.out")"; }
exit $fail
