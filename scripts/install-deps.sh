#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian 12 package idemgate needs to build, test and run its demo.
# The one list of dependencies: README, .ci/run and the Dockerfile all call this script.
#   (none)      everything: building, every test, fuzzing, the container and package checks
#   --run       what the demo needs (scripts/demo.sh, its build and the quick start): compiling
#               idemgate and order-service without the tests, redis-server and curl; the image's
#               build stage installs this list, and scripts/container-check.sh runs the demo there
#   --compile   only what compiling idemgate, idemgate-loadtest and order-service needs (no test,
#               fuzz or container tools, no redis-server)
#   --runtime   only the shared libraries the binaries need (for the Docker runtime stage)
set -euo pipefail

compile_pkgs=(
  g++ cmake ninja-build pkg-config
  libboost1.81-dev      # Beast, Asio, JSON, URL (1.81: the default libboost-dev is 1.74)
  libssl-dev            # SHA-256 through EVP
  libyaml-cpp-dev       # configuration
  libhiredis-dev        # Redis protocol reader/formatter
  libsqlite3-dev        # sample order service persistence
  libjemalloc-dev       # the idemgate binary's allocator (CMakeLists.txt: IDEMGATE_JEMALLOC)
  libsystemd-dev        # sd_notify: readiness, reload, stop and watchdog for Type=notify units
  libnghttp2-dev        # HTTP/2 to clients (the h2 codec)
  zlib1g-dev            # gzip request bodies decoded for their fingerprint (fingerprint.decode)
)
build_pkgs=(
  "${compile_pkgs[@]}"
  git ca-certificates curl procps
  doctest-dev           # tests
  redis-server          # the shared store, started by tests and the demo
  openssl               # the CLI that makes the TLS tests' certificates (tests/support/src/tls.cpp)
  clang libclang-rt-14-dev  # libFuzzer + its ASan/UBSan runtimes (scripts/fuzz.sh, run by the tests)
  liburing-dev          # the io_uring build (-DIDEMGATE_IO_URING=ON), built and tested by the tests
  podman buildah mmdebstrap  # scripts/container-check.sh: builds and runs the image, no daemon or registry
  dpkg-dev file              # scripts/package.sh: the Debian package (dpkg-shlibdeps)
  pandoc                     # the man pages idemgate(1), idemgate-loadtest(1), made from docs/reference/cli.md
  prometheus                 # promtool: the alert rules' checks and unit tests (tests/deploy)
  kubernetes-client          # kubectl kustomize renders deploy/kubernetes (tests/deploy/check_kubernetes.py)
  lintian                    # Debian's own checker of the package (scripts/package-check.sh)
  python3 iptables iproute2  # tests/partition: network namespaces, DROP rules, the test's driver
  nghttp2-client python3-h2 python3-httpx  # HTTP/2 tests: h2load and nghttp, a raw-frame client, a second h2 client
  python3-jsonschema python3-yaml  # idemgate --contract checked against the OpenAPI 3.1 schema (tests/gateway/check_openapi.py)
  python3-prometheus-client  # the OpenMetrics reference parser, on /metrics' OpenMetrics answer (tests/gateway/check_openmetrics.py)
  chromium                   # a real browser (headless) loads idemgate-loadtest --report's page: its charts, no console error, the guide's screenshot (tests/loadtest/loadtest_report_test.cpp)
)
run_pkgs=(
  "${compile_pkgs[@]}"
  redis-server curl ca-certificates  # the demo's store, and the curl lines it shows
)
runtime_pkgs=(
  libssl3 libyaml-cpp0.7 libhiredis0.14 libsqlite3-0 libjemalloc2 libsystemd0 libnghttp2-14 zlib1g ca-certificates curl
)

case "${1:-}" in
  --runtime) pkgs=("${runtime_pkgs[@]}") ;;
  --compile) pkgs=("${compile_pkgs[@]}") ;;
  --run) pkgs=("${run_pkgs[@]}") ;;
  "") pkgs=("${build_pkgs[@]}") ;;
  *) echo "install-deps: unknown argument $1 (--run, --compile, --runtime or none)" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
  # A kubectl from another package (a cloud SDK's) owns /usr/bin/kubectl and renders kustomize
  # as well; Debian's kubernetes-client would conflict with it.
  [[ $p == kubernetes-client ]] && command -v kubectl >/dev/null && continue
  missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's prometheus package starts a system server where systemd runs (scraping, writing its
# database). The tests need only its binaries (promtool, and a prometheus they start themselves on
# a free port), so a server this script installed is stopped and disabled again. (It no longer
# shares a port with the gateway's admin listener; it is stopped because nothing here uses it.)
if [[ " ${missing[*]} " == *" prometheus "* ]] && [[ -d /run/systemd/system ]]; then
  $SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
# Debian's redis-server package may start a system instance on 6379; idemgate's tests and demo
# never use it (they start their own on free ports), so leave it as the system configured it.
echo "install-deps: done"
