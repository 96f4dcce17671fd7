#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# bench/run.sh: idemgate's replay and first-execution throughput beside the proxies users already
# run, all measured in one run on this machine (absolute figures drift 10-25 % between runs on a
# shared box; the ratios are the result).
#
# One command, unattended, about 15 minutes at the defaults (at ROUNDS=5 about 16 with
# REDIS_MODES="" TLS_TARGETS=0 IO_URING=0 NODE_PEER=0; it prints its estimate before the timed
# runs): installs wrk, nginx-light, haproxy, strace, jq and
# gnuplot-nox if missing, builds (scripts/build.sh into $BUILD_DIR), starts every server on free
# loopback ports inside a temp dir, runs the scenarios interleaved (A B A B ...) over $ROUNDS
# rounds, checks correctness, stops everything it started, and writes
#   bench/results/<UTC date>.json, bench/results/latest.md, bench/results/latest.svg (gnuplot).
#   (bench/report.sh writes latest.md and latest.svg from the JSON alone.)
#
# The machine layout: by default (PIN unset) every process runs free on every CPU and the servers
# have THREADS threads. PIN=1 is the fair layout: every server under test runs 1 thread (nginx and
# haproxy 1 worker, the Node cluster 1 worker) pinned to CPU 1, and wrk, the upstream and Redis
# share CPU 0 (taskset; the same for every target, checked before the runs: sanity "layout"), as
# bench/tools/latency_sweep.sh's PIN=1 does; one row moves Redis to CPU 1 beside the gateway
# (first_execution_redis_cpu1). LAYOUTS="free pinned" runs the whole bench once per layout and
# writes one latest.md with both (the pinned JSON is <UTC date>-pinned.json; bench/report.sh
# merges several JSON files the same way by hand). The JSON ("layout") and latest.md say which.
#
# Every row's CPU account: the machine's CPU time over the row's run split into client (wrk),
# server, upstream, Redis, other (every other process, irq, softirq) and idle, each measured apart
# (processes from /proc/PID/stat, the rest from /proc/stat; bench/lib/measure.sh), so the sum of
# the parts checks it: a row whose sum is more than 5 % from 100 is flagged (latest.md: closes NO).
# Rows ending in _1k send 1 KiB request bodies to a path the upstream answers with 2 KiB. The
# load average before and after and the steal time over the run head latest.md.
#
# This file is the orchestration: which targets and scenarios, how many rounds, in which order.
# The servers it starts are in bench/lib/servers.sh, the measurements in bench/lib/measure.sh,
# the correctness checks in bench/lib/checks.sh, the Redis memory step in bench/lib/memory.sh,
# the ratios in bench/lib/ratios.sh and the results JSON in bench/lib/results.sh.
#
# Environment: DURATION=5 (seconds per wrk run)  ROUNDS=3  CONNECTIONS=64  WRK_THREADS=2
#   THREADS=2 (threads/workers of every server)  BUILD_DIR=build  SKIP_INSTALL=0  SKIP_BUILD=0
#   RECORDS=20000 (records created per body size to measure Redis memory)
#   MEMORY_BODIES="200 2048" (upstream response body sizes, bytes, for the Redis memory figure)
#   STORM_KEYS=200  STORM_REPEATS=8  KEEP_WORK=0 (1: keep the temp dir with every log)
#   RESULTS_DIR=bench/results
#   PIN=1: the pinned layout above (THREADS=1; wrk -t1 unless WRK_THREADS_PINNED says otherwise)
#   LAYOUTS="free pinned": both layouts, one run each, one report (the full run only, not ONLY=...)
#   CPU_ACCOUNT_TOLERANCE=5 (% from 100 within which a row's CPU account closes)
#   REDIS_MODES="cluster tls": extra gateway targets on a 3-primary Redis Cluster and on a
#   TLS-only redis-server ("" skips them)
#   TLS_TARGETS=1: TLS termination on the client hop, same certificate (EC P-256) and pinned suite
#   on both sides: idemgate-https (Redis store, tls: on listen) beside nginx-cache-https (replay)
#   and nginx-proxy-https (first execution), with keep-alive and with Connection: close (a new
#   connection, so a new handshake, per request); 0 skips them
#   TLS_DURATION=2 (seconds per TLS run)  TLS_SUITE=TLS_AES_128_GCM_SHA256  TLS_GROUP=X25519
#   TLS_RESUMPTION=0 (servers issue no session tickets: every new connection is a full handshake;
#   1: tickets on, and wrk resumes the session on each reconnect)
#   IO_URING=1: an extra gateway target, idemgate-uring: the idemgate-redis configuration run by
#   an io_uring build (-DIDEMGATE_IO_URING=ON, built into URING_BUILD_DIR=build-uring unless
#   SKIP_BUILD=1), beside the epoll build; skipped with a note where the kernel refuses io_uring;
#   0 skips it
#   ONLY=memory: only the Redis memory per record (builds just idemgate and bench-client, starts
#   one nginx, one redis-server and one gateway, about a minute); prints its table, writes nothing.
#   ONLY=tls: only the TLS rows and their plain counterparts (nginx-proxy, nginx-cache and
#   idemgate-redis replay_one / first_execution); no warm keys, system calls, storm, Redis memory or
#   Redis modes; prints its tables, writes nothing (about 2.5 minutes at the defaults).
#   ONLY=h2: only the HTTP/2 rows (bench/lib/h2.sh): idemgate over TLS with h2 by ALPN beside nginx
#   "listen ... ssl http2", replay (h2load) and first execution (bench-h2-load), -c H2_CONNECTIONS=16
#   with -m H2_STREAMS=32 and -m 1, H2_DURATION=5 s per run, CPU per request; prints its table and
#   writes bench/results/h2-latest.md (about 4 minutes at the defaults). Needs h2load
#   (nghttp2-client).
#   ROWS=<extended regex>: only the timed rows whose plan entry (target:scenario:script...) matches
#   it, e.g. ROWS='^(nginx-proxy|idemgate-proxy):proxy' for a short trial (default: every row).
#   A ratio or figure whose row was left out is n/a in the report (null in the JSON).
#   NODE_PEER=1: the Node peer rows (bench/lib/node.sh): Express + express-idempotency (Redis
#   adapter, the same redis-server) + express-http-proxy, one process (express-node) and a
#   node:cluster of THREADS workers (express-node-cluster), replay_one and first_execution, and its
#   duplicate storm; installs nodejs and npm if missing and runs npm ci in bench/peers/express; 0
#   skips them.
#   ONLY=node: only the Node peer rows and their anchors (bare Beast, nginx proxy, nginx cache,
#   idemgate-redis replay_one / first_execution, idemgate-proxy), the storms; no warm keys, system
#   calls, Redis memory, Redis modes or TLS rows; writes bench/results/node-<UTC date>.json and
#   bench/results/node-latest.md (the full run's latest.md stays; about 3 minutes at ROUNDS=2
#   DURATION=3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_dir=$root/bench
cd "$root"

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
WRK_THREADS=${WRK_THREADS:-2}
THREADS=${THREADS:-2}
BUILD_DIR=${BUILD_DIR:-build}
RECORDS=${RECORDS:-20000}
MEMORY_BODIES=${MEMORY_BODIES:-200 2048}
ONLY=${ONLY:-}
REDIS_MODES=${REDIS_MODES-cluster tls}
TLS_TARGETS=${TLS_TARGETS:-1}
TLS_DURATION=${TLS_DURATION:-2}
TLS_SUITE=${TLS_SUITE:-TLS_AES_128_GCM_SHA256}
TLS_GROUP=${TLS_GROUP:-X25519}
TLS_RESUMPTION=${TLS_RESUMPTION:-0}
[[ -z $ONLY || $ONLY = memory || $ONLY = tls || $ONLY = h2 || $ONLY = node ]] ||
    { echo "bench: ONLY must be empty, 'memory', 'tls', 'h2' or 'node', not '$ONLY'" >&2; exit 2; }
