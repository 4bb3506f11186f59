#!/usr/bin/env bash
# Issue 29: `weft bench rm --nm-processes 2` runs its simulated NMs in two `weft bench nm-sim`
# children over mutual TLS. A short run heartbeats near the nominal rate (at least half of it:
# CI machines are slow and busy), allocates containers, has no RPC errors, reports the RM loop's
# time per heartbeat and the children's send lags and CPU, and leaves no nm-sim process behind. The
# simulated NMs heartbeat one interval after each reply by default (--nm-schedule after-reply,
# as NMs do). Bad --nm-processes and --nm-schedule values fail with an error naming the flag.
# Usage: bench_nm_processes_test.sh WEFT
set -uo pipefail
weft=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# `weft bench nm-sim` processes (those `weft bench rm` starts dial 127.0.0.1).
leftover() { pgrep -f -- "bench nm-sim --rm 127.0.0.1" || true; }

nodes=40 heartbeat_ms=500 seconds=3
"$weft" bench rm --nodes $nodes --heartbeat-ms $heartbeat_ms --apps 4 --containers-per-app 20 \
  --container-ms 300 --seconds $seconds --threads 2 --nm-processes 2 --json \
  >"$tmp/out.json" 2>"$tmp/err"
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL: weft bench rm --nm-processes 2 exited $rc:"
  cat "$tmp/err"
  fail=1
else
  cat "$tmp/out.json"
  if ! python3 - "$tmp/out.json" $nodes $heartbeat_ms <<'EOF'; then
import json, os, sys
r = json.load(open(sys.argv[1]))
nodes, interval_ms = int(sys.argv[2]), int(sys.argv[3])
nominal = nodes * 1000.0 / interval_ms
checks = [
    ("nm_processes == 2", r["nm_processes"] == 2),
    (f"nm_schedule {r['nm_schedule']!r} == 'after-reply'", r["nm_schedule"] == "after-reply"),
    ("tls", r["tls"] is True),
    (f"heartbeats_per_s {r['heartbeats_per_s']:.1f} >= 50% of {nominal:.0f}",
     r["heartbeats_per_s"] >= 0.5 * nominal),
    (f"containers_allocated {r['containers_allocated']} > 0", r["containers_allocated"] > 0),
    (f"containers_completed {r['containers_completed']} > 0", r["containers_completed"] > 0),
    (f"rpc_errors {r['rpc_errors']} == 0", r["rpc_errors"] == 0),
    (f"loop_us_per_heartbeat {r['loop_us_per_heartbeat']} > 0", r["loop_us_per_heartbeat"] > 0),
    # the loop thread's own CPU: some, at most one core, and no less than what the kinds were
    # charged out of it (sampled, so within a margin)
    (f"0 < loop_cpu_per_s {r['loop_cpu_per_s']} <= 1", 0 < r["loop_cpu_per_s"] <= 1),
    (f"0 < loop_charged_cpu_per_s {r['loop_charged_cpu_per_s']} <= loop_cpu_per_s * 1.25",
     0 < r["loop_charged_cpu_per_s"] <= r["loop_cpu_per_s"] * 1.25),
    (f"heartbeat_latency count {r['heartbeat_latency']['count']} > 0",
     r["heartbeat_latency"]["count"] > 0),
    # every child's send lags reach the report, one per heartbeat measured
    (f"heartbeat_send_lag count {r['heartbeat_send_lag']['count']} == heartbeat_latency count",
     r["heartbeat_send_lag"]["count"] == r["heartbeat_latency"]["count"]),
    (f"heartbeat_send_lag mean_ms {r['heartbeat_send_lag']['mean_ms']} >= 0",
     r["heartbeat_send_lag"]["mean_ms"] >= 0),
    # the children's CPU reaches the report: some, and no more than every core of the machine
    (f"0 < nm_processes_cpu_per_s {r['nm_processes_cpu_per_s']} <= {os.cpu_count()} cores",
     0 < r["nm_processes_cpu_per_s"] <= os.cpu_count()),
]
bad = [name for name, ok in checks if not ok]
for name, ok in checks:
    print(("ok: " if ok else "FAIL: ") + name)
sys.exit(1 if bad else 0)
EOF
    fail=1
  fi
fi
if [[ -n "$(leftover)" ]]; then
  echo "FAIL: nm-sim processes left after the run:"
  ps -o pid,ppid,args -p "$(leftover | tr '\n' ',' | sed 's/,$//')"
  fail=1
else
  echo "ok: no nm-sim process left"
fi

# expect_error "substring" args...: exit code != 0 and stderr contains the substring; the
# command runs under ${launcher[@]} when set.
launcher=()
expect_error() {
  local want=$1
  shift
  if "${launcher[@]}" "$weft" bench "$@" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: weft bench $* succeeded; expected an error containing '$want'"
    fail=1
  elif ! grep -qF -- "$want" "$tmp/err"; then
    echo "FAIL: weft bench $*: error does not mention '$want':"
    cat "$tmp/err"
    fail=1
  else
    echo "ok: $* -> $(head -1 "$tmp/err")"
  fi
}
expect_error "--nm-processes 5 must be between 0 and --nodes (4)" rm --nodes 4 --nm-processes 5 --seconds 1
expect_error "--nm-processes -1 must be between 0 and --nodes" rm --nodes 4 --nm-processes -1 --seconds 1
expect_error "--rm" nm-sim --nodes 2 --seconds 1
expect_error "--nm-schedule: unknown NM heartbeat schedule 'sometimes'" rm --nodes 4 --nm-schedule sometimes --seconds 1
expect_error "--nm-schedule: unknown NM heartbeat schedule 'Fixed'" nm-sim --rm 127.0.0.1:1 --nodes 1 --nm-schedule Fixed --seconds 1
# A TLS directory without the CA: the error names the node and the file.
expect_error "TLS of node sim-node-00000:8041: CA file" nm-sim --rm 127.0.0.1:1 --nodes 1 --seconds 1 --tls-dir "$tmp"
# More NMs in other processes than the RM may hold connections (its open files, soft and hard
# limits lowered in a subshell) fail before anything starts, naming the limit.
launcher=(prlimit --nofile=1024 --)
expect_error "may open at most 1024 files (RLIMIT_NOFILE" rm --nodes 2000 --nm-processes 2 --seconds 1
launcher=()
if [[ -n "$(leftover)" ]]; then
  echo "FAIL: nm-sim processes left after the error cases"
  fail=1
fi
exit $fail
