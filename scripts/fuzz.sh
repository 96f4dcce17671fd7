#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets of tests/fuzz with clang + ASan/UBSan into build-fuzz/ and runs
# each for the given number of seconds (a small parser's target at most its cap), starting from
# the seeds in tests/fuzz/corpus/<target>/.
# New inputs go to build-fuzz/corpus/<target>/ (outside the tree), crashes to
# build-fuzz/artifacts/<target>/. Exits non-zero if any target crashed, leaked, hit a sanitizer
# report or timed out.
#   bash scripts/fuzz.sh [seconds-per-target, default 60]
#   bash scripts/fuzz.sh --build-only    (builds the targets, runs none: scripts/test.sh compiles
#                                         them while the main suite runs)
# FUZZ_TARGETS="fuzz_h2_input ...": only those targets (fuzz_h2_input only this way), none capped.
# Needs Debian's clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [[ "${1:-}" == --build-only ]]; then
  build_only=1
  shift
fi
seconds="${1:-60}"
build_dir="${BUILD_DIR:-build-fuzz}"
# fuzz_h2_input links the whole gateway (compiled with clang for it: about 15 minutes on 2
# cores), more than scripts/test.sh's time budget allows: it runs when named,
# FUZZ_TARGETS=fuzz_h2_input bash scripts/fuzz.sh 300.
targets=(fuzz_request_parse fuzz_record_decode fuzz_key_syntax fuzz_proxy_header)
# Seconds at most, for a target whose code is small enough that its coverage stops growing in
# a few seconds: the rest of the pass is better spent on the others.
declare -A cap=([fuzz_key_syntax]=10 [fuzz_proxy_header]=10)
if [[ -n "${FUZZ_TARGETS:-}" ]]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
  cap=()
fi

# Not Release: -DNDEBUG would switch off Boost's and Beast's own assertions.
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only" \
  -DIDEMGATE_FUZZ=ON -DIDEMGATE_SANITIZE=address -DIDEMGATE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target "${targets[@]}"
((build_only)) && exit 0

# UBSan only prints and goes on by default: make every report a crash libFuzzer keeps.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

failed=()
for t in "${targets[@]}"; do
  corpus="$build_dir/corpus/$t"
  artifacts="$build_dir/artifacts/$t"
  log="$build_dir/$t.log"
  mkdir -p "$corpus" "$artifacts"
  run_seconds="$seconds"
  if [[ -n "${cap[$t]:-}" ]] && ((cap[$t] < seconds)); then run_seconds="${cap[$t]}"; fi
  echo "fuzz: $t for ${run_seconds}s (log: $log)"
  rc=0
  "$build_dir/bin/$t" -max_total_time="$run_seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  echo "fuzz: $t: ${execs:-?} runs, ${rate:-?} exec/s, corpus $(find "$corpus" -type f | wc -l) files, exit $rc"
  if ((rc != 0)); then
    failed+=("$t")
    tail -n 60 "$log"
    ls -1 "$artifacts"/* 2>/dev/null | sed 's/^/fuzz: reproducer: /' || true
  fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzz: FAILED: ${failed[*]} (reproduce with $build_dir/bin/<target> <reproducer>)"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran (${seconds}s each, capped ones less) without a finding"
