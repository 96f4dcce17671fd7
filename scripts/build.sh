#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds idemgate into build/ (binaries in build/bin/). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
build_type="${BUILD_TYPE:-Release}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "$@" >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}"
