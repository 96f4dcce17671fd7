#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two gateway builds side by side, interleaved (A B A B ...), on first executions over Redis
# (conf/gateway-redis.yaml) and plain proxying (conf/gateway-proxy.yaml): req/s from wrk and the
# gateway's CPU per request from /proc, each build in turn against the same nginx upstream and
# the same redis-server. Ratios to nginx taken an hour apart cannot tell a change from the
# machine's drift (10-35 % here); pairs of runs a few seconds apart can.
#
#   bench/tools/ab_builds.sh A/bin/idemgate B/bin/idemgate [ROUNDS]
#
# Environment: DURATION=4 (seconds per wrk run)  CONNECTIONS=64  THREADS=2 (gateway threads).
# SYSCALLS=1 also counts the gateway's system calls per request during each run, from the
# kernel's tracepoints (`perf stat -e raw_syscalls:sys_enter,...`: counted in the kernel, so the
# gateway is not slowed as under strace); needs perf and root. The tracepoints still add a little
# to every system call, which can flatter a build that makes fewer: compare CPU from runs without.
# Needs wrk, nginx and redis-server (bench/run.sh installs them). Prints one line per run and the
# median A/B ratios; writes nothing.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '3,/^set /p' "$0" | grep '^#'; exit 2; }
a_bin=$1 b_bin=$2 rounds=${3:-4}
duration=${DURATION:-4} connections=${CONNECTIONS:-64} threads=${THREADS:-2}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/scratch.sh
source "$root/bench/lib/scratch.sh" # $work, $pids, free_port, start_upstream
scratch_init idemgate-ab
# shellcheck source=../lib/syscalls.sh
source "$root/bench/lib/syscalls.sh"
if [[ -n ${SYSCALLS:-} ]]; then
    pick_syscall_method
    [[ $syscall_method = perf ]] || { echo "SYSCALLS=1 needs perf and the syscall tracepoints (as root)" >&2; exit 2; }
fi

upstream_port=$(free_port)
start_upstream "$upstream_port"
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no > "$work/redis.log" 2>&1 & pids+=($!)
sleep 0.5
ticks=$(getconf CLK_TCK)

# One run: prints "<req/s> <gateway CPU µs per request>".
run() {
    local bin=$1 conf=$2 label=${3:-} gateway_port admin_port pid before after out requests rps
    gateway_port=$(free_port) admin_port=$(free_port)
    sed -e "s/@PORT@/$gateway_port/; s/@ADMIN_PORT@/$admin_port/; s/@THREADS@/$threads/" \
        -e "s/@REDIS_PORT@/$redis_port/; s/@UPSTREAM_PORT@/$upstream_port/" \
        "$root/bench/conf/$conf" > "$work/gateway.yaml"
    "$bin" --config "$work/gateway.yaml" > "$work/gateway.log" 2>&1 & pid=$!
    for _ in $(seq 100); do
        curl -fs -o /dev/null "http://127.0.0.1:$admin_port/healthz" && break
        sleep 0.05
    done
    local counter=""
    if [[ -n ${SYSCALLS:-} ]]; then
        perf stat -x, -o "$work/syscalls.csv" "${syscall_perf_args[@]}" -p "$pid" & counter=$!
        sleep 0.2
    fi
    before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    out=$(BENCH_PREFIX="ab-$$-$RANDOM$RANDOM" wrk -t2 -c"$connections" -d"${duration}s" \
          -s "$root/bench/first_execution.lua" "http://127.0.0.1:$gateway_port/api/orders" 2>&1)
    after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    if [[ -n $counter ]]; then kill -INT "$counter"; wait "$counter" 2>/dev/null || true; fi
    kill "$pid"; wait "$pid" 2>/dev/null || true
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    python3 -c "print('%.0f %.2f' % ($rps, ($after - $before) * 1e6 / $ticks / $requests))"
    if [[ -n $counter ]]; then
        # Per request: all of them (the largest count, so first), then the five most frequent
        # calls (the count includes the 0.2 s before wrk: the gateway is idle then).
        perf_syscall_counts "$work/syscalls.csv" | sort -rn | head -6 |
            awk -v n="$requests" -v label="$label" 'BEGIN { printf "  %s system calls per request: ", label }
                { printf "%s%s %.2f", sep, $2, $1 / n; sep = ", " } END { print "" }' >&2
    fi
}

declare -A ratios
for round in $(seq "$rounds"); do
    for scenario in first_execution proxy; do
        conf=gateway-redis.yaml
        [[ $scenario = proxy ]] && conf=gateway-proxy.yaml
        read -r a_rps a_cpu < <(run "$a_bin" "$conf" A)
        read -r b_rps b_cpu < <(run "$b_bin" "$conf" B)
        printf 'round %d %-15s A %6.0f req/s %6.2f µs/req   B %6.0f req/s %6.2f µs/req\n' \
            "$round" "$scenario" "$a_rps" "$a_cpu" "$b_rps" "$b_cpu"
        ratios[$scenario.rps]+="$(python3 -c "print($a_rps / $b_rps)") "
        ratios[$scenario.cpu]+="$(python3 -c "print($a_cpu / $b_cpu)") "
    done
done
for scenario in first_execution proxy; do
    python3 - "$scenario" ${ratios[$scenario.rps]} -- ${ratios[$scenario.cpu]} <<'PY'
import statistics, sys
name, rest = sys.argv[1], sys.argv[2:]
cut = rest.index("--")
rps, cpu = [float(x) for x in rest[:cut]], [float(x) for x in rest[cut + 1:]]
print(f"{name}: A/B req/s median {statistics.median(rps):.3f} ({min(rps):.3f}-{max(rps):.3f}), "
      f"CPU per request median {statistics.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f})")
PY
done
