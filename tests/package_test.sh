#!/usr/bin/env bash
# The Debian package end to end (issue 18). scripts/package.sh packages this build tree's
# binary (no second build); lintian reports no error; the .deb is installed with dpkg into a
# throwaway root - an overlay over / whose writes land on a tmpfs, in a private mount
# namespace, so the host's files and dpkg database stay as they are - where its postinst makes
# the weft user and directories; systemd-analyze verifies the units there. From the installed
# files: `weft --version`, the man pages, bash completion, the config's keys being real flags,
# and a one-node cluster running `weft app run-shell --num-containers 2 --command true
# --wait`. Then reinstall (postinst is idempotent), remove (conffile, state and user kept) and
# purge (state and /etc/weft gone). Needs root (mount, chroot); skipped, saying why, otherwise.
# Every wait is bounded. Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)

if [[ $(id -u) -ne 0 ]]; then echo "SKIP: installing into a chroot needs root"; exit 77; fi
# Re-run in a private mount namespace: the tmpfs and the overlay die with this test.
if [[ -z ${WEFT_PACKAGE_TEST_NS:-} ]]; then
  if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "SKIP: cannot make a mount namespace (unshare --mount)"; exit 77
  fi
  WEFT_PACKAGE_TEST_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi

work=$(mktemp -d)
fs=$work/fs      # tmpfs: the overlay's upper and work dirs
root=$fs/root    # the throwaway root: / with this test's changes on top
weft=$root/usr/bin/weft
source "$src/tests/lib/dev_cluster.sh"  # ok, bad, dev_start, dev_wait_nodes; $tmp
pkg_cleanup() {
  dev_cleanup
  if mountpoint -q "$root"; then umount "$root" 2>/dev/null || umount -l "$root"; fi
  if mountpoint -q "$fs"; then umount "$fs" 2>/dev/null || umount -l "$fs"; fi
  rm -rf "$work"
}
trap pkg_cleanup EXIT
host_had_weft=0
[[ -e /usr/bin/weft ]] && host_had_weft=1

# ---- Build the package from this tree.
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build/CMakeCache.txt")
if ! deb=$("$src/scripts/package.sh" --build-dir "$build" --out-dir "$work/out" 2>"$work/pkg.err")
then
  echo "FAIL: scripts/package.sh: $(cat "$work/pkg.err")"; exit 1
fi
[[ "$(basename "$deb")" == "weft_${version}_$(dpkg --print-architecture).deb" ]] &&
  ok "package.sh built $(basename "$deb")" || bad "package.sh printed '$deb'"
[[ "$(dpkg-deb -f "$deb" Version)" == "$version" ]] && ok "Version: $version (CMake's)" ||
  bad "Version: $(dpkg-deb -f "$deb" Version), CMake's $version"
dpkg-deb -f "$deb" Depends | grep -q 'libc6' && dpkg-deb -f "$deb" Depends | grep -q adduser &&
  dpkg-deb -f "$deb" Depends | grep -qw libpq5 &&
  ok "Depends from dpkg-shlibdeps, adduser, and libpq5 (opened with dlopen)" ||
  bad "Depends: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
missing=()
for path in /usr/bin/weft /usr/libexec/weft/weft-container-monitor /etc/weft/weft.yaml \
  /lib/systemd/system/weft-rm.service \
  /lib/systemd/system/weft-nm.service /lib/systemd/system/weft-router.service \
  /lib/systemd/system/weft-gpg.service /usr/share/bash-completion/completions/weft \
  /usr/share/man/man1/weft.1.gz /usr/share/man/man1/weft-rm.1.gz \
  /usr/share/man/man1/weft-nm.1.gz /usr/share/man/man1/weft-router.1.gz \
  /usr/share/man/man1/weft-gpg.1.gz /usr/share/doc/weft/copyright \
  /usr/share/doc/weft/README.Debian /usr/share/doc/weft/changelog.gz; do
  grep -qx "$path" "$work/contents" || missing+=("$path")
