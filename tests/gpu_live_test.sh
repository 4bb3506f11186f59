#!/usr/bin/env bash
# Issue 32's NodeManager acceptance, live, as root, without a GPU (docs/gpu-nm.md): `weft rm`
# and `weft nm --gpus auto` with a fake nvidia-smi (it prints a 4-GPU variant of a real H100's
# `nvidia-smi -q -x`, and a `topo -m` with two NVLink pairs, 0-1 and 2-3) and fake GPU device
# nodes made with mknod (the numbers of /dev/zero, full, random and urandom). Checks:
#   1. the node registers 4 GPUs, gpu-milli 4000 and topology groups g0 g0 g2 g2;
#   2. a container given 1 of the 4 sees only it: NVIDIA_VISIBLE_DEVICES names it, and
#      CUDA_VISIBLE_DEVICES=0 (CUDA numbers the GPUs a container may open from 0); it opens its
#      node and gets "Operation not permitted" opening the 3 others;
#   3. a long container's GPU survives an NM kill -9 and restart: the node reports it held by
#      that container again, a 2-GPU same-group container gets the NVLink pair the held GPU
#      is not in, and 3 new whole-GPU containers get the 3 other GPUs;
#   3b. --gpus-allowed 1,3 offers GPUs 1 and 3 only (and is refused without --gpus auto);
#   4. on a node with 1 fake GPU, two 500-milli containers run on GPU 0 together.
# Needs root (mknod, cgroups) and a cgroup v1 devices controller or cgroup v2: exits 77
# (skipped) saying why otherwise. Every wait is bounded.
# Usage: gpu_live_test.sh WEFT
set -uo pipefail
weft=$1
here=$(cd "$(dirname "$0")" && pwd)
xml=$here/../src/nm/devices/testdata/h100-4gpu.xml
topo=$here/../src/nm/devices/testdata/h100-4gpu-topo.txt

if [[ $(id -u) -ne 0 ]]; then echo "SKIP: needs root (mknod, cgroups)"; exit 77; fi
if [[ ! -d /sys/fs/cgroup/devices && ! -f /sys/fs/cgroup/cgroup.controllers ]]; then
  echo "SKIP: neither a cgroup v1 devices controller nor cgroup v2 at /sys/fs/cgroup"; exit 77
fi
if ! "$weft" app run-shell --help 2>&1 | grep -q -- "--gpu-milli"; then
  echo "SKIP: weft app run-shell has no --gpu-milli (the RM side of issue 32 is not built)"
  exit 77
fi

source "$(dirname "$0")/lib/daemons.sh"

# ---- The fake GPUs: device nodes and nvidia-smi.
mkdir -p "$tmp/dev"
minors=(5 7 8 9)
for i in 0 1 2 3; do mknod -m 666 "$tmp/dev/nvidia$i" c 1 "${minors[$i]}"; done
cat >"$tmp/nvidia-smi" <<SH
#!/bin/sh
case "\$1 \$2" in
  "-q -x") cat "$xml" ;;
  "topo -m") cat "$topo" ;;
  *) echo "fake nvidia-smi: only -q -x and topo -m" >&2; exit 2 ;;
esac
SH
chmod 755 "$tmp/nvidia-smi"

# ---- PKI, RM.
nm_port=$(free_port)
make_pki gpu-live-test-s3cret "$nm_port"

start_nm() {  # GPU flags...
  "$weft" nm --rm "$rm_address" --port "$nm_port" --http-port 0 --work-root "$tmp/nm" \
    --node-resources memory-mb=4096,vcores=8 --allowed-system-users root \
    --cgroup-hierarchy "weft-gpu-live-$$" "${tls[@]}" \
    --tls-cert "$tmp/pki/nm-127.0.0.1:$nm_port.pem" --tls-key "$tmp/pki/nm-127.0.0.1:$nm_port.key" \
    "$@" >>"$tmp/nm.out" 2>>"$tmp/nm.err" &
  nm_pid=$!
}

node_status() { timeout 10 "$weft" node status "127.0.0.1:$nm_port" 2>&1; }

wait_running() {
  for _ in $(seq 1 150); do
    timeout 10 "$weft" node list --state RUNNING 2>/dev/null | grep -q "127.0.0.1:$nm_port" &&
      return 0
    sleep 0.2
  done
  return 1
}

# wait_for SECONDS CMD...: runs CMD every 0.2 s until it succeeds.
wait_for() {
  local seconds=$1; shift
  for _ in $(seq 1 $((seconds * 5))); do "$@" && return 0; sleep 0.2; done
  return 1
}