if [[ $ONLY = tls ]]; then
    TLS_TARGETS=1 REDIS_MODES="" SYSCALLS=0
fi
NODE_PEER=${NODE_PEER:-1}
if [[ $ONLY = node ]]; then
    NODE_PEER=1 TLS_TARGETS=0 REDIS_MODES="" SYSCALLS=0
elif [[ -n $ONLY ]]; then
    NODE_PEER=0
fi
# The machine layout: PIN=1 gives every server under test 1 thread (nginx and haproxy: 1 worker
# thread or process, Node: 1 worker) on CPU 1, and puts the load generator, the upstream and Redis
# on CPU 0 (taskset; the same placement for every target). LAYOUTS="free pinned" runs the
# whole bench once per layout (free: PIN=0, pinned: PIN=1) and reports both in one latest.md.
PIN=${PIN:-0}
LAYOUTS=${LAYOUTS:-}
if [[ $PIN = 1 ]]; then
    THREADS=1
    WRK_THREADS=${WRK_THREADS_PINNED:-1} # one client CPU: more wrk threads would only take turns on it
fi
# The _1k rows: request bodies of 1 KiB, answered with 2 KiB (bench/conf/upstream.conf).
LARGE_REQUEST_BYTES=1024
LARGE_ANSWER_BYTES=2048
STORM_KEYS=${STORM_KEYS:-200}
STORM_REPEATS=${STORM_REPEATS:-8}
WARM_KEYS=10000
RESULTS_DIR=${RESULTS_DIR:-$bench_dir/results}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$root/$BUILD_DIR
bin=$BUILD_DIR/bin

