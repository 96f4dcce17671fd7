#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds idemgate into build/ (binaries in build/bin/): every target, the tests
# included (scripts/install-deps.sh installs what they need). Arguments go to cmake's configure
# step; after a `--`, the targets to build (default: all).
#   BUILD_DIR=build  BUILD_TYPE=Release  JOBS=2
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
build_type="${BUILD_TYPE:-Release}"
configure=()
targets=()
while (($#)); do
  if [[ "$1" == -- ]]; then
    shift
    targets=("$@")
    break
  fi
  configure+=("$1")
  shift
done
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${configure[@]}" >/dev/null
if ((${#targets[@]})); then
  cmake --build "$build_dir" -j "${JOBS:-2}" --target "${targets[@]}"
else
  cmake --build "$build_dir" -j "${JOBS:-2}"
fi
