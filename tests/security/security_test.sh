#!/usr/bin/env bash
# The security issue's attacks by one local user on another, end to end on `weft dev` (as root,
# with cgroups) and two ordinary Unix users this test creates, weft-alice and weft-bob. Each
# attack must now fail for the attacker, with its reason:
#   * containers run as their (MUNGE-authenticated) user: `id -u` shows it; root is refused
#     unless allowed explicitly;
#   * --user impersonation and a cross-user kill are refused by the RM;
#   * a container cannot read another user's work dir, nor another user's AM's /proc environ,
#     and tokens are files only their user reads, never in the environment;
#   * a container cannot move itself out of its cgroup (cgroup.procs of the root memory cgroup);
#   * a finished app's work dir and its containers' cgroups are removed.
# Node identity (TLS), forged tokens and unauthorised container control are in-process tests
# (rm_server_test, node_manager_test, security_test). Every wait is bounded.
# Usage: security_test.sh WEFT. Exit 77 (skipped, saying why) only when not root.
set -uo pipefail
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root (creates Unix users, runs containers as them in cgroups)"; exit 77
fi
src_weft=$1
dev_allow_root=0  # root's containers must be refused here
weft=""           # set below, after dev_cluster.sh made $tmp
source "$(dirname "$0")/../lib/dev_cluster.sh"

# Two ordinary users (uid >= 1000). Kept for later runs; the test never needs them removed.
for u in weft-alice weft-bob; do
  id "$u" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$u" ||
    { echo "FAIL: useradd $u"; exit 1; }
done
alice_uid=$(id -u weft-alice)
# Users run the binary from a copy they can reach whatever the checkout's permissions.
mkdir -p "$tmp/bin" && cp "$src_weft" "$tmp/bin/weft" && chmod 755 "$tmp/bin" "$tmp/bin/weft"
weft=$tmp/bin/weft

dev_start --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=4096,vcores=4
dev_wait_nodes 1 || exit 1
ok "weft dev as root: RM at $rm_address"
# The CA certificate is public; the users get a copy they can read.
cp "$WEFT_TLS_CA" "$tmp/ca.pem" && chmod 644 "$tmp/ca.pem"
work_root=$tmp/data/nm0

# as USER CMD...: runs the CLI as USER with a clean environment (no secret file).
as() {
  local user=$1; shift
  runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/nonexistent WEFT_RM="$rm_address" \
    WEFT_TLS_CA="$tmp/ca.pem" timeout 120 "$@"
}
# stdout_of APP: the stdout of its containers (kept after the app's work dir is removed).
stdout_of() { cat "$work_root"/logs/container_*_"${1#application_}"_*/stdout 2>/dev/null; }
stderr_of() { cat "$work_root"/logs/container_*_"${1#application_}"_*/stderr 2>/dev/null; }
app_of() { sed -n 's/.*\(application_[0-9]*_[0-9]*\).*/\1/p' "$1" | head -1; }

# 1. A container runs as its authenticated user.
as weft-alice "$weft" app run-shell --num-containers 1 --command 'id -u' --wait --timeout-s 90 \
  >"$tmp/id.out" 2>&1
app=$(app_of "$tmp/id.out")
if grep -q 'FINISHED SUCCEEDED' "$tmp/id.out" && stdout_of "$app" | grep -qx "$alice_uid"; then
  ok "alice's 'id -u' container printed her uid $alice_uid"
else bad "alice's id -u: $(cat "$tmp/id.out"); stdout: $(stdout_of "$app")"; fi

# 2. Root's containers are refused (uid 0 < --min-user-id) unless allowed explicitly.
timeout 120 "$weft" app submit --command 'id -u' --max-attempts 1 --wait --timeout-s 60 \
  >"$tmp/root.out" 2>&1
if grep -q 'FAILED' "$tmp/root.out" && grep -q "min-user-id\|min_user_id\|below" "$tmp/root.out"; then
  ok "root's container refused: $(grep -o "user 'root'[^;]*" "$tmp/root.out" | head -1)"
