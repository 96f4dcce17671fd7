#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, integration with real
# redis-server and the real binaries). This is the README's second command and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-2}" --timeout 600
