#!/usr/bin/env bash
# `weft sim` on bad input: one clear error naming what was wrong, and a non-zero exit; a
# malformed trace line is skipped with a file:line warning unless --strict.
# Usage: sim_cli_errors_test.sh WEFT SOURCE_DIR
set -uo pipefail
weft=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect_error "substring" args...: exit code != 0 and stderr contains the substring.
expect_error() {
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
    echo "ok: $* -> $(head -1 "$tmp/err")"
  fi
}

printf 'job0\t10\t10\t1000\t0\t0\njob1\tsoon\t5\t1000\t0\t0\njob2\t20\t10\t1000\t0\t0\n' >"$tmp/bad.tsv"
expect_error "must be FORMAT:PATH" --workload nocolon
expect_error "unknown format 'csv'" --workload csv:x
expect_error "bad.tsv:2" --workload "swim:$tmp/bad.tsv" --strict --nodes 2
expect_error "/nonexistent" --workload swim:/nonexistent --nodes 2
expect_error "unknown scheduling policy 'lottery'" --policy lottery --nodes 2 --workload "swim:$tmp/bad.tsv"
expect_error "--fail-nodes" --fail-nodes 10% --nodes 2 --workload "swim:$tmp/bad.tsv"
expect_error "unknown resource type 'gpus'" --node-resources gpus=1 --nodes 2 --workload "swim:$tmp/bad.tsv"
expect_error "node count 0" --nodes 0 --workload "swim:$tmp/bad.tsv"
printf 'queues: {root: {children: {a: {wieght: 1}}}}\n' >"$tmp/q.yaml"
expect_error "unknown key 'wieght'" --scheduler-config "$tmp/q.yaml" --nodes 2 --workload "swim:$tmp/bad.tsv"
expect_error "--am-master: " --am-master huge --nodes 2 --workload "swim:$tmp/bad.tsv"
expect_error "--adaptcont-config needs --am-master" --adaptcont-config x.yaml --nodes 2 --workload "swim:$tmp/bad.tsv"
printf 'm0-mb: -5\n' >"$tmp/ac.yaml"
expect_error "m0-mb" --am-master dynamic --adaptcont-config "$tmp/ac.yaml" --nodes 2 --workload "swim:$tmp/bad.tsv"
printf 'node-groups:\n  - count: 2\n' >"$tmp/c.yaml"
expect_error "'count' and 'resources' are required" --cluster "$tmp/c.yaml" --workload "swim:$tmp/bad.tsv"

# Not strict: the bad line is skipped with a warning naming it, the other jobs run.
if "$weft" sim --workload "swim:$tmp/bad.tsv" --nodes 2 --json >"$tmp/out" 2>"$tmp/err"; then
  if grep -q '"jobs": 2' "$tmp/out" && grep -q 'bad.tsv:2' "$tmp/out"; then
    echo "ok: non-strict run skipped line 2 and ran 2 jobs"
  else
    echo "FAIL: non-strict run: expected 2 jobs and a bad.tsv:2 warning"; cat "$tmp/out"; fail=1
  fi
else
  echo "FAIL: non-strict run failed"; cat "$tmp/err"; fail=1
fi
exit $fail