else bad "root's container: $(cat "$tmp/root.out")"; fi

# 3. Alice's long-running app with a secret in its work dir.
as weft-alice "$weft" app submit --name secret-keeper \
  --command 'echo s3cr3t-of-alice >secret; sleep 100' >"$tmp/keeper.out" 2>&1
keeper=$(app_of "$tmp/keeper.out")
secret_file="" keeper_pid=""
for _ in $(seq 1 150); do
  secret_file=$(ls "$work_root/$keeper"/container_*/secret 2>/dev/null | head -1)
  keeper_pid=$(pgrep -u weft-alice -x sleep | head -1)
  [[ -n $secret_file && -n $keeper_pid ]] && break
  sleep 0.2
done
[[ -n $secret_file && -n $keeper_pid ]] && ok "alice's $keeper runs (pid $keeper_pid)" ||
  bad "alice's secret keeper did not start: $(cat "$tmp/keeper.out")"
app_dir_mode=$(stat -c '%U %a' "$work_root/$keeper")
[[ $app_dir_mode == "weft-alice 700" ]] && ok "her app dir: $app_dir_mode" ||
  bad "alice's app dir is '$app_dir_mode', want 'weft-alice 700'"
token_file=$(ls "$work_root/$keeper"/container_*/.tokens/amrm 2>/dev/null | head -1)
[[ -n $token_file && $(stat -c '%U %a' "$token_file") == "weft-alice 600" ]] &&
  ok "her AMRM token: a 0600 file of hers" || bad "AMRM token file: '$token_file'"
if tr '\0' '\n' <"/proc/$keeper_pid/environ" | grep -q '^WEFT_AMRM_TOKEN='; then
  bad "the AMRM token is in the AM's environment"
else ok "no token in the AM's environment"; fi

# 4. Bob's container tries to read her file, her AM's environment, and to leave its cgroup.
attack="cat '$secret_file'; cat /proc/$keeper_pid/environ; ls '$work_root/$keeper';
echo \$\$ >/sys/fs/cgroup/memory/cgroup.procs && echo ESCAPED;
grep -o ':memory:.*' /proc/self/cgroup"
as weft-bob "$weft" app submit --command "$attack" --max-attempts 1 --wait --timeout-s 60 \
  >"$tmp/bob.out" 2>&1
bob_app=$(app_of "$tmp/bob.out")
bob_out=$(stdout_of "$bob_app") bob_err=$(stderr_of "$bob_app")
if [[ -z $bob_app ]]; then bad "bob's app did not run: $(cat "$tmp/bob.out")"
else
  [[ $bob_out != *s3cr3t* && $bob_err == *"$secret_file: Permission denied"* ]] &&
    ok "bob cannot read alice's work dir" || bad "cross-user read: $bob_out / $bob_err"
  [[ $bob_err == *"/proc/$keeper_pid/environ: Permission denied"* ]] &&
    ok "bob cannot read alice's /proc/PID/environ" || bad "cross-user /proc: $bob_err"
  [[ $bob_out != *ESCAPED* && $bob_err == *"cgroup.procs: Permission denied"* &&
     $bob_out == *":memory:/weft"* ]] &&
    ok "bob's container cannot leave its cgroup (still in $(grep -o ':memory:.*' <<<"$bob_out"))" ||
    bad "cgroup escape: $bob_out / $bob_err"
fi

# 5. Bob may not kill alice's app, nor act as her.
if as weft-bob "$weft" app kill "$keeper" >"$tmp/kill.out" 2>&1; then bad "bob killed alice's app"
elif grep -q "may not modify application" "$tmp/kill.out"; then
  ok "bob's kill refused: $(head -1 "$tmp/kill.out")"
