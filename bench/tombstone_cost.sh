#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Redis memory of what tombstone_ttl and max_record_body add: a tombstone (beside its record)
# and a status-only record (in place of a record), as INFO memory used_memory deltas over
# RECORDS new keys written through the gateway into an empty private redis-server, plus
# MEMORY USAGE and STRLEN of one sample of each. Needs build/bin/{idemgate,bench-client,
# idemgate-test-upstream} (ninja -C build idemgate bench-client idemgate-test-upstream).
#   bash bench/tombstone_cost.sh            # RECORDS=20000
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
RECORDS=${RECORDS:-20000}
# shellcheck source=lib/scratch.sh
source "$root/bench/lib/scratch.sh" # $work, $pids, free_port
scratch_init idemgate-tombstone-cost
wait_line() { # file pattern
    for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; exit 1
}

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)
wait_line "$work/redis.log" 'Ready to accept connections'
"$bin/idemgate-test-upstream" --port 0 >"$work/upstream.log" 2>&1 &
pids+=($!)
wait_line "$work/upstream.log" listening
upstream_port=$(sed -nE 's/^listening 127\.0\.0\.1:([0-9]+).*/\1/p' "$work/upstream.log" | head -1)

# $1 name, $2 limits.max_record_body: routes /plain/ (no tombstone) and /tomb/ (tombstone_ttl 30d).
start_gateway() {
    local port admin
    port=$(free_port) admin=$(free_port)
    cat >"$work/$1.yaml" <<YAML
listen: "127.0.0.1:$port"
admin_listen: "127.0.0.1:$admin"
threads: 2
access_log: false
store:
  type: redis
  redis: { address: "127.0.0.1:$redis_port" }
upstreams:
  orders: { address: "127.0.0.1:$upstream_port" }
limits: { max_record_body: $2 }
routes:
  - path_prefix: "/plain/"
    upstream: orders
    idempotency: { methods: [POST], record_ttl: 1h }
  - path_prefix: "/tomb/"
    upstream: orders
    idempotency: { methods: [POST], record_ttl: 1h, tombstone_ttl: 30d }
YAML
    "$bin/idemgate" --config "$work/$1.yaml" >"$work/$1.log" 2>&1 &
    pids+=($!)
    wait_line "$work/$1.log" listening
    echo "$port"
}
rcli=(redis-cli -p "$redis_port")
used_memory() { "${rcli[@]}" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}'; }
# $1 label, $2 gateway port, $3 path, $4 key pattern of the sample: prints one result line.
measure() {
    "${rcli[@]}" FLUSHALL SYNC >/dev/null
    local k0 m0 k1 m1 sample
    k0=$("${rcli[@]}" DBSIZE | tr -d '\r') m0=$(used_memory)
    "$bin/bench-client" fill --port "$2" --path "$3" --prefix "$1" --keys "$RECORDS" --connections 8 >/dev/null
    k1=$("${rcli[@]}" DBSIZE | tr -d '\r') m1=$(used_memory)
    sample=$("${rcli[@]}" --scan --pattern "$4" | head -1) || true
    printf '%-34s keys %6d  used_memory/record %7.1f B  sample STRLEN %5s  MEMORY USAGE %5s\n' "$1" \
        $((k1 - k0)) "$(awk -v a="$m0" -v b="$m1" -v n="$RECORDS" 'BEGIN { print (b - a) / n }')" \
        "$("${rcli[@]}" STRLEN "$sample" | tr -d '\r')" "$("${rcli[@]}" MEMORY USAGE "$sample" SAMPLES 0 | tr -d '\r')"
}
echo "Redis $(redis-server --version | sed -E 's/.*v=([^ ]+).*malloc=([^ ]+).*/\1, \2/'), $RECORDS keys each"
gw=$(start_gateway normal 8MiB)
measure record "$gw" /plain/orders 'idemgate:*'
measure record+tombstone "$gw" /tomb/orders 'idemgate:*:t'
small=$(start_gateway small 64B)
measure status-only "$small" /plain/orders 'idemgate:*'
