#!/usr/bin/env bash
# `weft dev --nm-gpus` (docs/gpu-nm.md): a 2-NM dev cluster whose NMs get GPU lists of fake
# GPU nodes (mknod, the numbers of /dev/zero, full and random), as root:
#   1. NM 0 offers gpu-milli 2000 (two GPUs of group nvl), NM 1 gpu-milli 1000;
#   2. a 2-GPU same-group container runs on NM 0 and gets GPUs 0 and 1
#      (NVIDIA_VISIBLE_DEVICES=0,1, CUDA_VISIBLE_DEVICES=0,1);
#   3. a device given to two NMs, and auto beside another NM's GPUs, are refused naming why,
#      and leave no --data-dir behind.
# Exits 77 (skipped, saying why) when not root. Every wait is bounded.
# Usage: dev_gpus_test.sh WEFT
set -uo pipefail
weft=$1
if [[ $(id -u) -ne 0 ]]; then echo "SKIP: needs root (mknod, cgroups)"; exit 77; fi
source "$(dirname "$0")/lib/dev_cluster.sh"

mkdir -p "$tmp/dev"
mknod -m 666 "$tmp/dev/nvidia0" c 1 5
mknod -m 666 "$tmp/dev/nvidia1" c 1 7
mknod -m 666 "$tmp/dev/nvidia2" c 1 8

# ---- 3. Refusals, before anything starts.
out=$(timeout 30 "$weft" dev --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/bad" \
  --nm-gpus "0:$tmp/dev/nvidia0;0:$tmp/dev/nvidia0" 2>&1) && bad "a shared device was accepted"
grep -q "is given to NodeManagers 0 and 1" <<<"$out" && ok "a device given to two NMs is refused" ||
  bad "shared device: $out"
out=$(timeout 30 "$weft" dev --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/bad" \
  --nm-gpus "auto;0:$tmp/dev/nvidia0" 2>&1) && bad "auto beside a list was accepted"
grep -q "'auto' gives a NodeManager every GPU" <<<"$out" && ok "auto beside another NM's GPUs is refused" ||
  bad "auto: $out"
[[ ! -e $tmp/bad ]] && ok "the refused runs left no --data-dir behind" ||
  bad "a refused weft dev made its --data-dir $tmp/bad"

# ---- 1. The GPUs of each NM.
dev_start --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=2048,vcores=4 \
  --nm-gpus "0:$tmp/dev/nvidia0@nvl,1:$tmp/dev/nvidia1@nvl;2:$tmp/dev/nvidia2"
dev_wait_nodes 2 || exit 1
milli=$(timeout 10 "$weft" node list --json | python3 -c '
import json, sys
print(" ".join(sorted(str(int(n.get("capability", {}).get("values", {}).get("gpu-milli", 0)))
                      for n in json.load(sys.stdin).get("nodes", []))))' 2>&1)
[[ "$milli" == "1000 2000" ]] && ok "the NMs offer gpu-milli 2000 and 1000" ||
  bad "gpu-milli of the nodes: '$milli'"

# ---- 2. Two GPUs of one group.
if timeout 120 "$weft" app run-shell --num-containers 1 --gpu-milli 2000 --gpu-same-group \
  --memory-mb 128 --command "echo \$NVIDIA_VISIBLE_DEVICES \$CUDA_VISIBLE_DEVICES >$tmp/pair.txt" --wait \
  >"$tmp/pair.out" 2>&1; then
  [[ "$(cat "$tmp/pair.txt")" == "0,1 0,1" ]] && ok "a same-group 2-GPU container got GPUs 0,1" ||
    bad "NVIDIA_ and CUDA_VISIBLE_DEVICES '$(cat "$tmp/pair.txt")'"
else
  bad "the 2-GPU app: $(cat "$tmp/pair.out")"
fi

[[ $fail -eq 0 ]] && echo "PASS" || { tail -30 "$tmp/dev.err"; echo "FAIL"; }
exit $fail