done
[[ ${#missing[@]} -eq 0 ]] && ok "the package holds the binary, units, config, man pages, completion, docs" ||
  bad "missing from the package: ${missing[*]}"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/weft/weft.yaml &&
  ok "/etc/weft/weft.yaml is a conffile" || bad "/etc/weft/weft.yaml is not a conffile"
if command -v lintian >/dev/null; then
  lintian "$deb" >"$work/lintian.out" 2>&1
  if grep -q '^E:' "$work/lintian.out"; then bad "lintian errors: $(grep '^E:' "$work/lintian.out")"
  else ok "lintian: no errors ($(grep -c '^W:' "$work/lintian.out") warnings)"; fi
else
  echo "note: lintian not installed, not run (scripts/install-deps.sh installs it)"
fi

# ---- The throwaway root.
mkdir -p "$fs"
if ! mount -t tmpfs weft-package-test "$fs" 2>"$work/mount.err" || ! mkdir "$fs/upper" \
  "$fs/work" "$root" || ! mount -t overlay weft-package-test \
  -o "lowerdir=/,upperdir=$fs/upper,workdir=$fs/work" "$root" 2>>"$work/mount.err"; then
  echo "SKIP: cannot mount an overlay over /: $(cat "$work/mount.err")"; exit 77
fi

# ---- Install (maintainer scripts run chrooted in $root).
if dpkg --root="$root" -i "$deb" >"$work/dpkg.out" 2>&1; then ok "dpkg -i into the throwaway root"
else echo "FAIL: dpkg -i: $(cat "$work/dpkg.out")"; exit 1; fi
grep -q '^weft:' "$root/etc/passwd" && ok "postinst made the weft user in the chroot" ||
  bad "no weft user in the chroot's /etc/passwd"
grep -q '^weft:' /etc/passwd && bad "the host's /etc/passwd got a weft user"
for dir in /var/lib/weft /var/log/weft; do
  owner=$(chroot "$root" stat -c %U:%G "$dir" 2>&1)
  [[ "$owner" == weft:weft ]] && ok "$dir owned by weft:weft" || bad "$dir: $owner"
done
# Secrets at rest: nobody else lists the state or reads the logs (docs/security.md).
modes="$(chroot "$root" stat -c %a /var/lib/weft) $(chroot "$root" stat -c %a /var/log/weft)"
[[ "$modes" == "711 750" ]] && ok "/var/lib/weft 0711, /var/log/weft 0750" ||
  bad "/var/lib/weft and /var/log/weft modes: $modes (want 711 750)"
if dpkg --root="$root" -i "$deb" >"$work/dpkg2.out" 2>&1 &&
  [[ $(grep -c '^weft:' "$root/etc/passwd") -eq 1 ]]; then
  ok "reinstalled: postinst idempotent, one weft user"
else
  bad "reinstall: $(cat "$work/dpkg2.out"); $(grep -c '^weft:' "$root/etc/passwd") weft users"
fi

# ---- The units.
units=(weft-rm weft-nm weft-router weft-gpg)
for u in "${units[@]}"; do
  f=$root/lib/systemd/system/$u.service
  sub=${u#weft-}
  grep -qx "ExecStart=/usr/bin/weft $sub --config /etc/weft/weft.yaml" "$f" &&
    grep -qx Type=simple "$f" && grep -qx Restart=on-failure "$f" || bad "$u.service: $(cat "$f")"
  want=weft
  [[ $u == weft-nm ]] && want=root
  grep -qx "User=$want" "$f" && ok "$u.service runs weft $sub as $want" ||
    bad "$u.service: not User=$want"
  grep -qx "UMask=0077" "$f" || bad "$u.service: no UMask=0077"
done
if chroot "$root" sh -c 'command -v systemd-analyze' >/dev/null; then
  if chroot "$root" systemd-analyze verify "${units[@]/%/.service}" >"$work/verify.out" 2>&1
  then
    ok "systemd-analyze verify: the four units"
  else
    bad "systemd-analyze verify: $(cat "$work/verify.out")"
  fi
else
  echo "note: systemd-analyze not installed, units not verified"
fi

# ---- The installed files.
[[ "$("$weft" --version)" == "weft $version" ]] && ok "installed weft --version: weft $version" ||
  bad "installed weft --version: $("$weft" --version 2>&1)"
grep -q -- "--workload TEXT=swim:$root/usr/share/weft/data/traces/" <<<"$("$weft" sim --help)" &&
  ok "weft sim finds its default trace under /usr/share/weft" ||
  bad "weft sim's default trace: $("$weft" sim --help | grep -- --workload)"
for page in weft weft-rm weft-nm weft-router weft-gpg; do
  grep -q '^\.SH OPTIONS' <<<"$(zcat "$root/usr/share/man/man1/$page.1.gz")" ||
    bad "man page $page.1 has no OPTIONS"
done
grep -q 'work-root' <<<"$(man -l "$root/usr/share/man/man1/weft-nm.1.gz" 2>/dev/null)" &&
  ok "man pages render (weft-nm(1) lists --work-root)" || bad "man -l weft-nm.1.gz"
completion=$(bash -c 'source "$1"; COMP_WORDS=(weft app run-s); COMP_CWORD=2; _weft
  echo "${COMPREPLY[*]}"; COMP_WORDS=(weft nm --work-r); COMP_CWORD=2; _weft
  echo "${COMPREPLY[*]}"' _ "$root/usr/share/bash-completion/completions/weft" 2>&1)
[[ "$completion" == $'run-shell\n--work-root' ]] &&
  ok "bash completion: 'weft app run-s' -> run-shell, 'weft nm --work-r' -> --work-root" ||
  bad "bash completion: $completion"
# /etc/weft/weft.yaml: every key of a daemon's section is one of its flags.
unknown=()
section=""
while IFS= read -r line; do
  if [[ $line =~ ^([a-z]+):[[:space:]]*$ ]]; then section=${BASH_REMATCH[1]}
  elif [[ $line =~ ^\ \ ([a-z-]+): ]]; then
    key=${BASH_REMATCH[1]}
    # Whole help first: grep -q would close the pipe early, a SIGPIPE under pipefail.
    help=$("$weft" "$section" --help)
    grep -q -- "^  --$key " <<<"$help" || unknown+=("$section.$key")
  fi
done <"$root/etc/weft/weft.yaml"
[[ ${#unknown[@]} -eq 0 ]] && ok "weft.yaml: every key is a flag of its daemon" ||
  bad "weft.yaml keys that are no flag: ${unknown[*]}"

# ---- A one-node cluster from the installed binary.
dev_start --nodes 1 --rm-port 0 --http-port 0 --data-dir "$tmp/data" \
  --node-resources memory-mb=4096,vcores=4
ok "installed weft dev: RM at $rm_address"
dev_wait_nodes 1 && ok "1 node RUNNING" || bad "the node is not RUNNING"
if timeout 150 "$weft" app run-shell --num-containers 2 --command true --wait --timeout-s 120 \
  >"$tmp/shell.out" 2>"$tmp/shell.err" && grep -q 'FINISHED SUCCEEDED' "$tmp/shell.out"; then
  ok "installed weft app run-shell --num-containers 2 --command true --wait -> $(tail -1 "$tmp/shell.out")"
else
  bad "run-shell: $(cat "$tmp/shell.out" "$tmp/shell.err")"
fi
dev_cleanup
dev_pid=""

# ---- Remove, then purge.
if dpkg --root="$root" -r weft >"$work/rm.out" 2>&1; then
  [[ ! -e $weft && -f $root/etc/weft/weft.yaml && -d $root/var/lib/weft ]] &&
    grep -q '^weft:' "$root/etc/passwd" &&
    ok "dpkg -r: binary gone; conffile, /var/lib/weft and the weft user kept" ||
    bad "after dpkg -r: $(ls -d "$weft" "$root/etc/weft/weft.yaml" "$root/var/lib/weft" 2>&1)"
else
  bad "dpkg -r: $(cat "$work/rm.out")"
fi
if dpkg --root="$root" -P weft >"$work/purge.out" 2>&1; then
  [[ ! -e $root/etc/weft && ! -e $root/var/lib/weft && ! -e $root/var/log/weft ]] &&
    ok "dpkg -P: /etc/weft, /var/lib/weft and /var/log/weft gone" ||
    bad "after dpkg -P: $(ls -d "$root/etc/weft" "$root/var/lib/weft" "$root/var/log/weft" 2>&1)"
else
  bad "dpkg -P: $(cat "$work/purge.out")"
fi

# ---- The host saw none of it.
if grep -q '^weft:' /etc/passwd || { [[ $host_had_weft -eq 0 ]] && [[ -e /usr/bin/weft ]]; } ||
  dpkg-query -W -f='${Status}' weft 2>/dev/null | grep -q installed; then
  bad "the host changed: weft user, /usr/bin/weft or a dpkg record of weft"
else
  ok "the host is untouched"
fi

[[ $fail -eq 0 ]] && echo "PASS" || echo "FAILED"
exit $fail
