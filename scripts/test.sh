#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds, and runs every test (unit, integration with real
# redis-server and the real binaries), then the unit and gateway tests again under
# ASan+UBSan, then each libFuzzer target briefly, then the container check (the Dockerfile built
# with podman and its image run: scripts/container-check.sh), then the Debian package installed
# into a fresh Debian 12 root, run and purged (scripts/package-check.sh). This is the README's
# second command and .ci/run. SANITIZE=0 skips the sanitizer pass, FUZZ_SECONDS=0 the fuzzing,
# CONTAINER=0 the container check, PACKAGE=0 the package check (local iteration).
# Where the time goes (each step prints its seconds; docs/development.md, "CI time"): compiling is
# CPU work, the suites mostly wait on sockets, Redis and failovers. So the suites run three entries
# at a time (SUITE_JOBS=3), and the other compiles (the sanitizer build and the fuzz targets beside
# the main suite, the container image beside the sanitizer pass) run niced in the background:
# the tests' processes come first, the compiler takes the idle CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
started=$SECONDS
step_started=$SECONDS
# "test.sh: <what> after <since start> s (<this step> s)"
step() {
  echo "test.sh: $1 after $((SECONDS - started)) s ($((SECONDS - step_started)) s)"
  step_started=$SECONDS
}
suite_jobs="${SUITE_JOBS:-3}"
# A failed step stops the run: the background work (base images, side builds, container image)
# stops with it rather than compiling on after the script has exited.
kill_tree() { # process $1 and its descendants, children first
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
}
stop_background() {
  local pid
  for pid in $(jobs -p); do kill_tree "$pid"; done # the ones not waited for yet
}
trap stop_background EXIT
# Waits for background job $1, prints its log $2 (and removes it); exits naming $3 if it failed.
join_background() {
  local rc=0
  wait "$1" || rc=$?
  cat "$2"
  rm -f "$2"
  if ((rc != 0)); then
    echo "test.sh: $3 failed (exit $rc)"
    exit 1
  fi
}

base_pid=""
if [[ "${CONTAINER:-1}" != 0 ]]; then
  # The container check's base images (mmdebstrap: downloads and dpkg, little CPU) are made
  # while the compiler runs; the check itself comes last.
  base_log="$(mktemp -t idemgate-container-base-XXXXXX.log)"
  bash scripts/container-check.sh --base-only >"$base_log" 2>&1 &
  base_pid=$!
fi

# A unity build (IDEMGATE_UNITY, CMakeLists.txt): compiling is most of this script's CPU time,
# and batches of sources compile the shared Asio/Beast templates once per batch, not per file.
# The sanitizer build and the image's (scripts/demo.sh) are batched too; the default build
# (scripts/build.sh alone, what contributors run) compiles file by file.
bash scripts/build.sh -DIDEMGATE_TEST_BACKEND=ON -DIDEMGATE_UNITY=ON # package.sh may have turned the test backend off in build/
step "main build done"

asan_dir="${ASAN_BUILD_DIR:-build-asan}"
uring=OFF
if [[ "${SANITIZE:-1}" != 0 ]]; then
  # ASan+UBSan: the unit tests and the gateway tests (memory and Redis store), which drive the
  # real gateway binary built with the sanitizers. Any report aborts the process (and the test).
  # -O1 -g1 (line tables, enough for the sanitizers' stack traces): the Asio/Beast templates
  # compile far faster than at -O2 -g, which kept the whole run over its 25-minute budget.
  # io_uring (CI runs the gateway tests on both backends): the main build above is
  # epoll, this pass is io_uring where the kernel allows it (the probe from the main build asks;
  # a seccomp profile or kernel.io_uring_disabled refuses it, and then this pass is epoll too).
  if "${BUILD_DIR:-build}/bin/idemgate-io-probe"; then
    uring=ON
  else
    echo "test.sh: io_uring refused here; the sanitizer pass runs on epoll"
  fi
  # ASAN_IO_URING=OFF keeps this pass on epoll.
  [[ "${ASAN_IO_URING:-ON}" == OFF ]] && uring=OFF
  cmake -S . -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDEMGATE_SANITIZE=address \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DIDEMGATE_BUILD_BENCH=OFF \
    -DIDEMGATE_IO_URING="$uring" -DIDEMGATE_UNITY=ON \
    -DIDEMGATE_TEST_UPSTREAM_BIN="$(cd "${BUILD_DIR:-build}" && pwd)/bin/idemgate-test-upstream" >/dev/null
fi

