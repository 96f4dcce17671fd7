#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The gateway as a plain proxy (conf/gateway-proxy.yaml) against nginx's plain proxy, interleaved,
# each with THREADS threads/workers (default 2) in front of the same nginx upstream: CPU per request split into user
# space and the kernel (utime and stime from /proc, all threads or processes), and context
# switches per request (voluntary: the process waited; involuntary: it was preempted). The bench's
# server CPU per request is the sum of the two CPU columns; this tells which side a gap is on.
#
#   bench/tools/cpu_split.sh [ROUNDS]       # default 3; one line per run, then the medians
#
# Environment: BUILD_DIR=build (its bin/idemgate)  DURATION=5 (seconds per wrk run)  CONNECTIONS=64
#   THREADS=2 (gateway threads and nginx workers).
# Needs wrk and nginx (bench/run.sh installs them). Writes nothing.
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${BUILD_DIR:-$root/build}/bin/idemgate
duration=${DURATION:-5} connections=${CONNECTIONS:-64} threads=${THREADS:-2}
[[ -x $bin ]] || { echo "no gateway at $bin (BUILD_DIR?)" >&2; exit 2; }
# shellcheck source=../lib/scratch.sh
source "$root/bench/lib/scratch.sh" # $work, $pids, free_port, nginx_conf, start_nginx, start_upstream
scratch_init idemgate-cpu-split
upstream_port=$(free_port) proxy_port=$(free_port) gateway_port=$(free_port) admin_port=$(free_port)
# The bench's nginx proxy (conf/nginx-proxy.conf): keep-alive to the upstream, HTTP/1.1.
nginx_conf proxy "$threads" "upstream app { server 127.0.0.1:$upstream_port; keepalive 64; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$proxy_port;
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
start_upstream "$upstream_port"
start_nginx proxy
nginx_pid=$started_pid
# The proxy configuration names no store; the template's Redis port is filled but never dialled.
sed -e "s/@PORT@/$gateway_port/; s/@ADMIN_PORT@/$admin_port/; s/@THREADS@/$threads/" \
    -e "s/@UPSTREAM_PORT@/$upstream_port/; s/@REDIS_PORT@/$(free_port)/" \
    "$root/bench/conf/gateway-proxy.yaml" >"$work/gateway.yaml"
"$bin" --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 & pids+=($!)
gateway_pid=$!
for _ in $(seq 100); do
    curl -fs -o /dev/null "http://127.0.0.1:$admin_port/healthz" && break
    sleep 0.05
done
curl -fs -o /dev/null "http://127.0.0.1:$admin_port/healthz" || { cat "$work/gateway.log" >&2; exit 1; }
ticks=$(getconf CLK_TCK)

# counters PID...: utime stime voluntary involuntary, summed over the processes and their threads.
counters() {
    local pid task u=0 s=0 v=0 n=0 a b
    for pid in "$@"; do
        read -r a b < <(awk '{sub(/^.*\) /, ""); print $12, $13}' "/proc/$pid/stat")
        u=$((u + a)) s=$((s + b))
        for task in /proc/"$pid"/task/*; do
            read -r a b < <(awk '/^voluntary_ctxt_switches/ {v = $2} /^nonvoluntary_ctxt_switches/ {n = $2} END {print v, n}' "$task/status")
            v=$((v + a)) n=$((n + b))
        done
    done
    echo "$u $s $v $n"
}

# run NAME PORT PID...: one wrk run; prints "NAME req user_us sys_us voluntary involuntary" per request.
run() {
    local name=$1 port=$2 out requests u0 s0 v0 n0 u1 s1 v1 n1
    shift 2
    read -r u0 s0 v0 n0 < <(counters "$@")
    out=$(BENCH_PREFIX="split-$$-$RANDOM$RANDOM" wrk -t2 -c"$connections" -d"${duration}s" \
        -s "$root/bench/first_execution.lua" "http://127.0.0.1:$port/api/orders" 2>&1)
    read -r u1 s1 v1 n1 < <(counters "$@")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    awk -v name="$name" -v r="$requests" -v t="$ticks" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v v=$((v1 - v0)) -v n=$((n1 - n0)) \
        'BEGIN { printf "%s %d %.2f %.2f %.3f %.3f\n", name, r, u / t * 1e6 / r, s / t * 1e6 / r, v / r, n / r }'
}

lines=$work/runs.txt
for round in $(seq "$rounds"); do
    # shellcheck disable=SC2046 # the nginx master and one PID per worker
    for line in "$(run idemgate "$gateway_port" "$gateway_pid")" \
        "$(run nginx "$proxy_port" "$nginx_pid" $(pgrep -P "$nginx_pid"))"; do
        echo "$line" >>"$lines"
        read -r name requests user sys vol invol <<<"$line"
        printf 'round %d %-8s %7d requests  user %6.2f  kernel %6.2f µs/req  switches %.3f voluntary %.3f involuntary /req\n' \
            "$round" "$name" "$requests" "$user" "$sys" "$vol" "$invol"
    done
done
python3 - "$lines" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
med = {}
for name in ("idemgate", "nginx"):
    mine = [r for r in rows if r[0] == name]
    med[name] = [statistics.median(float(r[i]) for r in mine) for i in range(2, 6)]
    u, s, v, n = med[name]
    print(f"{name:8s} medians: user {u:.2f}  kernel {s:.2f}  total {u + s:.2f} µs/req  switches {v:.3f} + {n:.3f} /req")
(gu, gs, _, _), (nu, ns, _, _) = med["idemgate"], med["nginx"]
print(f"idemgate/nginx: user {gu / nu:.3f}  kernel {gs / ns:.3f}  total {(gu + gs) / (nu + ns):.3f}")
PY