# The probe a container runs: its CUDA_ and NVIDIA_VISIBLE_DEVICES, then each fake GPU opened
# read-write.
probe() {  # OUT-FILE
  local out=$1
  echo "echo \"CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES\" >$out; echo \"NVIDIA_VISIBLE_DEVICES=\$NVIDIA_VISIBLE_DEVICES\" >>$out; for d in $tmp/dev/nvidia*; do if (exec 3<>\$d) 2>$out.err; then echo \"\$d ok\"; else echo \"\$d \$(sed 's/.*: //' $out.err)\"; fi; done >>$out"
}

start_rm 0
start_nm --gpus auto --nvidia-smi "$tmp/nvidia-smi" --gpu-device-dir "$tmp/dev"
if ! wait_running; then
  echo "FAIL: the NM did not register"; cat "$tmp/nm.out" "$tmp/nm.err"; exit 1
fi

# ---- 1. Registration.
status=$(node_status)
gpus=$(grep -cE "^gpu:[0-3] " <<<"$status")
[[ $gpus -eq 4 ]] && ok "the node reports 4 GPUs" || bad "GPUs in node status: $gpus: $status"
grep -q "gpu-milli=4000" <<<"$status" && ok "capability gpu-milli=4000" ||
  bad "no gpu-milli=4000 in: $status"
groups=$(grep -E "^gpu:[0-3] " <<<"$status" | grep -oE " g[0-9]+ " | tr -d ' ' | tr '\n' ' ')
[[ "$groups" == "g0 g0 g2 g2 " ]] && ok "topology groups from nvidia-smi topo -m: $groups" ||
  bad "topology groups '$groups' in: $status"

# ---- 2. Isolation: 1 of 4.
if timeout 120 "$weft" app run-shell --num-containers 1 --gpu-milli 1000 --memory-mb 128 \
  --command "$(probe "$tmp/one.txt")" --wait >"$tmp/run1.out" 2>&1; then
  ok "a 1-GPU container ran"
else
  bad "1-GPU app: $(cat "$tmp/run1.out")"
fi
mine=$(sed -n 's/^NVIDIA_VISIBLE_DEVICES=//p' "$tmp/one.txt" 2>/dev/null)
cuda=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$tmp/one.txt" 2>/dev/null)
[[ "$cuda" == "0" ]] && ok "CUDA_VISIBLE_DEVICES=0" || bad "CUDA_VISIBLE_DEVICES '$cuda'"
if [[ "$mine" =~ ^[0-3]$ ]]; then
  ok "NVIDIA_VISIBLE_DEVICES=$mine"
  for i in 0 1 2 3; do
    line=$(grep "nvidia$i " "$tmp/one.txt")
    if [[ $i -eq $mine ]]; then
      [[ "$line" == *" ok" ]] && ok "it opens its GPU $i" || bad "its own GPU: $line"
    else
      [[ "$line" == *"Operation not permitted"* ]] && ok "GPU $i: Operation not permitted" ||
        bad "another GPU: $line"
    fi
  done
else
  bad "NVIDIA_VISIBLE_DEVICES '$mine' ($(cat "$tmp/one.txt" 2>/dev/null))"
fi

# ---- 3. NM kill -9 and restart with a long container holding a GPU.
timeout 30 "$weft" app run-shell --num-containers 1 --gpu-milli 1000 --memory-mb 128 \
  --command "echo \$NVIDIA_VISIBLE_DEVICES >$tmp/long.txt; sleep 600" >"$tmp/run2.out" 2>&1 &
long_client=$!
held_before() { grep -qE "^container_[A-Za-z0-9_]+ .*gpu:[0-3]=1000" <<<"$(node_status)"; }
if wait_for 60 held_before; then
  long_line=$(node_status | grep -E "^container_[A-Za-z0-9_]+ .*gpu:[0-3]=1000")
  long_id=${long_line%% *}
  long_gpu=$(grep -oE "gpu:[0-3]=1000" <<<"$long_line" | cut -c5)
  ok "container $long_id holds GPU $long_gpu"
  kill -KILL "$nm_pid"; wait "$nm_pid" 2>/dev/null
  start_nm --gpus auto --nvidia-smi "$tmp/nvidia-smi" --gpu-device-dir "$tmp/dev"
  wait_running || bad "the restarted NM did not register"
  held_again() { node_status | grep -E "^$long_id " | grep -q "gpu:$long_gpu=1000"; }
  if wait_for 30 held_again; then
    ok "after kill -9 and restart the node reports $long_id holding GPU $long_gpu again"
  else
    bad "after the restart: $(node_status)"
  fi
  grep -q "container_devices_restored" "$tmp/nm.out" "$tmp/nm.err" &&
    ok "the restarted NM restored $long_id's devices" || bad "no container_devices_restored log"
  # Two GPUs of one topology group: the NVLink pair without the held GPU.
  if timeout 120 "$weft" app run-shell --num-containers 1 --gpu-milli 2000 --gpu-same-group \
    --memory-mb 128 --command "echo \$NVIDIA_VISIBLE_DEVICES >$tmp/pair.txt" --wait \
    >"$tmp/run-pair.out" 2>&1; then
    pair=$(cat "$tmp/pair.txt")
    want_pair=$([[ $long_gpu -lt 2 ]] && echo "2,3" || echo "0,1")
    [[ "$pair" == "$want_pair" ]] && ok "a same-group 2-GPU container got the pair $pair" ||
      bad "the same-group container got '$pair', want '$want_pair'"
  else
    bad "same-group app: $(cat "$tmp/run-pair.out")"
  fi
  # Three more whole GPUs: the three others, never the held one.
  if timeout 120 "$weft" app run-shell --num-containers 3 --gpu-milli 1000 --memory-mb 128 \
    --command "echo \$NVIDIA_VISIBLE_DEVICES >>$tmp/three.txt; sleep 3" --wait \
    >"$tmp/run3.out" 2>&1; then
    got=$(sort "$tmp/three.txt" | tr '\n' ' ')
    want=$(for i in 0 1 2 3; do [[ $i -ne $long_gpu ]] && echo $i; done | tr '\n' ' ')
    [[ "$got" == "$want" ]] && ok "3 new containers got GPUs $got(not $long_gpu)" ||
      bad "3 new containers got '$got', want '$want'"
  else
    bad "3-GPU app: $(cat "$tmp/run3.out")"
  fi
