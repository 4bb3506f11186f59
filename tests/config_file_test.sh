#!/usr/bin/env bash
# The daemons' config file (docs/operations.md "Configuration file") end to end: `weft rm` and
# `weft nm` started with --config and nothing else (TLS, ports, secret, work root, booleans and
# lists all from the file's rm and nm sections), the NM registering with the RM;
# `weft config show` naming FILE:LINE, "flag" and "default" as sources and never a secret's
# contents; `show --yaml` read back to the same values; and bad files (unknown key, bad value,
# missing file) refused with FILE:LINE and exit 2 before anything starts. Every wait is bounded.
# Usage: config_file_test.sh WEFT
set -uo pipefail
weft=$1
source "$(dirname "$0")/lib/daemons.sh"

# No host-wide /etc/weft/weft.yaml or $WEFT_CONFIG leaks into the checks below.
unset WEFT_CONFIG WEFT_SECRET_FILE WEFT_RM

nm_port=$(free_port)
make_pki config-file-test-s3cret "$nm_port"

# The RM's section first; the NM's is added once the RM's port (chosen by the kernel) is known.
cfg=$tmp/weft.yaml
cat >"$cfg" <<EOF
# One file for the host: each daemon reads its own section.
rm:
  port: 0
  http-port: 0
  state-store: "$tmp/rm-state.db"
  tls-ca: $tmp/pki/ca.pem
  tls-cert: $tmp/pki/rm-rm1.pem
  tls-key: $tmp/pki/rm-rm1.key
  secret-file: $tmp/secret
  resource-limit: [network-mbps:1:200]
  admins: [alice, bob]
  http-anonymous-view: true
EOF

"$weft" rm --config "$cfg" >"$tmp/rm.out" 2>"$tmp/rm.err" &
rm_pid=$!
if ! wait_rm_address "$tmp/rm.out" "$rm_pid"; then
  echo "FAIL: weft rm --config did not start"; cat "$tmp/rm.out" "$tmp/rm.err"; exit 1
fi
ok "weft rm --config alone started on $rm_address"
grep -q "state $tmp/rm-state.db" "$tmp/rm.out" && ok "the RM's state store is the file's" ||
  bad "state store not from the file: $(cat "$tmp/rm.out")"

cat >>"$cfg" <<EOF
nm:
  rm: $rm_address
  port: $nm_port
  http-port: 0
  work-root: $tmp/nm
  node-resources: memory-mb=2048,vcores=2
  no-cgroups: true
  allowed-system-users: root
  tls-ca: $tmp/pki/ca.pem
  tls-cert: $tmp/pki/nm-127.0.0.1:$nm_port.pem
  tls-key: $tmp/pki/nm-127.0.0.1:$nm_port.key
EOF
"$weft" nm --config "$cfg" >"$tmp/nm.out" 2>"$tmp/nm.err" &
nm_pid=$!

export WEFT_RM=$rm_address WEFT_TLS_CA=$tmp/pki/ca.pem WEFT_SECRET_FILE=$tmp/secret
running=""
for _ in $(seq 1 150); do
  running=$(timeout 10 "$weft" node list --state RUNNING 2>/dev/null | grep "127.0.0.1:$nm_port")
  [[ -n "$running" ]] && break
  kill -0 "$nm_pid" 2>/dev/null || break
  sleep 0.2
done
if [[ -n "$running" ]]; then
  ok "weft nm --config alone registered: $running"
  grep -q "memory-mb=2048,vcores=2" <<<"$running" && ok "the node offers the file's resources" ||
    bad "node resources not from the file: $running"
else
  bad "weft nm --config did not register"; cat "$tmp/nm.out" "$tmp/nm.err"
fi

# ---- weft config show: every option, its value and its source.
line_of() { grep -n "^  $1:" "$cfg" | head -1 | cut -d: -f1; }  # KEY's line in the first section with it
if "$weft" config show rm --config "$cfg" --nm-expiry-ms 5000 >"$tmp/show.out" 2>"$tmp/show.err"; then
  ok "config show rm: exit 0"
else
  bad "config show rm: $(cat "$tmp/show.err")"