# Compiling is CPU work; the main suite mostly waits (on sockets, on Redis, on clusters forming).
# So the sanitizer build and then the fuzz targets compile in the background while the main
# suite runs; their output is printed once the suite is done.
side_pid=""
side_log="$(mktemp -t idemgate-side-build-XXXXXX.log)"
if [[ "${SANITIZE:-1}" != 0 || "${FUZZ_SECONDS:-30}" != 0 ]]; then
  (
    set -e
    renice -n 10 -p $BASHPID >/dev/null # the compilers take what the suite leaves
    side_started=$SECONDS
    if [[ "${SANITIZE:-1}" != 0 ]]; then
      # The gateway suites drive the gateway binary over sockets: the main build's test programs
      # run against this build's sanitized gateway (IDEMGATE_TEST_GATEWAY), so only the product
      # and the in-process tests (unit, Redis TLS) are compiled a second time. The test upstream
      # is the main build's too (a fixture, not under test): see tests/support.
      cmake --build "$asan_dir" -j "${JOBS:-2}" --target unit_tests redis_tls_tests idemgate
      echo "test.sh: sanitizer build took $((SECONDS - side_started)) s"
    fi
    if [[ "${FUZZ_SECONDS:-30}" != 0 ]]; then
      bash scripts/fuzz.sh --build-only
      echo "test.sh: fuzz build done, $((SECONDS - side_started)) s after the side builds began"
    fi
  ) >"$side_log" 2>&1 &
  side_pid=$!
fi

suite_rc=0
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$suite_jobs" --timeout 600) || suite_rc=$?
step "main suite done"
side_rc=0
if [[ -n "$side_pid" ]]; then
  ((suite_rc == 0)) || kill_tree "$side_pid"
  wait "$side_pid" || side_rc=$?
  cat "$side_log"
fi
rm -f "$side_log"
((suite_rc == 0)) || exit "$suite_rc"
if ((side_rc != 0)); then
  echo "test.sh: the sanitizer or fuzz build failed (exit $side_rc)"
  exit 1
fi
step "side builds done"

# The container image compiles (in podman) while the sanitizer pass runs: niced, after the base
# images (made while the main build ran). Its checks run at the end (--run-only).
image_pid=""
if [[ -n "$base_pid" ]]; then
  join_background "$base_pid" "$base_log" "making the container base images"
  image_log="$(mktemp -t idemgate-container-image-XXXXXX.log)"
  nice -n 10 bash scripts/container-check.sh --build-only >"$image_log" 2>&1 &
  image_pid=$!
fi

if [[ "${SANITIZE:-1}" != 0 ]]; then
  "$asan_dir/bin/idemgate" --version
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  "$asan_dir/bin/unit_tests"
  # TLS to Redis: the OpenSSL stream's lifetime across reconnects is worth a sanitizer.
  "$asan_dir/bin/redis_tls_tests"
  # The gateway suites over the memory and the Redis store (labels store-memory and store-redis:
  # gateway.<suite> and gateway.<suite>.redis), against the sanitized gateway: any report aborts
  # the gateway, and the test that drove it fails.
  asan_gateway="$(cd "$asan_dir" && pwd)/bin/idemgate"
  io_backend=epoll
  [[ "$uring" == ON ]] && io_backend=io_uring
  (cd "${BUILD_DIR:-build}" && IDEMGATE_TEST_GATEWAY="$asan_gateway" IDEMGATE_TEST_GATEWAY_IO="$io_backend" \
    ctest --output-on-failure -j "$suite_jobs" --timeout 900 --no-tests=error -L '^(store-memory|store-redis)$')
  # TLS on both HTTP hops runs above, in gateway.tls and gateway.tls.redis (suite "tls"), and so
  # does HTTP/2 (gateway.http2 and gateway.http2.redis, suite "http2": the codec, its floods and
  # conformance cases, answers passed on over a stream). ThreadSanitizer is opt-in: scripts/tsan.sh.
  step "sanitizer pass done"
fi

if [[ "${FUZZ_SECONDS:-30}" != 0 && -f scripts/fuzz.sh ]]; then
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
  step "fuzzing done"
fi

if [[ "${PACKAGE:-1}" != 0 ]]; then
  # While the image still compiles: the package check is mostly dpkg and apt in a fresh root (the
  # container check's debian:bookworm-slim base, made at the start), little CPU.
  bash scripts/package-check.sh
  step "package check done"
fi

if [[ -n "$image_pid" ]]; then
  join_background "$image_pid" "$image_log" "building the container image"
  step "container image built"
  bash scripts/container-check.sh --run-only
  step "container check done"
fi
