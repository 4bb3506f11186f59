#!/usr/bin/env bash
# Runs `weft sim` on each bundled trace with each policy and checks that the report, the time
# series and the plots are written and well-formed. Usage: sim_traces_test.sh WEFT SOURCE_DIR
set -euo pipefail
weft=$1
src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
py=/usr/bin/python3
[ -x "$py" ] || py=python3
traces="swim:$src/data/traces/swim_FB-2009_samples_24_times_1hr_0.tsv
sls:$src/data/traces/sls_inputsls.json
rumen:$src/data/traces/sls_2jobs2min-rumen-jh.json
alibaba2017:$src/data/traces/alibaba2017_batch_task.csv"
fail=0
for policy in fifo fair capacity; do
  while IFS= read -r wl; do
    fmt=${wl%%:*}
    dir="$out/$fmt-$policy"
    extra=()
    # The Alibaba day holds 11.9 M task instances; the first 400 jobs keep CI quick.
    [ "$fmt" = alibaba2017 ] && extra=(--max-jobs 400 --nodes 100 --node-resources memory-mb=65536,vcores=64)
    [ "$fmt" = swim ] || [ "$fmt" = alibaba2017 ] || extra=(--nodes 8)
    if ! "$weft" sim --workload "$wl" --policy "$policy" --report "$dir/report.json" \
        --timeseries "$dir/ts.csv" --plot "$dir/plots" "${extra[@]}" >"$dir.log" 2>&1; then
      echo "FAIL: $fmt/$policy: weft sim exited non-zero"; cat "$dir.log"; fail=1; continue
    fi
    if ! "$py" - "$dir" "$policy" <<'PYEOF'
import json, sys, os, csv
d, policy = sys.argv[1], sys.argv[2]
r = json.load(open(os.path.join(d, "report.json")))
for k in ["policy", "nodes", "jobs", "makespan_s", "scheduler_wall_s", "allocations",
          "allocations_per_s", "job_completion_s", "utilization", "fairness_jain", "jobs_detail"]:
    assert k in r, f"report lacks {k}"
assert r["policy"] == policy
assert r["jobs"] > 0 and r["allocations"] > 0, "nothing ran"
assert r["jobs_failed"] == 0, f"{r['jobs_failed']} jobs failed"
done = [j for j in r["jobs_detail"] if j["finish_s"] is not None]
assert len(done) == r["jobs"], "not every job finished"
for q in ["mean", "p50", "p95", "p99"]:
    assert r["job_completion_s"][q] >= 0
rows = list(csv.reader(open(os.path.join(d, "ts.csv"))))
assert rows[0][0] == "time_s" and len(rows) > 2, "time series too short"
for f in ["utilization.png", "containers.png"]:
    assert os.path.getsize(os.path.join(d, "plots", f)) > 1000, f"missing plot {f}"
PYEOF
    then
      echo "FAIL: $fmt/$policy: bad output"; fail=1; continue
    fi
    echo "ok: $fmt/$policy: $(sed -n 2p "$dir.log")"
  done <<<"$traces"
done
exit $fail
