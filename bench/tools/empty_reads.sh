#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# System calls per request of two gateway builds, counted by the kernel's tracepoints, with the
# reads that found nothing (recvfrom returning EAGAIN) apart: what "no read without readiness"
# saves (reads: recvfrom and recvmsg; empty: those returning EAGAIN). Each path runs for A, then B, ROUNDS times (interleaved), with a fresh gateway (one I/O
# thread) and a fresh redis-server per run, one keep-alive connection from bench-client sending
# REQUESTS requests one after the other (closed loop: every wait for the next request, for the
# upstream's answer and for Redis's reply is a real wait, the case where an eager read finds
# nothing).
#
#   bench/tools/empty_reads.sh A/bin/idemgate B/bin/idemgate
#
# Paths: proxy (gateway-proxy.yaml), redis_first (first executions over Redis), redis_replay
# (replays read from Redis), tier_replay (replays from the local tier). Environment: REQUESTS=2000
# WARMUP=200 ROUNDS=2 PATHS="proxy redis_first redis_replay tier_replay"
# BENCH_CLIENT=(A's directory)/bench-client. Needs perf and the syscall tracepoints (root), nginx,
# redis-server. Prints a table; writes nothing.
set -euo pipefail
[[ $# -eq 2 ]] || { sed -n '3,/^set /p' "$0" | grep '^#'; exit 2; }
a_bin=$1 b_bin=$2
REQUESTS=${REQUESTS:-2000} WARMUP=${WARMUP:-200} ROUNDS=${ROUNDS:-2}
PATHS=${PATHS:-proxy redis_first redis_replay tier_replay}
BENCH_CLIENT=${BENCH_CLIENT:-$(dirname "$a_bin")/bench-client}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/scratch.sh
source "$root/bench/lib/scratch.sh" # $work, $pids, free_port, start_upstream
scratch_init idemgate-empty-reads
tracing=/sys/kernel/tracing
[[ -d $tracing/events/syscalls ]] || tracing=/sys/kernel/debug/tracing
[[ -d $tracing/events/syscalls/sys_exit_recvfrom ]] && command -v perf >/dev/null ||
    { echo "needs perf and the syscall tracepoints (run as root)" >&2; exit 2; }
for tool in nginx redis-server curl "$BENCH_CLIENT"; do command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 2; }; done

upstream_port=$(free_port)
start_upstream "$upstream_port"

# run BIN PATH: prints "all recvfrom empty epoll_wait" per request for one fresh gateway.
run() {
    local bin=$1 path=$2 conf redis_port=0 redis_pid="" port admin pid counter i
    case $path in
    proxy) conf=gateway-proxy.yaml ;;
    redis_first | redis_replay) conf=gateway-redis.yaml ;;
    tier_replay) conf=gateway-redis-tier.yaml ;;
    *) echo "unknown path $path" >&2; exit 2 ;;
    esac
    redis_port=$(free_port)
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$work/redis.log" 2>&1 &
    redis_pid=$!
    port=$(free_port) admin=$(free_port)
    sed -e "s/@PORT@/$port/; s/@ADMIN_PORT@/$admin/; s/@THREADS@/1/" \
        -e "s/@REDIS_PORT@/$redis_port/; s/@UPSTREAM_PORT@/$upstream_port/" \
        "$root/bench/conf/$conf" >"$work/gateway.yaml"
    "$bin" --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
    pid=$!
    for ((i = 0; i < 200; i++)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin/readyz") = 200 ]] && break
        sleep 0.05
    done
    local fill=("$BENCH_CLIENT" fill --port "$port" --connections 1)
    case $path in
    redis_replay | tier_replay) # the records, then a replay of each (the tier fills), then the measured replays
        "${fill[@]}" --prefix m --keys "$REQUESTS" >/dev/null
        "${fill[@]}" --prefix m --keys "$REQUESTS" >/dev/null ;;
    *) "${fill[@]}" --prefix w --keys "$WARMUP" >/dev/null ;;
    esac
    perf stat -x, -o "$work/counts.csv" -e raw_syscalls:sys_enter,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg \
        -e syscalls:sys_exit_recvfrom --filter 'ret == -11' -e syscalls:sys_exit_recvmsg --filter 'ret == -11' \
        -e syscalls:sys_enter_epoll_wait -p "$pid" &
    counter=$!
    sleep 0.3
    "${fill[@]}" --prefix m --keys "$REQUESTS" >"$work/measured.json"
    kill -INT "$counter"
    wait "$counter" 2>/dev/null || true
    kill "$pid" "$redis_pid" 2>/dev/null || true
    wait "$pid" "$redis_pid" 2>/dev/null || true
    grep -q "\"requests\":$REQUESTS," "$work/measured.json" ||
        { echo "bench-client did not send $REQUESTS requests: $(cat "$work/measured.json")" >&2; exit 1; }
    awk -F, -v n="$REQUESTS" '$1 ~ /^[0-9]+$/ { c[$3] = $1 }
        END { printf "%.2f %.2f %.2f %.2f\n", c["raw_syscalls:sys_enter"] / n,
              (c["syscalls:sys_enter_recvfrom"] + c["syscalls:sys_enter_recvmsg"]) / n,
              (c["syscalls:sys_exit_recvfrom"] + c["syscalls:sys_exit_recvmsg"]) / n, c["syscalls:sys_enter_epoll_wait"] / n }' "$work/counts.csv"
}

echo "System calls per request (kernel tracepoints), REQUESTS=$REQUESTS over one connection, $ROUNDS rounds"
echo "A: $a_bin   B: $b_bin"
echo
echo "| path | round | A all | A reads | A empty reads | A epoll_wait | B all | B reads | B empty reads | B epoll_wait |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
    for path in $PATHS; do
        read -r a1 a2 a3 a4 < <(run "$a_bin" "$path")
        read -r b1 b2 b3 b4 < <(run "$b_bin" "$path")
        echo "| $path | $round | $a1 | $a2 | $a3 | $a4 | $b1 | $b2 | $b3 | $b4 |"
    done
done
