#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The load tester's own cost: CPU per request (user + system, from GNU time) of idemgate-loadtest
# and of h2load at the same fixed request rate against the same gateway (memory store, HTTP/2
# cleartext on, in front of the test upstream), over HTTP/1.1 and over h2c, interleaved ROUNDS
# times; prints one line per run, then the medians and idemgate-loadtest's ratio to h2load.
# Every request is a replay of a warm key for both tools (h2load sends one fixed key), so the
# gateway does the same work; what differs is what each tester does per answer (idemgate-loadtest
# also compares every replay with its key's first answer). With wrk installed (Debian's wrk:
# HTTP/1.1 only, closed loop only, no fixed rate), two closed-loop runs more, idemgate-loadtest
# without --rate beside wrk, each at its own top rate over the same connections: CPU per answered
# request again, with wrk's ratio.
#
#   bench/tools/loadtest_overhead.sh [ROUNDS]     # default 3
#
# Environment: BUILD_DIR=build (its bin/idemgate, bin/idemgate-loadtest,
#   bin/idemgate-test-upstream)  RATE=4000 (requests/s)  DURATION=5 (seconds)  CONNECTIONS=4
#   STREAMS=4 (h2c: streams per connection; HTTP/1.1 uses CONNECTIONS x STREAMS connections).
# Needs h2load (Debian's nghttp2-client) and GNU time. Writes nothing.
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
rate=${RATE:-4000} duration=${DURATION:-5} connections=${CONNECTIONS:-4} streams=${STREAMS:-4}
for b in idemgate idemgate-loadtest idemgate-test-upstream; do
    [[ -x $build/bin/$b ]] || { echo "no $build/bin/$b (BUILD_DIR?)" >&2; exit 2; }
done
command -v h2load >/dev/null || { echo "h2load is missing (apt-get install nghttp2-client)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "GNU time is missing (apt-get install time)" >&2; exit 2; }
have_wrk=0
if command -v wrk >/dev/null; then have_wrk=1; else echo "# wrk is not installed (apt-get install wrk): its closed-loop rows are left out" >&2; fi
# shellcheck source=../lib/scratch.sh
source "$root/bench/lib/scratch.sh" # $work, $pids, free_port
scratch_init idemgate-loadtest-overhead
upstream_port=$(free_port) gateway_port=$(free_port) admin_port=$(free_port)
"$build/bin/idemgate-test-upstream" --port "$upstream_port" >"$work/upstream.log" 2>&1 & pids+=($!)
cat >"$work/gateway.yaml" <<EOF
listen: "127.0.0.1:$gateway_port"
admin_listen: "127.0.0.1:$admin_port"
threads: 1
access_log: false
http2:
  cleartext: true
store:
  type: memory
upstreams:
  orders:
    address: "127.0.0.1:$upstream_port"
routes:
  - path_prefix: "/api/"
    upstream: orders
    idempotency:
      methods: [POST]
EOF
"$build/bin/idemgate" --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do
    curl -fs -o /dev/null "http://127.0.0.1:$admin_port/readyz" && break
    sleep 0.05
done
url="http://127.0.0.1:$gateway_port/api/orders"
body='{"order":1}'
printf '%s' "$body" >"$work/body"
# h2load's one key, executed once before the runs: every request it sends is then a replay.
curl -fs -o /dev/null -X POST -H 'Idempotency-Key: overhead-1' -d "$body" "$url"
lanes=$((connections * streams))
cat >"$work/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Idempotency-Key"] = "overhead-1"
EOF

# cpu_us ANSWERS -- COMMAND...: runs COMMAND under GNU time; prints "<answers> <cpu us/request>",
# ANSWERS being a command that reads the run's output on stdin and prints its answer count.
measure() {
    local count=$1
    shift 2
    /usr/bin/time -f '%U %S' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || true
    local answers
    answers=$($count <"$work/out")
    read -r user sys <"$work/time"
    python3 -c "import sys; a=int(sys.argv[1]); print(a, round((float(sys.argv[2])+float(sys.argv[3]))*1e6/max(a,1), 2))" \
        "$answers" "$user" "$sys"
}
loadtest_answers() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["answers"] if d["ok"] else 0)'; }
h2load_answers() { sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p'; }
wrk_answers() { sed -n 's/^ *\([0-9]*\) requests in .*/\1/p'; }

run_one() {
    case $1 in
    loadtest-h1) measure loadtest_answers -- "$build/bin/idemgate-loadtest" "$url" -c "$lanes" -t 1 -R "$rate" \
        -d "${duration}s" --keys 100 --body "$body" --json ;;
    h2load-h1) measure h2load_answers -- h2load --h1 -c "$lanes" -m 1 -t 1 --rps "$((rate / lanes))" \
        -D "$duration" -d "$work/body" -H 'Idempotency-Key: overhead-1' "$url" ;;
    loadtest-h2c) measure loadtest_answers -- "$build/bin/idemgate-loadtest" "$url" --http2 -c "$connections" \
        --streams "$streams" -t 1 -R "$rate" -d "${duration}s" --keys 100 --body "$body" --json ;;
    h2load-h2c) measure h2load_answers -- h2load -c "$connections" -m "$streams" -t 1 \
        --rps "$((rate / connections))" -D "$duration" -d "$work/body" -H 'Idempotency-Key: overhead-1' "$url" ;;
    loadtest-h1-closed) measure loadtest_answers -- "$build/bin/idemgate-loadtest" "$url" -c "$lanes" -t 1 \
        -d "${duration}s" --keys 100 --body "$body" --json ;;
    wrk-h1-closed) measure wrk_answers -- wrk -c "$lanes" -t 1 -d "${duration}s" -s "$work/post.lua" "$url" ;;
    esac
}

tools=(loadtest-h1 h2load-h1 loadtest-h2c h2load-h2c)
((have_wrk)) && tools+=(loadtest-h1-closed wrk-h1-closed)
echo "# $rate req/s for ${duration}s, one client thread; h2c: $connections connections x $streams streams," \
    "HTTP/1.1: $lanes connections; CPU us per answered request"
for round in $(seq "$rounds"); do
    for tool in "${tools[@]}"; do
        read -r answers cpu < <(run_one "$tool")
        echo "$round $tool answers=$answers cpu_us=$cpu"
        echo "$tool $cpu" >>"$work/results"
    done
done
python3 - "$work/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    tool, cpu = line.split()
    runs.setdefault(tool, []).append(float(cpu))
med = {t: statistics.median(v) for t, v in runs.items()}
for proto in ("h1", "h2c"):
    lt, h2 = med[f"loadtest-{proto}"], med[f"h2load-{proto}"]
    print(f"median {proto}: idemgate-loadtest {lt:.2f} us/request, h2load {h2:.2f} us/request, "
          f"ratio {lt / h2:.2f}")
if "wrk-h1-closed" in med:
    lt, wrk = med["loadtest-h1-closed"], med["wrk-h1-closed"]
    print(f"median h1 closed loop: idemgate-loadtest {lt:.2f} us/request, wrk {wrk:.2f} us/request, "
          f"ratio {lt / wrk:.2f}")
PY
