#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The structure check catches a wrong-way include in either spelling: for each planted include
# below, a copy of the tree with it added must fail the check, naming the file. A copy without
# any must pass. Run by ctest (test "structure_planted").
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
work="$(mktemp -d -t idemgate-structure-XXXXXX)"
trap 'rm -rf "$work"' EXIT
failures=0

fresh_copy() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree"
  (cd "$root" && tar cf - gateway common config store loadtest order_service tests/structure) |
    (cd "$work/tree" && tar xf -)
}

# plant FILE LINE: the check must fail and name FILE.
plant() {
  local file="$1" line="$2" out
  fresh_copy
  printf '%s\n' "$line" >>"$work/tree/$file"
  if out="$(bash "$work/tree/tests/structure/check_structure.sh" "$work/tree" 2>&1)"; then
    echo "structure_planted: FAILED: $file with '$line' passed the check"
    failures=$((failures + 1))
  elif ! grep -qF "$file" <<<"$out"; then
    echo "structure_planted: FAILED: $file with '$line' failed without naming the file:"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "structure_planted: caught $file: $line"
  fi
}

fresh_copy
bash "$work/tree/tests/structure/check_structure.sh" "$work/tree" >/dev/null ||
  { echo "structure_planted: FAILED: the unchanged copy does not pass"; exit 1; }

# A room's header including a room above it (quoted spelling).
plant gateway/src/core/exchange.hpp '#include "state/worker.hpp"'
# A room including a public header of a room above it (angle spelling).
plant gateway/src/upstream/upstream_pool.hpp '#include <idemgate/gateway/decision.hpp>'
# The message rules (level 0) reaching the idempotency room's public header.
plant gateway/src/http/http_rules.cpp '#include <idemgate/gateway/refusal.hpp>'
# A public header including the public header of a room above its own.
plant gateway/include/idemgate/gateway/metrics.hpp '#include <idemgate/gateway/decision.hpp>'
# A public header with no room.
plant gateway/include/idemgate/gateway/unmapped.hpp $'// SPDX-License-Identifier: Apache-2.0\n#pragma once'

((failures == 0)) || exit 1
echo "structure_planted: every planted include was caught"
