#!/usr/bin/env bash
# Issue 27's attack on federation identities, end to end on `weft dev --subclusters 2` (as root,
# with cgroups) and the ordinary user weft-alice. Root on a worker holds that worker's NM key;
# before, that certificate on a sub-cluster RM, with `weft-user: root` or another user's name,
# killed other users' apps and submitted apps that ran as them. Each attempt must now be
# refused (gRPC PERMISSION_DENIED) and change nothing:
#   * the other sub-cluster's NM certificate on the app's home RM: kill as root, as its owner;
#   * the same on its own RM: kill as root, a managed submission as weft-bob;
#   * the NM running the app's AM, at the home: kill as the owner (an NM only reads there);
#   * a router's certificate on AdminService; the GPG's killing an app.
# No weft command presents a daemon's certificate, so the attacker speaks gRPC with curl
# (HTTP/2 with the NM's certificate). The allowed paths (unmanaged AMs in secondaries) are
# federation_dev_test's spanning app and federation_rm_server_test. Every wait is bounded.
# Usage: federation_identity_test.sh WEFT. Exit 77 (skipped, saying why) when not root or
# when curl has no HTTP/2.
set -uo pipefail
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root (creates Unix users, runs containers as them)"; exit 77
fi
if ! curl -V | grep -q HTTP2; then echo "SKIP: curl without HTTP/2 cannot speak gRPC"; exit 77; fi
src_weft=$1
weft=""
source "$(dirname "$0")/../lib/dev_cluster.sh"

for u in weft-alice weft-bob; do
  id "$u" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$u" ||
    { echo "FAIL: useradd $u"; exit 1; }
done
mkdir -p "$tmp/bin" && cp "$src_weft" "$tmp/bin/weft" && chmod 755 "$tmp/bin" "$tmp/bin/weft"
weft=$tmp/bin/weft

# Root's containers stay refused (no --allowed-system-users root).
"$weft" dev --subclusters 2 --nodes 1 --node-resources memory-mb=2048,vcores=2 --rm-port 0 \
  --http-port 0 --data-dir "$tmp/data" >"$tmp/dev.out" 2>"$tmp/dev.err" &
dev_pid=$!
router=""
for _ in $(seq 1 300); do
  if grep -q "Ctrl-C" "$tmp/dev.out" 2>/dev/null; then
    router=$(sed -n 's/.*router listening on \([0-9.]*:[0-9]*\).*/\1/p' "$tmp/dev.out")
    WEFT_TLS_CA=$(sed -n 's|.*cluster CA WEFT_TLS_CA=\([^ ]*\) .*|\1|p' "$tmp/dev.out")
    break
  fi
  kill -0 "$dev_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$router" ]]; then echo "FAIL: weft dev did not start"; cat "$tmp/dev.out" "$tmp/dev.err"; exit 1; fi
export WEFT_RM=$router WEFT_TLS_CA
tls=$tmp/data/tls
# Each sub-cluster's RM and its NM (node id = the NM certificate's name).
declare -A rm_of nm_of
while read -r sc rm nm; do rm_of[$sc]=$rm; nm_of[$sc]=$nm; done < <(
  sed -n 's/.*sub-cluster \(sc[0-9]*\): RM \([0-9.:]*\), .*NM \([0-9.:]*\) <.*/\1 \2 \3/p' "$tmp/dev.out")
