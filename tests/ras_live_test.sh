#!/usr/bin/env bash
# The `ras` policy (seed 003) in the live RM: two distributed-shell apps with the same tasks but
# different completion-time goals on a `weft dev` cluster too small for both. Both declare their
# task length (2 s) in the phase profile; the tighter-goal app, behind its goal, must hold more
# concurrent containers than the relaxed one. A bad declared length is refused first.
# Usage: ras_live_test.sh WEFT
set -uo pipefail
weft=$1
source "$(dirname "$0")/lib/dev_cluster.sh"
trap 'kill ${pids:-} 2>/dev/null; dev_cleanup' EXIT

cat >"$tmp/ras.yaml" <<'YAML'
policy: ras
ras:
  control-period-ms: 1000
queues:
  root:
    children:
      default: {}
YAML
# 2 nodes x 6 vcores: 12 one-vcore slots, 2 of them for the AMs.
dev_start --nodes 2 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=6144,vcores=6 --scheduler-config "$tmp/ras.yaml"
dev_wait_nodes 2 || exit 1

out=$("$weft" app run-shell --name bad --goal-s 60 --phase map:1:length-s=-2 --num-containers 1 \
  --command true 2>&1) && { echo "FAIL: a negative task length was accepted: $out"; exit 1; }
grep -q "bad task length '-2'" <<<"$out" || { echo "FAIL: unexpected error: $out"; exit 1; }
[[ "$("$weft" app list --json)" != *'"bad"'* ]] || { echo "FAIL: the bad app was stored"; exit 1; }

# Each app: 40 tasks of 2 s, <512 MB, 1 vcore>, one map-like phase at the shell's priority 1.
run() {  # name goal_s
  timeout 300 "$weft" app run-shell --name "$1" --goal-s "$2" --phase map:1:length-s=2 \
    --num-containers 40 --command 'sleep 2' --memory-mb 512 --vcores 1 --am-memory-mb 512 \
    --wait >"$tmp/$1.out" 2>&1 &
  pids="${pids:-} $!"
}
run relaxed 3600
run tight 12

# Running containers of both apps, and the tight app's pending ones, every 0.5 s while both run
# (bounded: 120 s).
python3 - "$weft" >"$tmp/samples" <<'PY'
import json, subprocess, sys, time
weft = sys.argv[1]
start = time.time()
while time.time() - start < 120:
    out = subprocess.run([weft, "app", "list", "--json"], capture_output=True, text=True).stdout
    apps = {a["name"]: a for a in json.loads(out or "{}").get("applications", [])}
    if {"tight", "relaxed"} <= apps.keys():
        states = {a["state"] for a in apps.values()}
        t, r = (int(apps[n].get("runningContainers", 0)) for n in ("tight", "relaxed"))
        if apps["tight"]["state"] != "APP_RUNNING" or apps["relaxed"]["state"] != "APP_RUNNING":
            if time.time() - start > 5:
                break
        else:
            p = int(apps["tight"].get("pendingContainers", 0))
            print(f"{time.time() - start:.1f} {t} {r} {p}", flush=True)
    time.sleep(0.5)
PY
wait $pids
cat "$tmp/samples" | tr '\n' ';'; echo
# After the cold start (the first tasks end ~2 s after they start), while the tight app still has
# tasks waiting for a container: once its last task has started it can only shrink, and the
# relaxed app rightly takes the freed slots (a fast run reaches that tail at ~6 s, a loaded one
# later).
verdict=$(awk '$1 >= 3 && $4 > 0 { n++; if ($2 > $3) more++; if ($2 < $3) less++; st += $2; sr += $3 }
  END { printf "%d %d %d %.1f %.1f", n, more, less, (n ? st / n : 0), (n ? sr / n : 0) }' "$tmp/samples")
read -r n more less mean_t mean_r <<<"$verdict"
echo "samples after 3 s with tight tasks waiting: $n; tight ahead in $more, behind in $less; mean running tight $mean_t, relaxed $mean_r"
if [[ $n -ge 3 && $more -gt $less ]] && python3 -c "import sys; sys.exit(0 if $mean_t > $mean_r else 1)"; then
  echo "PASS: the tighter-goal app held more containers while behind its goal"
  exit 0
fi
echo "FAIL"; tail -20 "$tmp/dev.err"; cat "$tmp/tight.out" "$tmp/relaxed.out"
exit 1
