#!/usr/bin/env bash
# Builds the Debian package weft_<version>_<arch>.deb and prints its path.
#   scripts/package.sh [--build-dir DIR] [--out-dir DIR]
# Without --build-dir: scripts/install-deps.sh, then a Release build of the weft binary (plain
# `cmake -DCMAKE_BUILD_TYPE=Release`, with ccache when present) in OUT/build. With --build-dir: the
# weft binary of an already built tree, as it is (tests/package_test.sh packages CI's build/).
# OUT (default build-pkg/) receives the .deb; its staging tree is OUT/root.
# The package: `cmake --install` of the tree under /usr, stripped (the binary, its bash
# completion, the simulator's shipped files), plus packaging/debian/ (systemd units, the
# default /etc/weft/weft.yaml as a conffile, maintainer scripts, copyright, README.Debian),
# man pages from `--help` by help2man, Depends from dpkg-shlibdeps. Needs dpkg-dev, help2man.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build_dir=""
out=build-pkg
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --out-dir) out=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps help2man cmake; do
  command -v "$tool" >/dev/null ||
    { echo "package.sh: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
umask 022
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [[ -z "$build_dir" ]]; then
  scripts/install-deps.sh >&2  # stdout is the .deb's path alone
  build_dir=$out/build
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$src" -B "$build_dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
  cmake --build "$build_dir" --target weft -j "${WEFT_PACKAGE_JOBS:-2}" >&2
fi
build_dir=$(cd "$build_dir" && pwd)
[[ -x "$build_dir/bin/weft" ]] ||
  { echo "package.sh: $build_dir/bin/weft is not built" >&2; exit 1; }

# The version is the CMake project's; the binary must say the same.
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
[[ -n "$version" ]] || { echo "package.sh: no CMAKE_PROJECT_VERSION in $build_dir" >&2; exit 1; }
said=$("$build_dir/bin/weft" --version)
[[ "$said" == "weft $version" ]] ||
  { echo "package.sh: weft --version says '$said', CMake says $version" >&2; exit 1; }
arch=$(dpkg --print-architecture)
deb=$out/weft_${version}_${arch}.deb

root=$out/root
rm -rf "$root"
DESTDIR=$root cmake --install "$build_dir" --prefix /usr --strip >/dev/null
[[ -x $root/usr/bin/weft ]] || { echo "package.sh: cmake --install made no usr/bin/weft" >&2; exit 1; }

pkg=$src/packaging/debian
install -D -m 0644 "$pkg/weft.yaml" "$root/etc/weft/weft.yaml"
for unit in weft-rm weft-nm weft-router weft-gpg; do
  install -D -m 0644 "$pkg/$unit.service" "$root/lib/systemd/system/$unit.service"
done
doc=$root/usr/share/doc/weft
install -D -m 0644 "$pkg/copyright" "$doc/copyright"
install -D -m 0644 "$pkg/README.Debian" "$doc/README.Debian"
# A native package's changelog and the man pages, dated by the source's last commit.
date=$(git -C "$src" log -1 --format=%cD 2>/dev/null || date -R)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date -d "$date" +%s)}
printf 'weft (%s) unstable; urgency=medium\n\n  * Built from the Weft source tree by scripts/package.sh.\n\n -- Weft maintainers <maintainers@users.noreply.a-seed-f18e23f2.example>  %s\n' \
  "$version" "$date" | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# Man pages from --help: weft(1) and one per daemon, weft-rm(1) etc. A wrapper named after
# the page runs `weft SUBCOMMAND` with argv[0] "weft", so usage lines read "weft rm".
man=$root/usr/share/man/man1
mkdir -p "$man"
wrappers=$(mktemp -d)
trap 'rm -rf "$wrappers"' EXIT
manpage() {  # manpage NAME DESCRIPTION [SUBCOMMAND]
  local name=$1 what=$2 sub=${3:-}
  printf '#!/bin/bash\nexec -a weft "%s" %s "$@"\n' "$root/usr/bin/weft" "$sub" >"$wrappers/$name"
  chmod 0755 "$wrappers/$name"
  help2man --no-info --no-discard-stderr --version-string="$version" --section=1 \
    --source="Weft $version" --manual="Weft" --name="$what" "$wrappers/$name" >"$wrappers/$name.1"
  grep -q 'Print this help message' "$wrappers/$name.1" ||
    { echo "package.sh: help2man got no --help from weft $sub" >&2; exit 1; }
  gzip -9n -c "$wrappers/$name.1" >"$man/$name.1.gz"
  chmod 0644 "$man/$name.1.gz"
}
manpage weft "cluster resource manager in the style of Apache Hadoop YARN"
manpage weft-rm "run the Weft ResourceManager" rm
manpage weft-nm "run a Weft NodeManager" nm
manpage weft-router "run a Weft federation router" router
manpage weft-gpg "run the Weft federation's Global Policy Generator" gpg

# Control files.
mkdir -p "$root/DEBIAN"
for script in postinst prerm postrm; do
  install -m 0755 "$pkg/$script" "$root/DEBIAN/$script"
done
echo /etc/weft/weft.yaml >"$root/DEBIAN/conffiles"
chmod 0644 "$root/DEBIAN/conffiles"
# dpkg-shlibdeps reads debian/control of the directory it runs in.
mkdir -p "$wrappers/src/debian"
printf 'Source: weft\n\nPackage: weft\nArchitecture: any\n' >"$wrappers/src/debian/control"
shlibs=$(cd "$wrappers/src" && dpkg-shlibdeps -O -e"$root/usr/bin/weft" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[[ -n "$shlibs" ]] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# adduser: postinst makes the weft user. libpq5: weft opens libpq with dlopen when a store is
# on PostgreSQL (store/libpq.h), which dpkg-shlibdeps cannot see.
depends="adduser, libpq5, $shlibs"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@INSTALLED_SIZE@|$size|" \
  -e "s|@DEPENDS@|$depends|" "$pkg/control.in" >"$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum | grep -v ' etc/' >DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
