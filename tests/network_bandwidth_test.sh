#!/usr/bin/env bash
# Per-container bandwidth enforcement on real containers (issue 4, seed 000): each case builds
# its own network namespaces with experiments/bandwidth/run and removes them.
#   1. rate = ceil = 20 Mbit/s measures within ±10% of 20;
#   2. rate 80, ceil 180 on an idle link measures above 150;
#   3. two apps' containers of 10 Mbit/s under a saturating unshaped competitor: each ±15% of 10;
#   4. no class or rule survives the containers, nor the NM;
#   5. bad requests: a negative --network-mbps, and one above the node's containers' total.
# Exit 77 (skipped) only where root, network namespaces, tc or iptables are unavailable.
set -euo pipefail
weft=$1
src=$2
run=$src/experiments/bandwidth/run

skip() { echo "SKIPPED: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root (network namespaces, tc, iptables)"
for tool in ip tc iptables nsenter; do
  command -v $tool >/dev/null || skip "$tool not installed (scripts/install-deps.sh installs it)"
done
probe=weftprobe$$
ip netns add $probe 2>/dev/null || skip "cannot create network namespaces"
ip netns del $probe

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
within() {  # value target percent
  python3 -c "import sys; v,t,p=map(float,sys.argv[1:]); sys.exit(0 if abs(v-t)<=t*p/100 else 1)" "$@"
}

echo "== 1. rate = ceil = 20 Mbit/s"
r=$("$run" --weft "$weft" --out "$out" --scenario single --rate 20 --ceil 20 --seconds 6 | tail -1)
echo "$r"
m=$(field "$r" measured_mbps)
within "$m" 20 10 || fail "measured $m Mbit/s, not within 10% of 20"

echo "== 4. nothing survives the containers or the NM"
for key in container_classes_after_stop rules_after_containers_stop classes_after_nm_stop \
           rules_after_nm_stop; do
  [[ $(field "$r" $key) == "[]" ]] || fail "$key: $(field "$r" $key)"
done

echo "== 2. rate 80, ceil 180, idle link"
r=$("$run" --weft "$weft" --out "$out" --scenario single --rate 80 --ceil 180 --seconds 6 | tail -1)
echo "$r"
m=$(field "$r" measured_mbps)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 150 else 1)" "$m" ||
  fail "measured $m Mbit/s, not above 150"

echo "== 3. two 10 Mbit/s containers under a saturating unshaped competitor"
r=$("$run" --weft "$weft" --out "$out" --scenario fig6 --seconds 8 | tail -1)
echo "$r"
a=$(field "$r" app_a_mbps)
b=$(field "$r" app_b_mbps)
c=$(field "$r" competitor_mbps_meanwhile)
within "$a" 10 15 || fail "app A measured $a Mbit/s, not within 15% of 10"
within "$b" 10 15 || fail "app B measured $b Mbit/s, not within 15% of 10"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 100 else 1)" "$c" ||
  fail "the competitor got only $c Mbit/s: it was not saturating the link"

echo "== 5. bad network requests"
set +e
msg=$("$weft" app run-shell --rm 127.0.0.1:1 --num-containers 1 --command true \
      --network-mbps -5 2>&1)
rc=$?
set -e
[[ $rc != 0 && $msg == *"--network-mbps -5 is negative"* ]] || fail "negative: rc $rc: $msg"
# Above the node's containers' total (180): the RM refuses the ask and the app fails saying why.
r=$("$run" --weft "$weft" --scenario invalid --rate 181 | tail -1)
[[ $(field "$r" exit_code) != 0 ]] || fail "an app asking 181 Mbit/s of a 180 Mbit/s node succeeded"
[[ $(field "$r" output) == *"network-mbps=181 is above the largest node's 180"* ]] ||
  fail "no clear error for 181 Mbit/s: $(field "$r" output)"
echo "PASS"
