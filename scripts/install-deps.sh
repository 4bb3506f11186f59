#!/usr/bin/env bash
# Installs every build and run-time dependency of Weft from Debian 12 packages.
# Idempotent: packages already present are left as they are. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config git ca-certificates
  # the linker CMake picks when present (WEFT_LLD): links in a fraction of GNU ld's time
  lld
  # libraries
  libabsl-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libsqlite3-dev libssl-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcpp-httplib-dev
  # /metrics: the Prometheus registry and text exposition
  prometheus-cpp-dev
  # `weft config import-yarn`: reading YARN's XML configuration
  libpugixml-dev
  # user authentication (MUNGE, as Slurm): the library and the munged daemon
  libmunge-dev munge
  # RM HA and its state store: the ZooKeeper C client and server (tests run their own on loopback)
  libzookeeper-mt-dev zookeeper
  # federation state store on PostgreSQL: libpq and the server (tests run their own instance)
  libpq-dev postgresql
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # plots and run-time tools
  python3 python3-matplotlib iproute2 iptables iperf3 procps
  # the security regression suite reads state stores as another user would (sqlite3)
  sqlite3
  # web UI and metrics tests: a headless browser, curl, promtool (from prometheus)
  chromium curl prometheus
  # the Debian package (scripts/package.sh, tests/package_test.sh): dpkg-shlibdeps, man pages
  # from --help, the package's checker
  dpkg-dev help2man lintian
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# The RM authenticates users through the host's munged (docs/security.md). The package makes
# /etc/munge/munge.key; where no init system started the daemon (a container, a chroot), its
# init script starts it as the munge user.
if ! munge -n >/dev/null 2>&1; then
  echo "install-deps: starting munged"
  $SUDO /etc/init.d/munge start >/dev/null || $SUDO service munge start >/dev/null
  munge -n >/dev/null || { echo "install-deps: munged does not answer" >&2; exit 1; }
fi
