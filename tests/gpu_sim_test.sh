#!/usr/bin/env bash
# Issue 32's GPU experiment, quick: `weft sim --workload alibaba2023gpu:...` errors name the
# flag at fault, then experiments/gpu/run --ci (the six placement policies, one seed, the
# whole Alibaba 2023 trace on its 1,213 GPU nodes) must pass its acceptance: FGD leaves fewer
# unallocated GPUs than each baseline wherever that baseline fails pods, and allocates within 2%
# of the paper's figure.
# Usage: gpu_sim_test.sh WEFT SOURCE_DIR
set -uo pipefail
weft=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
trace="$src/data/traces/alibaba-gpu-v2023"
pods="alibaba2023gpu:$trace/openb_pod_list_default.csv"
nodes="$trace/openb_node_list_gpu_node.csv"

expect_error() {  # expect_error "substring" args...
  local want=$1
  shift
  if "$weft" sim "$@" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: weft sim $* succeeded; expected an error containing '$want'"
    fail=1
  elif ! grep -qF -- "$want" "$tmp/err"; then
    echo "FAIL: weft sim $*: error does not mention '$want':"
    cat "$tmp/err"
    fail=1
  else
    echo "ok: error: $(head -1 "$tmp/err")"
  fi
}
expect_error "--gpu-placement" --workload "$pods" --cluster-file "$nodes" --gpu-placement tetris
expect_error "--gpu-placement" --workload "$pods" --cluster-file "$nodes"
expect_error "--cluster-file" --workload "$pods" --gpu-placement fgd
expect_error "--cluster-file: cannot open" --workload "$pods" --cluster-file "$tmp/none.csv" \
  --gpu-placement fgd
expect_error "--tune" --workload "$pods" --cluster-file "$nodes" --gpu-placement fgd --tune -1
expect_error "apply only to --workload alibaba2023gpu" --gpu-placement fgd
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,1024,2,300,\n' >"$tmp/bad.csv"
expect_error "bad.csv:2: field 'gpu_milli' is 300" --workload "alibaba2023gpu:$tmp/bad.csv" \
  --cluster-file "$nodes" --gpu-placement fgd

if "$src/experiments/gpu/run" --weft "$weft" --ci --out "$tmp/run"; then
  echo "ok: experiments/gpu/run --ci"
else
  echo "FAIL: experiments/gpu/run --ci"
  fail=1
fi
for key in allocation_ratio unallocated_gpus fragmented_gpus; do
  grep -q "\"$key\"" "$tmp/run/fgd-42.json" || { echo "FAIL: report has no gpu.$key"; fail=1; }
done
exit $fail
