#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The failover drill of docs/guide/load-testing.md: idemgate-loadtest in open loop (mixed: half
# replays of warm keys, half new keys) against one gateway on Redis Sentinel (a primary, two
# replicas and three sentinels, all on 127.0.0.1 and free ports), and in the middle of the run:
#   DRILL=failover  the primary is killed (SIGKILL); the sentinels promote a replica
#   DRILL=reload    the gateway reloads its configuration (SIGHUP)
# Then it prints the series (a row per 250 ms) and reads it: the rows where answers stopped or
# failed (when, for how long), the statuses, and the keys executed twice (the tester's checks,
# the test upstream's own count and the gateway's counters of records a failover could lose).
#   CONSISTENCY=strict (min_replicas_ack 1) or async   RATE=600 (requests/s)   DURATION=10 (s)
#   AT=4 (s into the timed phase)   KEYS=1000   BUILD_DIR=build   KEEP_WORK=0
# Binaries: $BUILD_DIR/bin/{idemgate,idemgate-loadtest,idemgate-test-upstream}; redis-server and
# redis-cli from Debian's redis-server package.
set -euo pipefail
cd "$(dirname "$0")/../.."
drill=${DRILL:-failover}
consistency=${CONSISTENCY:-strict}
rate=${RATE:-600}
duration=${DURATION:-10}
at=${AT:-4}
keys=${KEYS:-1000}
bin="$(cd "${BUILD_DIR:-build}/bin" && pwd)"
case "$drill" in failover | reload) ;; *) echo "failover_drill: DRILL is failover or reload" >&2; exit 2 ;; esac
case "$consistency" in strict | async) ;; *) echo "failover_drill: CONSISTENCY is strict or async" >&2; exit 2 ;; esac
for b in idemgate idemgate-loadtest idemgate-test-upstream; do
  [[ -x "$bin/$b" ]] || { echo "failover_drill: $bin/$b missing (bash scripts/build.sh)" >&2; exit 2; }
done