# shellcheck source=lib/servers.sh
source "$bench_dir/lib/servers.sh"  # say, die, the processes we own, the server starters
# shellcheck source=lib/measure.sh
source "$bench_dir/lib/measure.sh"  # timed runs, CPU per request, system calls, medians
# shellcheck source=lib/syscalls.sh
source "$bench_dir/lib/syscalls.sh" # how system calls are counted (perf or strace)
# shellcheck source=lib/checks.sh
source "$bench_dir/lib/checks.sh"   # sanity checks, warm-up, the duplicate storm
# shellcheck source=lib/memory.sh
source "$bench_dir/lib/memory.sh"   # Redis memory per record
# shellcheck source=lib/ratios.sh
source "$bench_dir/lib/ratios.sh"   # the ratios against the anchors and the goals
# shellcheck source=lib/results.sh
source "$bench_dir/lib/results.sh"  # the results JSON
# shellcheck source=lib/h2.sh
source "$bench_dir/lib/h2.sh"       # the HTTP/2 rows (ONLY=h2)
# shellcheck source=lib/node.sh
source "$bench_dir/lib/node.sh"     # the Node peer (Express + express-idempotency)

# ---------------------------------------------------------------- both layouts (LAYOUTS)
# One run of this script per layout, each writing its JSON (the pinned one as <date>-pinned.json),
# then one latest.md and latest.svg from them all (bench/report.sh with several JSON files).
if [[ -n $LAYOUTS ]]; then
    [[ -z $ONLY ]] || die "LAYOUTS runs the full bench only, not ONLY=$ONLY"
    layout_jsons=() layout_status=0 layout_skip_build=${SKIP_BUILD:-0} layout_skip_install=${SKIP_INSTALL:-0}
    for layout in $LAYOUTS; do
        case $layout in
        free) layout_pin=0 ;;
        pinned) layout_pin=1 ;;
        *) die "LAYOUTS takes free and pinned, not '$layout'" ;;
        esac
        layout_out=$(mktemp /tmp/idemgate-bench-layout.XXXXXX)
        say "layout $layout (PIN=$layout_pin)"
        LAYOUTS="" PIN=$layout_pin BENCH_JSON_OUT=$layout_out BENCH_REPORT=0 SKIP_BUILD=$layout_skip_build \
            SKIP_INSTALL=$layout_skip_install bash "${BASH_SOURCE[0]}" || layout_status=1
        [[ -s $layout_out ]] && layout_jsons+=("$(cat "$layout_out")")
        rm -f "$layout_out"
        layout_skip_build=1 layout_skip_install=1
    done
    ((${#layout_jsons[@]})) || die "no layout produced results"
    bash "$bench_dir/report.sh" "${layout_jsons[@]}" "$RESULTS_DIR"
    cat "$RESULTS_DIR/latest.md"
    say "wrote $RESULTS_DIR/latest.md and ${layout_jsons[*]}"
    exit "$layout_status"
fi
if [[ $PIN = 1 ]]; then
    (($(nproc) >= 2)) || die "PIN=1 needs 2 CPUs"
    command -v taskset >/dev/null || die "PIN=1 needs taskset (util-linux)"
    server_cpu=(taskset -c 1) side_cpu=(taskset -c 0) client_cpu=(taskset -c 0)
fi

# ---------------------------------------------------------------- install and build
install_packages() {
    bash "$root/scripts/install-deps.sh"
    local missing=() p wanted=(nginx-light)
    [[ $ONLY = memory ]] || wanted+=(wrk haproxy gnuplot-nox jq) # jq: bench/report.sh reads the results JSON
    [[ $ONLY != h2 ]] || wanted+=(nghttp2-client)                # h2load
    # The system calls per request table: perf reads the kernel's counts (as root); strace is the
    # fallback where perf cannot (another user, a kernel without syscall tracepoints).
    [[ -n $ONLY || ${SYSCALLS:-1} = 0 ]] || wanted+=(linux-perf strace)
    # Node and npm by command: a nodejs from another repository carries its own npm.
    if [[ $NODE_PEER = 1 ]] && ! { command -v node && command -v npm; } >/dev/null; then wanted+=(nodejs npm); fi
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    say "installing ${missing[*]}"
    local sudo=""
    [[ $(id -u) -eq 0 ]] || sudo=sudo
    $sudo apt-get update -qq
    # policy-rc.d or not, the packaged nginx/haproxy services are not ours to run: the bench
    # starts its own instances on free ports.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

[[ ${SKIP_INSTALL:-0} = 1 ]] || install_packages
if [[ ${SKIP_BUILD:-0} != 1 && $ONLY = h2 ]]; then
    say "building idemgate and bench-h2-load into $BUILD_DIR"
    [[ -f $BUILD_DIR/CMakeCache.txt ]] || cmake -S "$root" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target idemgate bench-h2-load
elif [[ ${SKIP_BUILD:-0} != 1 && $ONLY = memory ]]; then
    say "building idemgate and bench-client into $BUILD_DIR"
    [[ -f $BUILD_DIR/CMakeCache.txt ]] || cmake -S "$root" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target idemgate bench-client
elif [[ ${SKIP_BUILD:-0} != 1 ]]; then
    say "building into $BUILD_DIR"
    if ! BUILD_DIR=$BUILD_DIR BUILD_TYPE=Release bash "$root/scripts/build.sh"; then
        # A target the bench does not run (a test mid-edit) must not stop the bench.
        say "full build failed; building only what the bench runs"
        cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target idemgate bare-beast bench-client idemgate-test-upstream idemgate-loadtest ||
            cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target bare-beast bench-client
    fi
fi
# The io_uring build of the gateway (IO_URING=1): only the idemgate target, in its own build dir.
IO_URING=${IO_URING:-1}
URING_BUILD_DIR=${URING_BUILD_DIR:-build-uring}
[[ $URING_BUILD_DIR = /* ]] || URING_BUILD_DIR=$root/$URING_BUILD_DIR
uring_bin=""
if [[ $IO_URING = 1 && -z $ONLY ]]; then
    if [[ ${SKIP_BUILD:-0} != 1 || ! -x $URING_BUILD_DIR/bin/idemgate ]]; then
        say "building the io_uring gateway into $URING_BUILD_DIR"
        if ! { cmake -S "$root" -B "$URING_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMGATE_IO_URING=ON \
            -DIDEMGATE_BUILD_TESTS=OFF -DIDEMGATE_BUILD_BENCH=OFF >/dev/null &&
            cmake --build "$URING_BUILD_DIR" -j "${JOBS:-2}" --target idemgate >/dev/null; }; then
            say "io_uring build failed: no idemgate-uring target"
        fi
    fi
    if [[ -x $URING_BUILD_DIR/bin/idemgate ]]; then
        # --version probes io_uring (a seccomp profile or kernel.io_uring_disabled refuses it).
        if why=$("$URING_BUILD_DIR/bin/idemgate" --version 2>&1) && [[ $why == *io_uring* ]]; then
            uring_bin=$URING_BUILD_DIR/bin/idemgate
        else
            say "io_uring refused here, no idemgate-uring target: $why"
        fi
    fi
fi
tools=(nginx redis-server redis-cli curl)
case $ONLY in
memory) ;;
h2) tools+=(jq h2load) ;;
*) tools+=(wrk haproxy jq) ;; # jq: bench/report.sh
esac
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || die "$tool not found"
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
bench_binaries=(bench-client)
[[ $ONLY = memory ]] && bench_binaries+=(idemgate) || bench_binaries+=(bare-beast)
[[ $ONLY = h2 ]] && bench_binaries=(idemgate bench-h2-load)
for b in "${bench_binaries[@]}"; do
    [[ -x $bin/$b ]] || die "$bin/$b missing (build failed?)"
done
have_gateway=1
[[ -x $bin/idemgate ]] || { have_gateway=0; say "WARNING: $bin/idemgate missing: gateway targets skipped"; }
have_counter=1
[[ ( -x $bin/idemgate-test-upstream && -x $bin/idemgate-loadtest ) || $ONLY = memory ]] ||
    { have_counter=0; say "WARNING: idemgate-test-upstream or idemgate-loadtest missing: storm skipped"; }

# ---------------------------------------------------------------- processes we own
work=$(mktemp -d /tmp/idemgate-bench.XXXXXX)
chmod 755 "$work" # nginx workers (www-data when root) read their run dirs below it
[[ $ONLY = tls ]] && RESULTS_DIR=$work/results # nothing lands in bench/results
trap cleanup EXIT
trap 'exit 130' INT TERM
run_id=$(date -u +%Y%m%d%H%M%S)-$$

if [[ $ONLY = h2 ]]; then
    say "work dir $work; only the HTTP/2 rows"
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    start_h2_targets
    run_h2_rows
    mkdir -p "$RESULTS_DIR"
    {
        echo "HTTP/2 over TLS ($(h2load --version | head -1), $("$NGINX" -v 2>&1 | sed 's/.*: //'), idemgate" \
            "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)), $ROUNDS rounds of ${H2_DURATION}s," \
            "THREADS=$THREADS, load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end:"
        echo
        h2_table
    } >"$RESULTS_DIR/h2-latest.md"
    cat "$RESULTS_DIR/h2-latest.md"
    exit 0
fi
if [[ $ONLY = memory ]]; then
    say "work dir $work; only the Redis memory per record ($RECORDS records per body size: $MEMORY_BODIES)"
    measure_redis_memory
    echo "Redis memory per record, $(redis-server --version | sed -E 's/.*v=([^ ]+).*malloc=([^ ]+).*/Redis \1, \2/')," \
        "INFO used_memory delta over RECORDS=$RECORDS new keys per body size through idemgate (bench/run.sh, ONLY=memory):"
    echo
    memory_table
    grep -q $'\tFAIL' "$work/memory.tsv" && exit 1
    exit 0
fi

# ---------------------------------------------------------------- start the targets, check them
layout_text="free: every process on every CPU, servers with $THREADS threads/workers"
[[ $PIN = 1 ]] && layout_text="pinned (PIN=1): servers on CPU 1 with 1 thread/worker; client, upstream and Redis on CPU 0"
say "work dir $work; layout $layout_text"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
run_stat_start=$(proc_stat_cpu) # steal over the whole run (the results JSON, latest.md's heading)
start_targets
start_node_targets
check_layout
run_sanity_checks
run_node_sanity_checks
warm_prefix="warm-$run_id"
warm_keys

# ---------------------------------------------------------------- timed runs
# target:scenario:script[:connections[:seconds]]. Anchors run the same scripts as the gateway
# scenario they anchor, so wrk's own per-request cost (the request() hook) is the same on both
# sides of a ratio. A scenario ending in _close sends Connection: close on every request.
plan=(
    upstream:static:replay_one
    bare-beast:static:replay_one
    nginx-proxy:proxy:first_execution
    haproxy:proxy:first_execution
    nginx-cache:replay_one:replay_one
    nginx-cache:replay_10k:replay_warm
)
if ((have_gateway)); then
    for t in idemgate-redis idemgate-redis-tier idemgate-memory; do
        plan+=("$t:replay_one:replay_one" "$t:replay_10k:replay_warm" "$t:first_execution:first_execution" "$t:mixed_90_10:mixed")
    done
    for t in "${extra_gateways[@]}"; do
        plan+=("$t:replay_10k:replay_warm" "$t:first_execution:first_execution")
    done
    # The gateway as a plain proxy (no idempotency on the route): what proxying costs by itself.
    plan+=("idemgate-proxy:proxy:first_execution")
    # The access log's cost: the same gateway with access_log on (the goal: at most 5 % below off).
    plan+=("idemgate-redis-log:replay_one:replay_one" "idemgate-redis-log:first_execution:first_execution")
    # Tracing's cost: every request sampled (sample_ratio 1.0) and exported, beside tracing off.
    plan+=("idemgate-redis-traced:replay_one:replay_one" "idemgate-redis-traced:first_execution:first_execution")
    # Many connections: first executions at 512 connections beside nginx at 512.
    plan+=("idemgate-redis:first_execution_512:first_execution:512" "nginx-proxy:proxy_512:first_execution:512")
    # Bodies of 1 KiB (request) and 2 KiB (answer) beside the small ones: both proxies, a first
    # execution and a replay.
    plan+=("nginx-proxy:proxy_1k:first_execution" "idemgate-proxy:proxy_1k:first_execution"
        "idemgate-redis:first_execution_1k:first_execution" "idemgate-redis:replay_one_1k:replay_one")
    # PIN=1: the gateway and its Redis on the one server CPU, beside nginx alone on it.
    [[ $PIN = 1 ]] && plan+=("idemgate-redis:first_execution_redis_cpu1:first_execution:::1")
fi
# The Node replays before its first executions: a request Node still has queued when wrk stops
# reaches the upstream after the row, and must not land in a replay row's count.
for t in "${node_targets[@]}"; do plan+=("$t:replay_one:replay_one"); done
for t in "${node_targets[@]}"; do plan+=("$t:first_execution:first_execution"); done
((${#node_targets[@]})) && plan+=("express-node-proxy:proxy:first_execution")
# TLS termination, the same work as the plain rows above: keep-alive (64 handshakes amortised over
# the run) and Connection: close (one connection, so one handshake, per request). The plain
# replay_one_close rows give a new connection's cost without TLS (TCP accept and close).
if ((${#https_targets[@]})); then
    plan+=("nginx-cache:replay_one_close:replay_one::$TLS_DURATION")
    ((have_gateway)) && plan+=("idemgate-redis:replay_one_close:replay_one::$TLS_DURATION")
fi
for t in "${https_targets[@]}"; do
    case $t in
    nginx-cache-https) plan+=("$t:replay_one:replay_one::$TLS_DURATION" "$t:replay_one_close:replay_one::$TLS_DURATION") ;;
    nginx-proxy-https) plan+=("$t:proxy:first_execution::$TLS_DURATION" "$t:proxy_close:first_execution::$TLS_DURATION") ;;
    idemgate-https)
        plan+=("$t:replay_one:replay_one::$TLS_DURATION" "$t:replay_one_close:replay_one::$TLS_DURATION"
            "$t:first_execution:first_execution::$TLS_DURATION" "$t:first_execution_close:first_execution::$TLS_DURATION")
        ;;
    esac
done
if [[ $ONLY = tls ]]; then # the TLS rows and the same work without TLS
    kept=()
    for entry in "${plan[@]}"; do
        case $entry in
        *-https:* | *:replay_one_close:* | nginx-cache:replay_one:* | nginx-proxy:proxy:* | idemgate-redis:replay_one:* | idemgate-redis:first_execution:*) kept+=("$entry") ;;
        esac
    done
    plan=("${kept[@]}")
fi
if [[ $ONLY = node ]]; then # the Node rows and their anchors
    kept=()
    for entry in "${plan[@]}"; do
        case $entry in
        express-node*:* | bare-beast:* | nginx-proxy:proxy:* | nginx-cache:replay_one:* | idemgate-proxy:proxy:* | \
            idemgate-redis:replay_one:* | idemgate-redis:first_execution:*) kept+=("$entry") ;;
        esac
    done
    plan=("${kept[@]}")
fi
if [[ -n ${ROWS:-} ]]; then # ROWS=<regex>: only the plan entries it matches (a short trial)
    kept=()
    for entry in "${plan[@]}"; do [[ ! $entry =~ $ROWS ]] || kept+=("$entry"); done
    plan=("${kept[@]}")
fi
runs=$work/runs.tsv
tls_runs=$work/tls-runs.tsv # target scenario round requests new_connections resumed (- when not counted)
: >"$runs"
: >"$tls_runs"
total=$((${#plan[@]} * ROUNDS))
plan_seconds=0
for entry in "${plan[@]}"; do
    IFS=: read -r _ _ _ _ secs _ <<<"$entry"
    plan_seconds=$((plan_seconds + ${secs:-$DURATION} + 1))
done
say "timed runs: ${#plan[@]} target/scenario pairs x $ROUNDS rounds = ~$((plan_seconds * ROUNDS))s"
n=0
for ((round = 1; round <= ROUNDS; round++)); do
    for entry in "${plan[@]}"; do
        n=$((n + 1))
        timed_run "$round" "$entry" "[$n/$total]"
    done
done

# ---------------------------------------------------------------- system calls per request
# A separate short run per row, counted by the kernel's tracepoints (perf; the reads that found
# nothing apart) (bench/lib/measure.sh); SYSCALLS=0 skips them. strace slows the target and
# under-counts those reads, so it counts only when SYSCALLS=strace asks for it.
[[ ${SYSCALLS:-1} = 0 ]] || pick_syscall_method
if [[ ${SYSCALLS:-1} != 0 && -z $syscall_method ]]; then
    say "WARNING: no system calls per request table: perf's tracepoints are not usable (run as root," \
        "with linux-perf), and SYSCALLS=strace was not given"
fi
if [[ -n $syscall_method ]]; then
    sys_plan=(bare-beast:static:replay_one nginx-cache:replay_one:replay_one nginx-proxy:proxy:first_execution)
    ((have_gateway)) && sys_plan+=(idemgate-proxy:proxy:first_execution idemgate-redis:replay_one:replay_one idemgate-redis-tier:replay_one:replay_one
        idemgate-memory:replay_one:replay_one idemgate-redis:first_execution:first_execution)
    [[ -n $uring_bin ]] && ((have_gateway)) &&
        sys_plan+=(idemgate-uring:replay_one:replay_one idemgate-uring:first_execution:first_execution)
    measure_syscalls "${sys_plan[@]}"
fi

# ---------------------------------------------------------------- duplicate storm, Redis memory
if ((have_gateway && have_counter)) && [[ $ONLY != tls ]]; then
    run_storm
fi
mem_json="null"
if ((have_gateway)) && [[ $ONLY != tls && $ONLY != node ]]; then
    measure_redis_memory
    mem_json=$(memory_json)
fi

# ---------------------------------------------------------------- results and report
mkdir -p "$RESULTS_DIR"
stamp=$(date -u +%Y-%m-%dT%H%MZ)
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
run_stat_end=$(proc_stat_cpu)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] || commit+="+dirty"
summary=$work/summary.tsv
summarize_runs
tls_summary=$work/tls-summary.tsv # target scenario new_connections_per_request(median) resumed(sum or -)
: >"$tls_summary"
if ((${#https_targets[@]})); then summarize_tls_runs; fi
compute_ratios
json=$RESULTS_DIR/$stamp.json
if [[ $ONLY = node ]]; then # beside the full runs: node-<date>.json and node-latest.md
    json=$RESULTS_DIR/node-$stamp.json
    write_results_json "$json"
    bash "$bench_dir/report.sh" "$json" "$work/report"
    cp "$work/report/latest.md" "$RESULTS_DIR/node-latest.md"
    cat "$RESULTS_DIR/node-latest.md"
    say "wrote $RESULTS_DIR/node-latest.md and $json"
    exit 0
fi
[[ $PIN = 1 ]] && json=$RESULTS_DIR/$stamp-pinned.json
write_results_json "$json"
[[ -z ${BENCH_JSON_OUT:-} ]] || echo "$json" >"$BENCH_JSON_OUT" # LAYOUTS: the outer run reports
if [[ ${BENCH_REPORT:-1} = 0 ]]; then
    say "wrote $json"
    exit 0
fi
bash "$bench_dir/report.sh" "$json" "$RESULTS_DIR"

cat "$RESULTS_DIR/latest.md"
say "wrote $RESULTS_DIR/latest.md and $json"