else
  bad "no container holding a GPU in: $(node_status)"
fi
kill -TERM "$long_client" 2>/dev/null
for app in $(timeout 10 "$weft" app list 2>/dev/null | grep -oE "application_[0-9_]+"); do
  timeout 10 "$weft" app kill "$app" >/dev/null 2>&1
done

# ---- 3b. Only some of nvidia-smi's GPUs (--gpus-allowed).
out=$("$weft" nm --rm "$rm_address" --gpus none --gpus-allowed 1 2>&1) &&
  bad "--gpus-allowed without --gpus auto was accepted"
grep -q "needs --gpus auto" <<<"$out" && ok "--gpus-allowed without --gpus auto is refused" ||
  bad "--gpus-allowed with --gpus none: $out"
stop "$nm_pid"
start_nm --gpus auto --gpus-allowed 1,3 --nvidia-smi "$tmp/nvidia-smi" --gpu-device-dir "$tmp/dev"
wait_running || bad "the NM with --gpus-allowed did not register"
two_allowed() { node_status | grep -q "gpu-milli=2000"; }
if wait_for 30 two_allowed; then
  listed=$(node_status | grep -oE "^gpu:[0-9]+" | tr '\n' ' ')
  [[ "$listed" == "gpu:1 gpu:3 " ]] && ok "--gpus-allowed 1,3: the node offers GPUs 1 and 3 only" ||
    bad "--gpus-allowed 1,3: GPUs '$listed'"
else
  bad "--gpus-allowed 1,3: no gpu-milli=2000 in $(node_status)"
fi

# ---- 4. Two halves of one GPU: the NM again, with GPU 0 only.
stop "$nm_pid"
start_nm --gpus "0:$tmp/dev/nvidia0"
wait_running || bad "the 1-GPU NM did not register"
one_gpu() { node_status | grep -q "gpu-milli=1000"; }
wait_for 30 one_gpu || bad "the node does not offer gpu-milli=1000: $(node_status)"
if timeout 120 "$weft" app run-shell --num-containers 2 --gpu-milli 500 --memory-mb 128 \
  --command "echo \"\$CUDA_VISIBLE_DEVICES \$WEFT_GPU_SHARES \$(date +%s%N)\" >>$tmp/halves.txt; sleep 5; date +%s%N >>$tmp/halves.end" \
  --wait >"$tmp/run4.out" 2>&1; then
  halves=$(cut -d' ' -f1,2 "$tmp/halves.txt" | sort | uniq -c | awk '{print $1, $2, $3}')
  [[ "$halves" == "2 0 0=500" ]] && ok "two 500-milli containers on GPU 0" ||
    bad "halves: $(cat "$tmp/halves.txt")"
  # Together: the second started before the first ended.
  last_start=$(cut -d' ' -f3 "$tmp/halves.txt" | sort -n | tail -1)
  first_end=$(sort -n "$tmp/halves.end" | head -1)
  [[ $last_start -lt $first_end ]] && ok "they ran at the same time" ||
    bad "they did not overlap ($last_start >= $first_end)"
else
  bad "500-milli app: $(cat "$tmp/run4.out")"
fi

if [[ $fail -ne 0 ]]; then
  echo "--- nm.err"; tail -40 "$tmp/nm.err"
  echo "--- rm.err"; tail -20 "$tmp/rm.err"
fi
exit $fail
