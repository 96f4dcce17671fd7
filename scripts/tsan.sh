#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Opt-in ThreadSanitizer pass (not part of scripts/test.sh): builds the gateway and its gateway
# tests with -DIDEMGATE_SANITIZE=thread into build-tsan/ and runs the suites where work crosses
# threads: HTTP/2 streams (each stream's request runs in its own coroutine while the connection
# reads and writes, and a stream outlives its connection), answers passed on as they arrive
# (the lock keeper), and the local tier, over the memory store and over Redis. Any report fails
# the run (halt_on_error).
#   bash scripts/tsan.sh [doctest suite filter, default "http2*,big_answers*,local_tier*"]
# Environment: BUILD_DIR=build (its test upstream is reused: a fixture, not under test),
# TSAN_BUILD_DIR=build-tsan, JOBS=2.
set -euo pipefail
cd "$(dirname "$0")/.."
suites="${1:-http2*,big_answers*,local_tier*}"
main_dir="${BUILD_DIR:-build}"
tsan_dir="${TSAN_BUILD_DIR:-build-tsan}"
[[ -x "$main_dir/bin/idemgate-test-upstream" ]] || cmake --build "$main_dir" -j "${JOBS:-2}" --target idemgate-test-upstream

# -O1 -g1, as the ASan pass: the Asio/Beast templates compile far faster than at -O2 -g.
cmake -S . -B "$tsan_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDEMGATE_SANITIZE=thread \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DIDEMGATE_BUILD_BENCH=OFF \
  -DIDEMGATE_TEST_UPSTREAM_BIN="$(cd "$main_dir" && pwd)/bin/idemgate-test-upstream" >/dev/null
cmake --build "$tsan_dir" -j "${JOBS:-2}" --target idemgate gateway_tests
"$tsan_dir/bin/idemgate" --version

export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
for store in memory redis; do
  echo "tsan: gateway_tests -ts='$suites' over the $store store"
  IDEMGATE_TEST_STORE="$store" "$tsan_dir/bin/gateway_tests" -ts="$suites"
done
echo "tsan: no report"
