#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the README's first command as its users see it (scripts/demo.sh, without installing or
# building: the binaries of this build) and checks that each step shows what it says it shows.
#   check_demo.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
out=$(BUILD_DIR="$2" bash "$source_dir/scripts/demo.sh" --no-build --no-wait 2>&1) || {
  echo "$out"
  echo "check_demo: demo.sh failed"
  exit 1
}
missing=0
expect() {
  if ! grep -qE -- "$1" <<<"$out"; then
    echo "check_demo: the demo's output lacks: $1 ($2)"
    missing=1
  fi
}
expect '^Idempotent-Replayed: true' "step 3: the retry replayed"
expect '"result":"already_paid"' "steps 4-5: the domain guard"
expect '"outcome":"duplicate"' "step 7: the inbox skips a redelivery"
expect '"payments":1' "step 8: one payment"
expect '^HTTP/1.1 409 Conflict' "step 9: the key reused with another body"
expect 'problem:idempotency-key-reused|problems/idempotency-key-reused' "step 9: its problem type"
expect 'problem:request-in-flight|problems/request-in-flight' "step 10: a retry while the first attempt runs"
expect 'the first attempt then answered: .*already_paid' "step 10: the first attempt finished"
expect '"state":"completed"' "step 11: the admin API's record of K1"
expect '^idemgate_requests_total\{outcome="mismatch"\} 1$' "step 12: the metrics count the refusal"
expect '^idemgate_requests_total\{outcome="conflict"\} 1$' "step 12: and the retry in flight"
if ((missing)); then
  echo "$out"
  exit 1
fi
echo "check_demo: every step showed what it says"