fi
check_row() {  # KEY VALUE SOURCE
  if grep -qE "^$1 +$2 +$3\$" "$tmp/show.out"; then ok "config show rm: $1 = $2 from $3"
  else bad "config show rm: no row '$1 $2 $3' in: $(grep "^$1 " "$tmp/show.out")"; fi
}
check_row state-store "$tmp/rm-state.db" "$cfg:$(line_of state-store)"
check_row admins "alice,bob" "$cfg:$(line_of admins)"
check_row http-anonymous-view true "$cfg:$(line_of http-anonymous-view)"
check_row nm-expiry-ms 5000 flag
check_row am-expiry-ms 600000 default
check_row secret-file "$tmp/secret" "$cfg:$(line_of secret-file)"
grep -q "config-file-test-s3cret" "$tmp/show.out" && bad "config show printed the secret" ||
  ok "config show prints the secret file's path, not its contents"
WEFT_CONFIG=$cfg "$weft" config show rm >"$tmp/env.out" 2>&1 &&
  grep -q "^weft rm: config file $cfg\$" "$tmp/env.out" && ok "\$WEFT_CONFIG names the file" ||
  bad "WEFT_CONFIG: $(cat "$tmp/env.out")"

# --yaml reads back to the same values (the VALUE column), for both daemons.
for daemon in rm nm; do
  "$weft" config show $daemon --config "$cfg" --yaml >"$tmp/$daemon.yaml" 2>"$tmp/yaml.err" ||
    bad "config show $daemon --yaml: $(cat "$tmp/yaml.err")"
  "$weft" config show $daemon --config "$cfg" | awk 'NR > 2 { print $1, $2 }' >"$tmp/a.txt"
  if "$weft" config show $daemon --config "$tmp/$daemon.yaml" 2>"$tmp/yaml.err" |
    awk 'NR > 2 { print $1, $2 }' >"$tmp/b.txt" && [[ -s "$tmp/a.txt" ]] &&
    diff "$tmp/a.txt" "$tmp/b.txt" >"$tmp/diff.txt"; then
    ok "config show $daemon --yaml reads back to the same $(wc -l <"$tmp/a.txt") values"
  else
    bad "config show $daemon --yaml does not read back: $(cat "$tmp/yaml.err" "$tmp/diff.txt")"
  fi
done

# ---- Bad files: FILE:LINE on stderr, exit 2, nothing started (no listening line, no wait).
refused() {  # DAEMON EXPECTED-TEXT FILE-CONTENTS
  local daemon=$1 want=$2 file=$tmp/bad-$RANDOM.yaml
  printf '%b' "$3" >"$file"
  timeout 30 "$weft" "$daemon" --config "$file" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  local expected=${want//FILE/$file}
  if [[ $rc -eq 2 ]] && grep -qF -- "$expected" "$tmp/bad.err" && ! grep -q "listening" "$tmp/bad.out"; then
    ok "weft $daemon refuses: $expected"
  else
    bad "weft $daemon with a bad file: exit $rc, $(cat "$tmp/bad.out" "$tmp/bad.err")"
  fi
}
refused rm "FILE:3: unknown key 'prot' in section 'rm' (known: " 'rm:\n  port: 0\n  prot: 1\n'
refused rm "FILE:3: unknown section 'resourcemanager'" 'nm:\n  port: 0\nresourcemanager:\n  port: 1\n'
refused rm "FILE:2: 'port' in section 'rm': Could not convert: --port = eighty" \
  'rm:\n  port: eighty\n'
refused nm "FILE:4: 'no-cgroups' in section 'nm': expected true or false, found 'maybe'" \
  "nm:\n  rm: $rm_address\n  port: 0\n  no-cgroups: maybe\n"
refused nm "FILE:2: 'rm' in section 'nm': --rm: " 'nm:\n  rm: "not an address"\n'
timeout 30 "$weft" rm --config "$tmp/missing.yaml" >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
[[ $rc -eq 2 ]] && grep -qF -- "--config $tmp/missing.yaml: no such file" "$tmp/bad.err" &&
  ok "a missing --config file is refused" || bad "missing --config: exit $rc, $(cat "$tmp/bad.err")"
# A bad file stops `config show` too, with the same words.
"$weft" config show rm --config "$tmp/missing.yaml" >/dev/null 2>"$tmp/bad.err"
[[ $? -eq 2 ]] && ok "config show refuses a missing file with exit 2" ||
  bad "config show with a missing file: $(cat "$tmp/bad.err")"

# The daemons started from the file are still serving.
kill -0 "$rm_pid" 2>/dev/null && kill -0 "$nm_pid" 2>/dev/null && ok "rm and nm still running" ||
  bad "rm or nm died: $(tail -5 "$tmp/rm.err" "$tmp/nm.err")"

[[ $fail -eq 0 ]] && echo "PASS" || echo "FAIL"
exit $fail
