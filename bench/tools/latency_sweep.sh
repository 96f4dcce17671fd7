#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Latency at fixed load: what idemgate adds at a user's request rate, beside nginx's plain proxy.
#
# First nginx proxy's capacity is measured (idemgate-loadtest closed loop, CONNECTIONS
# connections, DURATION seconds, the median of 3 runs). Then every target is loaded open loop
# (idemgate-loadtest --rate: latency counts from each request's intended send time, so a stall is
# not hidden) at 25, 50 and 75 % of that capacity, the targets in turn at each rate, ROUNDS times,
# each run on fresh processes:
#   nginx          nginx as a plain reverse proxy (bench/conf/nginx-proxy.conf, keep-alive upstream pool)
#   proxy          idemgate with no idempotency on the route (bench/conf/gateway-proxy.yaml)
#   first          idemgate, every request a new key, Redis store (gateway-redis.yaml)
#   redis_replay   idemgate, every request a replay read from Redis (gateway-redis.yaml)
#   tier_replay    idemgate, every request a replay from the local tier (gateway-redis-tier.yaml)
# all in front of the bench's nginx upstream (201 with a 33-byte JSON body, or BODY_BYTES), with
# POST bodies of REQUEST_BYTES. Prints one Markdown table (p50, p99, p99.9 per target and rate,
# the medians over rounds, and "added" = the target's minus nginx's at the same rate) and writes
# an SVG of p99 by rate when SVG=FILE is given.
#
#   bench/tools/latency_sweep.sh
#
# Layout: PIN=0 (default) leaves every process free on all CPUs. PIN=1 puts the server under test
# alone on CPU 1, with 1 thread (nginx: 1 worker); the load generator, the upstream and Redis
# share CPU 0. The same layout for every target; the table's heading says which. CLIENT_RT=1 runs
# the load generator under the real-time FIFO class (chrt -f 1): on a CPU it shares with the
# upstream and Redis, an ordinary client may wait for the scheduler's time slice before it reads an
# answer, and that wait counts as the server's latency. Off by default: in four trial runs it did
# not narrow the rounds' spread (docs/performance.md).
#
# Each round runs every target at a rate one after the other, so a slow minute of the machine
# falls on all of them; the table gives the medians over rounds and, per idemgate target, the
# median and range of its per-round p99 ratio to nginx's in the same round. SYSCALLS=1 (default,
# as root with perf and the syscall tracepoints) also counts the server's system calls per
# request at each fixed rate (perf stat on raw_syscalls:sys_enter, epoll_wait apart): at the same
# offered rate, unlike a closed-loop run whose rate differs per target.
# Environment: BUILD_DIR=build  ROUNDS=3  DURATION=10 (seconds per run)  CONNECTIONS=32
#   THREADS=2 (server threads without PIN; nginx workers the same)  LEVELS="25 50 75"
#   TARGETS="nginx proxy first redis_replay tier_replay"  REQUEST_BYTES=33  BODY_BYTES=33
#   CAPACITY=<req/s> (skips measuring nginx's capacity)  SVG=<file>  JSON=<file>  CLIENT_RT=0|1
#   SYSCALLS=0|1
# Needs nginx, redis-server, python3. Not a test: nothing here is asserted; the numbers are for
# docs/performance.md and bench/results, with the load average before and after and the steal time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
[[ $build = /* ]] || build=$root/$build
rounds=${ROUNDS:-3} duration=${DURATION:-10} connections=${CONNECTIONS:-32} threads=${THREADS:-2}
levels=${LEVELS:-25 50 75} targets=${TARGETS:-nginx proxy first redis_replay tier_replay}
request_bytes=${REQUEST_BYTES:-33} body_bytes=${BODY_BYTES:-33} pin=${PIN:-0}
client_rt=${CLIENT_RT:-0} count_syscalls=${SYSCALLS:-1}
loadtest=$build/bin/idemgate-loadtest
for b in idemgate idemgate-loadtest; do
    [[ -x $build/bin/$b ]] || { echo "no $build/bin/$b (BUILD_DIR?)" >&2; exit 2; }
done
for tool in nginx redis-server python3 curl taskset; do
    command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 2; }
done
# shellcheck source=../lib/scratch.sh
source "$root/bench/lib/scratch.sh" # $work, $pids, free_port, nginx_conf, start_nginx
scratch_init idemgate-latency-sweep

# Where each role runs: client and upstream (and Redis) on CPU 0, the server under test on CPU 1.
client_cpu=() server_cpu=() side_cpu=()
server_threads=$threads
if [[ $pin = 1 ]]; then
    (($(nproc) >= 2)) || { echo "PIN=1 needs 2 CPUs" >&2; exit 2; }
    client_cpu=(taskset -c 0) server_cpu=(taskset -c 1) side_cpu=(taskset -c 0) server_threads=1
fi
if [[ $client_rt = 1 ]]; then
    if ! { command -v chrt >/dev/null && chrt -f 1 true 2>/dev/null; }; then
        echo "CLIENT_RT=1 needs chrt and root" >&2
        exit 2
    fi
    client_cpu=(chrt -f 1 "${client_cpu[@]}")
fi
tracing=/sys/kernel/tracing
[[ -d $tracing/events/syscalls ]] || tracing=/sys/kernel/debug/tracing
if [[ $count_syscalls = 1 ]] && ! { command -v perf >/dev/null && [[ -d $tracing/events/syscalls ]] &&
    perf stat -e raw_syscalls:sys_enter -o /dev/null -- true >/dev/null 2>&1; }; then
    echo "# no perf or syscall tracepoints: system calls not counted" >&2
    count_syscalls=0
fi

# The upstream: 201 with a JSON body of body_bytes bytes.
upstream_body=$(python3 -c "import sys; n=int(sys.argv[1]); s='{\"id\":\"ord_1\",\"pad\":\"'; print(s + 'x' * max(0, n - len(s) - 2) + '\"}', end='')" "$body_bytes")
upstream_port=$(free_port)
nginx_conf upstream 1 "server { listen 127.0.0.1:$upstream_port;
    location / { default_type application/json; return 201 '$upstream_body'; } }"
"${side_cpu[@]}" nginx -c "$work/upstream.conf" -p "$work/upstream" & pids+=($!)
request_body=$(python3 -c "import sys; n=int(sys.argv[1]); s='{\"order\":\"{key}\",\"pad\":\"'; print(s + 'x' * max(0, n - len(s) - 2) + '\"}', end='')" "$request_bytes")
for _ in $(seq 100); do curl -fs -o /dev/null -X POST "http://127.0.0.1:$upstream_port/" && break; sleep 0.05; done

server_pid="" redis_pid=""
# start_target NAME: starts the server under test (and its Redis); sets $url and $server_pid.
start_target() {
    local name=$1 port conf
    port=$(free_port)
    url="http://127.0.0.1:$port/api/orders"
    if [[ $name = nginx ]]; then
        nginx_conf proxy "$server_threads" "upstream orders { server 127.0.0.1:$upstream_port; keepalive 64;
        keepalive_requests 1000000; }
        server { listen 127.0.0.1:$port backlog=4096;
          location / { proxy_pass http://orders; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
        "${server_cpu[@]}" nginx -c "$work/proxy.conf" -p "$work/proxy" &
        server_pid=$!
        for _ in $(seq 100); do curl -fs -o /dev/null -X POST "$url" && break; sleep 0.05; done
        return
    fi
    case $name in
    proxy) conf=gateway-proxy.yaml ;;
    first | redis_replay) conf=gateway-redis.yaml ;;
    tier_replay) conf=gateway-redis-tier.yaml ;;
    esac
    local redis_port admin_port
    redis_port=$(free_port) admin_port=$(free_port)
    "${side_cpu[@]}" redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
        >"$work/redis.log" 2>&1 &
    redis_pid=$!
    sed -e "s/@PORT@/$port/; s/@ADMIN_PORT@/$admin_port/; s/@THREADS@/$server_threads/" \
        -e "s/@REDIS_PORT@/$redis_port/; s/@UPSTREAM_PORT@/$upstream_port/" \
        "$root/bench/conf/$conf" >"$work/gateway.yaml"
    # A tier copy must outlive the run (the template's max_age is short).
    [[ $name = tier_replay ]] && sed -i -E 's/max_age: *[0-9]+s/max_age: 1h/' "$work/gateway.yaml"
    "${server_cpu[@]}" "$build/bin/idemgate" --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 200); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin_port/readyz") = 200 ]] && break
        sleep 0.05
    done
}
stop_target() {
    kill "$server_pid" ${redis_pid:+"$redis_pid"} 2>/dev/null || true
    wait "$server_pid" ${redis_pid:+"$redis_pid"} 2>/dev/null || true
    server_pid="" redis_pid=""
}

# load NAME RATE: one open-loop run against a fresh NAME; prints "p50 p99 p99.9 rps late calls
# epoll_waits" (µs, req/s, the client's late sends, the server's system calls and epoll_wait
# calls per answer, nan when not counted).
load() {
    local name=$1 rate=$2 mode=first counter=""
    case $name in redis_replay | tier_replay) mode=replay ;; esac
    start_target "$name"
    local args=("$url" -c "$connections" -t 1 --mode "$mode" --keys 2000 --body "$request_body" -d "${duration}s" --json)
    [[ $rate != closed ]] && args+=(-R "$rate")
    rm -f "$work/perf.csv"
    if [[ $count_syscalls = 1 && $rate != closed ]]; then
        local p perf_pids=""
        for p in $server_pid $(pgrep -P "$server_pid" || true); do perf_pids+=${perf_pids:+,}$p; done
        perf stat -x, -o "$work/perf.csv" -e raw_syscalls:sys_enter -e syscalls:sys_enter_epoll_wait \
            -p "$perf_pids" 2>/dev/null &
        counter=$!
        sleep 0.3 # attached before the run starts
    fi
    "${client_cpu[@]}" "$loadtest" "${args[@]}" >"$work/run.json" 2>"$work/run.err" || true
    if [[ -n $counter ]]; then
        kill -INT "$counter" 2>/dev/null || true
        wait "$counter" 2>/dev/null || true
    fi
    stop_target
    python3 - "$work/run.json" "$work/perf.csv" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("nan nan nan 0 0 nan nan"); sys.exit()
lat = d.get("latency_us") or {}
def pick(*names):
    for n in names:
        if n in lat: return float(lat[n])
    return float("nan")
calls = epolls = float("nan")
try:
    counts = {}
    for line in open(sys.argv[2]):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].isdigit():
            counts[f[2]] = int(f[0])
    answers = d.get("answers", 0)
    if answers and "raw_syscalls:sys_enter" in counts:
        calls = counts["raw_syscalls:sys_enter"] / answers
        epolls = counts.get("syscalls:sys_enter_epoll_wait", 0) / answers
except OSError:
    pass
print(pick("p50"), pick("p99"), pick("p99_9"), d.get("rps", 0), d.get("late_sends", 0), calls, epolls)
PY
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
steal_start=$(awk '/^cpu / {print $9}' /proc/stat)
capacity=${CAPACITY:-}
if [[ -z $capacity ]]; then
    capacity=$(for _ in 1 2 3; do load nginx closed | awk '{print $4}'; done | sort -n | sed -n 2p)
fi
capacity=${capacity%.*}
((capacity > 0)) || { echo "could not measure nginx proxy's capacity" >&2; exit 1; }

: >"$work/rows"
for round in $(seq "$rounds"); do
    for level in $levels; do
        rate=$((capacity * level / 100))
        for name in $targets; do
            read -r p50 p99 p999 rps late calls epolls < <(load "$name" "$rate")
            echo "$name $level $rate $p50 $p99 $p999 $rps $round $late $calls $epolls" >>"$work/rows"
            echo "# round $round: $name at $level % ($rate req/s): p50 $p50 µs, p99 $p99 µs, p99.9 $p999 µs," \
                "$rps req/s, late sends $late, system calls $calls per answer (epoll_wait $epolls)" >&2
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
steal_end=$(awk '/^cpu / {print $9}' /proc/stat)

python3 - "$work/rows" "$capacity" "$pin" "$server_threads" "$load_start" "$load_end" \
    "$((steal_end - steal_start))" "$rounds" "$duration" "$connections" "$request_bytes" "$body_bytes" \
    "${SVG:-}" "${JSON:-}" "$client_rt" <<'PY'
import json, math, statistics, sys
rows_file, capacity, pin, threads, load_start, load_end, steal, rounds, duration, conns, req_b, body_b, svg, out_json, client_rt = sys.argv[1:]
runs = {}
by_round = {}  # (name, level, round) -> p99
for line in open(rows_file):
    name, level, rate, p50, p99, p999, rps, rnd, late, calls, epolls = line.split()
    runs.setdefault((name, int(level)), []).append(
        (int(rate), float(p50), float(p99), float(p999), float(rps), int(late), float(calls), float(epolls)))
    by_round[(name, int(level), int(rnd))] = float(p99)
def med(vals):
    vals = [v for v in vals if not math.isnan(v)]
    return statistics.median(vals) if vals else float("nan")
summary = {}
for (name, level), rs in runs.items():
    summary[(name, level)] = dict(rate=rs[0][0], p50=med([r[1] for r in rs]), p99=med([r[2] for r in rs]),
                                  p999=med([r[3] for r in rs]), rps=med([r[4] for r in rs]),
                                  late_sends=sum(r[5] for r in rs), syscalls=med([r[6] for r in rs]),
                                  epoll_waits=med([r[7] for r in rs]))
# Each idemgate target's p99 over nginx's in the same round: the median and the range over rounds.
for (name, level), s in summary.items():
    ratios = []
    for rnd in range(1, int(rounds) + 1):
        a, b = by_round.get((name, level, rnd)), by_round.get(("nginx", level, rnd))
        if a is not None and b and not math.isnan(a) and not math.isnan(b):
            ratios.append(a / b)
    s["p99_ratios"] = ratios
    s["p99_ratio"] = statistics.median(ratios) if ratios and name != "nginx" else float("nan")
names = []
for (name, _) in runs:
    if name not in names: names.append(name)
levels = sorted({level for (_, level) in runs})
layout = "PIN=1: server alone on CPU 1 (1 thread / 1 worker), client, upstream and Redis on CPU 0" if pin == "1" \
    else f"PIN=0: every process free on all CPUs, servers with {threads} threads (nginx {threads} workers)"
rt_note = " The client ran under the real-time FIFO class (chrt -f 1)." if client_rt == "1" else ""
print(f"Latency at fixed load (idemgate-loadtest open loop, {conns} connections, {duration} s per run, "
      f"median of {rounds} rounds, the targets interleaved in each round; request body {req_b} B, answer body "
      f"{body_b} B). nginx proxy's capacity: {capacity} req/s (closed loop). {layout}.{rt_note} Load average "
      f"{load_start} before, {load_end} after; steal {steal} ticks during the runs.")
print()
print("| target | load | rate (req/s) | p50 µs | p99 µs | p99.9 µs | added p50 µs | added p99 µs | added p99.9 µs "
      "| p99 / nginx's, same round: median (range) | system calls per request (epoll_wait) | late sends |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
def f(v):
    return "-" if math.isnan(v) else f"{v:.0f}"
for level in levels:
    base = summary.get(("nginx", level))
    for name in names:
        s = summary.get((name, level))
        if not s: continue
        added = ["-"] * 3
        if base and name != "nginx":
            added = [f(s[k] - base[k]) for k in ("p50", "p99", "p999")]
        ratio = "-"
        if not math.isnan(s["p99_ratio"]):
            ratio = f"{s['p99_ratio']:.2f} ({min(s['p99_ratios']):.2f}-{max(s['p99_ratios']):.2f})"
        calls = "-" if math.isnan(s["syscalls"]) else f"{s['syscalls']:.2f} ({s['epoll_waits']:.2f})"
        print(f"| {name} | {level} % | {s['rate']} | {f(s['p50'])} | {f(s['p99'])} | {f(s['p999'])} | "
              + " | ".join(added) + f" | {ratio} | {calls} | {s['late_sends']} |")
def clean(v):
    if isinstance(v, float) and math.isnan(v): return None
    if isinstance(v, list): return [clean(x) for x in v]
    return v
if out_json:
    json.dump({"capacity": int(capacity), "pin": pin == "1", "client_rt": client_rt == "1", "rounds": int(rounds),
               "duration_s": int(duration), "load_start": load_start, "load_end": load_end, "steal_ticks": int(steal),
               "rows": [dict(target=n, level=l, **{k: clean(x) for k, x in v.items()}) for (n, l), v in summary.items()]},
              open(out_json, "w"), indent=1)
if svg:
    w, h, left, right, top, bottom = 640, 360, 60, 150, 20, 40
    ys = [v["p99"] for v in summary.values() if not math.isnan(v["p99"])]
    ymax = max(ys) * 1.1 if ys else 1
    xs = lambda level: left + (level - levels[0]) / max(1, levels[-1] - levels[0]) * (w - left - right)
    ysc = lambda v: h - bottom - v / ymax * (h - top - bottom)
    colors = ["#444", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
             f'<line x1="{left}" y1="{h-bottom}" x2="{w-right}" y2="{h-bottom}" stroke="#000"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h-bottom}" stroke="#000"/>',
             f'<text x="{(left + w - right) / 2}" y="{h - 8}" text-anchor="middle">load (% of nginx proxy capacity)</text>',
             f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 {(top + h - bottom) / 2})" text-anchor="middle">p99 latency (µs)</text>']
    for level in levels:
        parts.append(f'<text x="{xs(level):.1f}" y="{h - bottom + 16}" text-anchor="middle">{level}</text>')
    for i in range(5):
        v = ymax * i / 4
        parts.append(f'<text x="{left - 6}" y="{ysc(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    for i, name in enumerate(names):
        pts = [(xs(l), ysc(summary[(name, l)]["p99"])) for l in levels if (name, l) in summary and not math.isnan(summary[(name, l)]["p99"])]
        c = colors[i % len(colors)]
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (c, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
        parts.append(f'<text x="{w - right + 10}" y="{top + 16 * (i + 1)}" fill="{c}">{name}</text>')
    parts.append("</svg>")
    open(svg, "w").write("\n".join(parts) + "\n")
PY