[[ ${#rm_of[@]} -eq 2 ]] && ok "two sub-clusters: ${!rm_of[*]}" || bad "sub-clusters: $(cat "$tmp/dev.out")"
# curl takes "file:password": copies of the certificates without the node id's colon.
cert() {  # cert ROLE NAME -> prints "PEM KEY" of a copy
  local base=$tmp/certs/$1-${2//:/_}
  mkdir -p "$tmp/certs"
  cp "$tls/$1-$2.pem" "$base.pem" && cp "$tls/$1-$2.key" "$base.key"
  echo "$base.pem $base.key"
}

as() {  # as USER CMD...: the CLI as USER with a clean environment
  local user=$1; shift
  cp "$WEFT_TLS_CA" "$tmp/ca.pem" && chmod 644 "$tmp/ca.pem"
  runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/nonexistent WEFT_RM="$router" \
    WEFT_TLS_CA="$tmp/ca.pem" timeout 120 "$@"
}

# grpc CERT_ROLE CERT_NAME ADDRESS METHOD USER HEX_MESSAGE: one unary call with that daemon's
# certificate, acting for USER; prints "STATUS MESSAGE" from the reply's grpc-status/-message.
grpc() {
  local pem key
  read -r pem key < <(cert "$1" "$2")
  local msg_hex=$6
  local len=$(( ${#msg_hex} / 2 ))
  printf '00%08x%s' "$len" "$msg_hex" | xxd -r -p >"$tmp/req.bin"
  curl -sS --max-time 30 --http2 --cacert "$WEFT_TLS_CA" --cert "$pem" --key "$key" \
    -H "content-type: application/grpc" -H "te: trailers" -H "weft-user: $5" \
    --data-binary @"$tmp/req.bin" -D "$tmp/resp.h" -o /dev/null "https://$3/$4" 2>&1
  local status message
  status=$(sed -n 's/^grpc-status: *\([0-9]*\).*/\1/p' "$tmp/resp.h" | tr -d '\r')
  message=$(sed -n 's/^grpc-message: *//p' "$tmp/resp.h" | tr -d '\r')
  echo "${status:-none} $message"
}
hex() { printf '%s' "$1" | xxd -p | tr -d '\n'; }
field() {  # field NUMBER HEX: a length-delimited protobuf field (lengths < 128)
  printf '%02x%02x%s' $(( ($1 << 3) | 2 )) $(( ${#2} / 2 )) "$2"
}
expect_denied() {  # expect_denied WHAT RESULT
  if [[ "$2" == 7\ * ]]; then ok "$1: refused (${2#7 })"; else bad "$1: $2"; fi
}

# weft-alice's app, through the router; it runs until the end of the test.
as weft-alice "$weft" app run-shell --num-containers 1 --command 'sleep 600' >"$tmp/submit.out" 2>&1
app=$(sed -n 's/.*\(application_[0-9]*_[0-9]*\).*/\1/p' "$tmp/submit.out" | head -1)
[[ -n "$app" ]] && ok "alice submitted $app through the router" || bad "submit: $(cat "$tmp/submit.out")"
state=""
for _ in $(seq 1 150); do
  state=$(as weft-alice "$weft" app status "$app" 2>/dev/null | grep -o "RUNNING" | head -1)
  [[ "$state" == RUNNING ]] && break
  sleep 0.2
done
[[ "$state" == RUNNING ]] && ok "$app RUNNING" || bad "$app not RUNNING: $(as weft-alice "$weft" app status "$app" 2>&1)"
home=$("$weft" federation homes --federation-store "sqlite:$tmp/data/federation.db" |
  grep "$app" | grep -o "sc[0-9]*" | head -1)
other=sc1; [[ "$home" == sc1 ]] && other=sc2
[[ -n "$home" ]] && ok "$app is homed in $home; the attacker holds $other's NM key" ||
  bad "no home for $app"

kill_msg=$(field 1 "$(hex "$app")")
# The issue's attack: another worker's NM certificate on the app's home RM.
expect_denied "$other's NM kills alice's app at $home as root" \
  "$(grpc nm "${nm_of[$other]}" "${rm_of[$home]}" weft.v1.ClientService/KillApplication root "$kill_msg")"
expect_denied "$other's NM kills alice's app at $home as weft-alice" \
  "$(grpc nm "${nm_of[$other]}" "${rm_of[$home]}" weft.v1.ClientService/KillApplication weft-alice "$kill_msg")"
expect_denied "$other's NM kills alice's app at $other as root" \
  "$(grpc nm "${nm_of[$other]}" "${rm_of[$other]}" weft.v1.ClientService/KillApplication root "$kill_msg")"
# A managed app as weft-bob (before: its container ran as bob).
sub_ctx=$(field 1 "$(hex application_1_4242)")$(field 6 "$(field 1 "$(hex 'id > /tmp/owned-by-nm')")")
expect_denied "$other's NM submits an app as weft-bob at $other" \
  "$(grpc nm "${nm_of[$other]}" "${rm_of[$other]}" weft.v1.ClientService/SubmitApplication weft-bob "$(field 1 "$sub_ctx")")"
expect_denied "$other's NM submits an app as weft-bob at $home" \
  "$(grpc nm "${nm_of[$other]}" "${rm_of[$home]}" weft.v1.ClientService/SubmitApplication weft-bob "$(field 1 "$sub_ctx")")"
# Even the NM running the app's AM may not kill it at its home.
expect_denied "$home's NM (the AM's) kills alice's app at $home" \
  "$(grpc nm "${nm_of[$home]}" "${rm_of[$home]}" weft.v1.ClientService/KillApplication weft-alice "$kill_msg")"
# A router's certificate is no admin; the GPG kills nothing.
expect_denied "the router's certificate on AdminService/RefreshQueues as root" \
  "$(grpc router router "${rm_of[$home]}" weft.v1.AdminService/RefreshQueues root "")"
expect_denied "the GPG's certificate kills alice's app" \
  "$(grpc gpg gpg "${rm_of[$home]}" weft.v1.ClientService/KillApplication weft-alice "$kill_msg")"

# Nothing changed: alice's app runs on, and bob has no app anywhere.
as weft-alice "$weft" app status "$app" 2>&1 | grep -q RUNNING && ok "$app still RUNNING" ||
  bad "$app: $(as weft-alice "$weft" app status "$app" 2>&1)"
listed=$("$weft" app list 2>&1)
if [[ "$listed" == *"$app"* && "$listed" != *weft-bob* ]]; then ok "no app of weft-bob (root lists every app)"
else bad "apps: $listed"; fi
[[ -e /tmp/owned-by-nm ]] && bad "/tmp/owned-by-nm was written" || ok "no container of the forged app ran"

as weft-alice "$weft" app kill "$app" >/dev/null 2>&1
exit $fail