else bad "bob's kill: $(cat "$tmp/kill.out")"; fi
if as weft-bob "$weft" app kill --user weft-alice "$keeper" >"$tmp/imp.out" 2>&1; then
  bad "bob killed alice's app with --user"
elif grep -q "may not act as 'weft-alice'" "$tmp/imp.out"; then
  ok "bob's --user weft-alice refused: $(head -1 "$tmp/imp.out")"
else bad "impersonation: $(cat "$tmp/imp.out")"; fi
if as weft-bob "$weft" app submit --user weft-alice --command true >"$tmp/imps.out" 2>&1; then
  bad "bob submitted as alice"
else grep -q "may not act as" "$tmp/imps.out" && ok "bob cannot submit as alice" ||
  bad "submit as alice: $(cat "$tmp/imps.out")"; fi

# 6. Alice kills her own; its work dir and cgroups go away.
as weft-alice "$weft" app kill "$keeper" >"$tmp/own.out" 2>&1 && ok "alice kills her own app" ||
  bad "alice's kill: $(cat "$tmp/own.out")"
for _ in $(seq 1 150); do [[ -e $work_root/$keeper ]] || break; sleep 0.2; done
[[ -e $work_root/$keeper ]] && bad "$keeper's work dir is still there" ||
  ok "$keeper's work dir removed"
left=""
for _ in $(seq 1 100); do
  left=$(find /sys/fs/cgroup/memory/weft-dev-"${rm_address##*:}"-nm0 -mindepth 1 -type d 2>/dev/null)
  [[ -z $left ]] && break
  sleep 0.2
done
[[ -z $left ]] && ok "no container cgroup left behind" || bad "cgroups left: $left"

# 7. `weft dev` as an ordinary user: her containers run as her, with no setuid (no cgroups).
mkdir -p "$tmp/alice-dev" && chown weft-alice "$tmp/alice-dev"
runuser -u weft-alice -- env -i PATH=/usr/bin:/bin HOME=/nonexistent "$weft" dev --nodes 1 \
  --rm-port 0 --http-port 0 --no-cgroups --data-dir "$tmp/alice-dev/data" \
  >"$tmp/alice-dev/out" 2>"$tmp/alice-dev/err" &
alice_dev=$!
alice_rm=""
for _ in $(seq 1 300); do
  grep -q "Ctrl-C" "$tmp/alice-dev/out" 2>/dev/null && break
  kill -0 "$alice_dev" 2>/dev/null || break
  sleep 0.1
done
alice_rm=$(sed -n 's/.*ResourceManager listening on \([0-9.]*:[0-9]*\).*/\1/p' "$tmp/alice-dev/out")
if [[ -z $alice_rm ]]; then
  bad "weft dev as weft-alice did not start: $(cat "$tmp/alice-dev/out" "$tmp/alice-dev/err")"
else
  runuser -u weft-alice -- env -i PATH=/usr/bin:/bin HOME=/nonexistent WEFT_RM="$alice_rm" \
    WEFT_TLS_CA="$tmp/alice-dev/data/tls/ca.pem" timeout 120 "$weft" app run-shell \
    --num-containers 1 --command 'id -u' --wait --timeout-s 90 >"$tmp/alice-dev/id" 2>&1
  own=$(cat "$tmp/alice-dev/data"/nm0/logs/container_*_000002/stdout 2>/dev/null)
  grep -q 'FINISHED SUCCEEDED' "$tmp/alice-dev/id" && [[ $own == "$alice_uid" ]] &&
    ok "weft dev as weft-alice: her container ran as uid $own" ||
    bad "weft dev as weft-alice: $(cat "$tmp/alice-dev/id"); stdout '$own'"
fi
kill -TERM "$alice_dev" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$alice_dev" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$alice_dev" 2>/dev/null

if [[ $fail -eq 0 ]]; then echo PASS; else
  echo "--- weft dev output"; cat "$tmp/dev.out"; tail -40 "$tmp/dev.err"; exit 1; fi