work=$(mktemp -d -t idemgate-drill-XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ "${KEEP_WORK:-0}" == 1 ]] && echo "work dir kept: $work" || rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # $1 what, $2 seconds, then the command that must succeed
  local what=$1 limit=$2 i
  shift 2
  for ((i = 0; i < limit * 20; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "failover_drill: gave up waiting for $what" >&2
  exit 1
}

# Redis: a primary, two replicas (min_replicas_ack 1 with one to spare), three sentinels.
primary=$(free_port)
redis_ports=("$primary" "$(free_port)" "$(free_port)")
for i in 0 1 2; do
  port=${redis_ports[$i]}
  mkdir -p "$work/redis-$port"
  args=(--port "$port" --bind 127.0.0.1 --dir "$work/redis-$port" --save "" --appendonly no
    --repl-diskless-sync yes --repl-diskless-sync-delay 0)
  ((i > 0)) && args+=(--replicaof 127.0.0.1 "$primary")
  redis-server "${args[@]}" >"$work/redis-$port.log" 2>&1 &
  pids+=($!)
  [[ $i == 0 ]] && primary_pid=$!
done
for port in "${redis_ports[@]}"; do wait_for "redis on $port" 10 redis-cli -p "$port" ping; done
wait_for "two replicas in sync" 20 bash -c "redis-cli -p $primary info replication | grep -c 'state=online' | grep -qx 2"
sentinels=()
for i in 0 1 2; do
  port=$(free_port)
  sentinels+=("$port")
  cat >"$work/sentinel-$port.conf" <<EOF
port $port
bind 127.0.0.1
dir $work
sentinel monitor mymaster 127.0.0.1 $primary 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 4000
EOF
  redis-server "$work/sentinel-$port.conf" --sentinel >"$work/sentinel-$port.log" 2>&1 &
  pids+=($!)
done
for port in "${sentinels[@]}"; do
  wait_for "sentinel $port to see both replicas and the other sentinels" 20 bash -c \
    "redis-cli -p $port sentinel master mymaster | tr '\n' ' ' | grep -q 'num-slaves 2 .*num-other-sentinels 2'"
done

# The test upstream (counts its executions: GET /__count) and the gateway.
up_port=$(free_port)
"$bin/idemgate-test-upstream" --port "$up_port" >"$work/upstream.log" 2>&1 &
pids+=($!)
wait_for "the test upstream" 10 curl -fsS "http://127.0.0.1:$up_port/__count"
gw_port=$(free_port)
admin_port=$(free_port)
strict=""
[[ "$consistency" == strict ]] && strict=$'\n    consistency: strict\n    min_replicas_ack: 1'
cat >"$work/idemgate.yaml" <<EOF
listen: "127.0.0.1:$gw_port"
admin_listen: "127.0.0.1:$admin_port"
threads: 2
access_log: false
store:
  type: redis
  redis:
    mode: sentinel
    nodes: ["127.0.0.1:${sentinels[0]}", "127.0.0.1:${sentinels[1]}", "127.0.0.1:${sentinels[2]}"]
    sentinel: { master_name: mymaster }$strict
upstreams:
  orders:
    address: "127.0.0.1:$up_port"
routes:
  - path_prefix: "/api/"
    upstream: orders
    idempotency:
      methods: [POST]
  - path_prefix: "/plain/"
    upstream: orders
EOF
"$bin/idemgate" --config "$work/idemgate.yaml" >"$work/idemgate.log" 2>&1 &
gw_pid=$!
pids+=($gw_pid)
wait_for "the gateway's /readyz" 20 curl -fsS "http://127.0.0.1:$admin_port/readyz"

echo "drill: $drill, consistency $consistency, $rate requests/s for ${duration}s, the $drill ${at}s in"
echo "redis: primary $primary, replicas ${redis_ports[1]} ${redis_ports[2]}; sentinels ${sentinels[*]}; gateway $gw_port"
load=("$bin/idemgate-loadtest" "http://127.0.0.1:$gw_port/api/orders" --mode mixed:50 --keys "$keys" -c 32
  --rate "$rate" -d "${duration}s" --interval 250ms --series "$work/series.ndjson"
  --body '{"order":"{key}"}' --timeout 5s --metrics "http://127.0.0.1:$admin_port/metrics" --json)
echo "load: ${load[*]}"
"${load[@]}" >"$work/summary.json" 2>"$work/loadtest.err" &
tester=$!
# The timed phase has begun once its first row is written; the drill comes AT seconds later.
wait_for "the series' first row" 60 test -s "$work/series.ndjson"
sleep "$at"
if [[ "$drill" == failover ]]; then
  kill -KILL "$primary_pid"
  echo "drill: primary $primary killed at $(date +%T.%N | cut -c1-12)"
else
  sed -i 's|path_prefix: "/plain/"|path_prefix: "/fresh/"|' "$work/idemgate.yaml"
  kill -HUP "$gw_pid"
  echo "drill: SIGHUP sent at $(date +%T.%N | cut -c1-12)"
fi
tester_rc=0
wait "$tester" || tester_rc=$?
executions=$(curl -fsS "http://127.0.0.1:$up_port/__count")
curl -fsS "http://127.0.0.1:$admin_port/metrics" >"$work/metrics.txt"

python3 - "$work" "$tester_rc" "$executions" "$drill" "$at" <<'PY'
import json, sys
work, tester_rc, drill, at = sys.argv[1], int(sys.argv[2]), sys.argv[4], float(sys.argv[5])
upstream_count = json.loads(sys.argv[3])["executions"]
rows = [json.loads(l) for l in open(f"{work}/series.ndjson") if l.strip()]
summary = json.loads(open(f"{work}/summary.json").read() or "{}")
metrics = {}
for line in open(f"{work}/metrics.txt"):
    if line and not line.startswith("#"):
        name, _, value = line.rpartition(" ")
        metrics[name] = float(value)
print("\n   t_s  answers    2xx    4xx    5xx  errors  p99_ms")
for r in rows:
    print(f"{r['t_s']:6.2f} {r['answers']:8d} {r['2xx']:6d} {r['4xx']:6d} {r['5xx']:6d} {r['errors']:7d} {r['p99_us']/1000:7.1f}")
bad = [r for r in rows if r["answers"] == 0 or r["5xx"] or r["errors"] or r["4xx"]]
print()
if bad:
    first, last = bad[0], bad[-1]
    start = first["t_s"] - first["interval_s"]
    print(f"answers stopped or failed from t={start:.2f}s to t={last['t_s']:.2f}s "
          f"({last['t_s'] - start:.2f}s, {len(bad)} of {len(rows)} rows); the {drill} came at t~{at:.0f}s")
else:
    print(f"every row answered, none failed: the {drill} at t~{at:.0f}s left no trace but latency")
checks = summary.get("checks", {})
status = summary.get("status", {})
execs = summary.get("executions", {})
gw = execs.get("gateway", {})
print(f"answers {summary.get('answers')}, statuses {json.dumps(status)}, errors {json.dumps(summary.get('errors'))}")
print(f"keys executed more than once (the tester): {checks.get('keys_executed_more_than_once')}; replays "
      f"unmarked {checks.get('replays_unmarked')}, not the first answer {checks.get('replays_mismatched')} "
      f"(a replay refused with 503 while the store failed over counts here)")
expected = execs.get("keys_executed") or 0
print(f"upstream executions {upstream_count} for {expected} keys that ran (the warm-up's and the new ones "
      f"answered 201; the gateway counted executed {gw.get('executed')}): "
      f"{max(0, upstream_count - expected)} executions beyond one per key")
for name in ("idemgate_records_unreplicated_total", "idemgate_reservations_unreplicated_total",
             "idemgate_records_lost_total", 'idemgate_completes_resent_total{result="acked"}',
             'idemgate_completes_resent_total{result="dropped"}'):
    if name in metrics:
        print(f"{name} {metrics[name]:.0f}")
print(f"the tester's verdict: exit {tester_rc}" + (" (checks failed: see above)" if tester_rc else ""))
PY
