#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/instructions.sh: instructions per request of each gateway path, counted by valgrind's
# callgrind, a yardstick that does not drift with the machine's load the way wall-clock and CPU
# time do (those move 10-25 % between runs here; these counts repeat to well under 1 %).
#
# For every path and round it starts a fresh redis-server (paths with the Redis store) and a fresh
# gateway (one I/O thread) under `valgrind --tool=callgrind --instr-atstart=no` in front of an nginx
# upstream, switches instrumentation on, warms up, zeroes the counters, sends exactly REQUESTS
# requests over one keep-alive connection from bench-client (outside valgrind), dumps the counters
# and divides the gateway's total Ir (instructions executed in user space, all threads) by
# REQUESTS. With REDIS_INSTRUCTIONS=1 redis-server runs under callgrind the same way and its Ir per
# request is reported beside the gateway's, separately.
#
# Paths (bench/conf templates, rendered with threads: 1):
#   tier_replay   replays answered by the local tier (gateway-redis-tier.yaml)
#   redis_replay  replays read from Redis (gateway-redis.yaml)
#   memory_first  first executions over the memory store (gateway-memory.yaml)
#   memory_first_json  the same with the key read from the JSON body (key_from: json,
#                 key_json_pointer: /client_ref; bench-client --key-in body), beside memory_first
#   redis_first   first executions over Redis (gateway-redis.yaml)
#   memory_first_shadow, redis_first_shadow  the same on a route in mode: shadow (the shadow
#                 report counted), beside memory_first and redis_first
#   proxy         the gateway as a plain proxy, no idempotency on the route (gateway-proxy.yaml)
#   nginx_proxy   nginx's plain proxy (nginx-proxy.conf, one process, no master) under callgrind the
#                 same way, beside proxy: its "gateway" figures are nginx's
#
# Usage:
#   bench/instructions.sh                      # prints a table, writes bench/results/instructions-<UTC date>.json
#   bench/instructions.sh --compare A.json B.json [--max-increase 3]
#                                              # B against A per path; exit 1 when a path's gateway
#                                              # instructions per request grew more than 3 %
#
# Environment: BUILD_DIR=build (idemgate and bench-client from $BUILD_DIR/bin)  REQUESTS=2000
#   WARMUP=200 (first-execution and proxy paths: requests before the counters are zeroed; the
#   replay paths create REQUESTS records and replay each once before)  ROUNDS=2 (runs of every path)
#   PATHS="tier_replay redis_replay memory_first redis_first proxy nginx_proxy"  REDIS_INSTRUCTIONS=1
#   RESULTS_DIR=bench/results  SKIP_INSTALL=0  KEEP_WORK=0 (1: keep the temp dir: logs, callgrind files)
#   PIN_CPU=<last CPU> (every process on that CPU; "" leaves them free)
#   BENCH_CLIENT=$BUILD_DIR/bin/bench-client (the client runs outside valgrind: any build's will do)
#   CALLGRIND_ARGS="" (more callgrind options for the gateway and nginx, e.g. "--cache-sim=yes
#   --branch-sim=yes": the events they add are in the kept files, KEEP_WORK=1, on each file's
#   "summary:" line; the tables still report instructions)
#
# Not part of scripts/test.sh: it is a bench (about 1.5 minutes at the defaults on 2 cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_dir=$root/bench

say() { printf '[instructions %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- --compare A.json B.json
# Per path: A's and B's gateway (and Redis) instructions per request and B/A. A path whose gateway
# figure grew by more than --max-increase percent (default 3) fails the comparison (exit 1).
compare() {
    local a=$1 b=$2 max=$3
    command -v jq >/dev/null || die "--compare needs jq (apt-get install jq)"
    local f
    for f in "$a" "$b"; do
        [[ -r $f ]] || die "cannot read $f"
        jq -e '.instructions.paths' "$f" >/dev/null 2>&1 || die "$f has no instructions.paths"
    done
    echo "A: $a ($(jq -r '.build_dir + " at " + .build_commit + ", " + .date' "$a"))"
    echo "B: $b ($(jq -r '.build_dir + " at " + .build_commit + ", " + .date' "$b"))"
    # A run's fixed costs (its connections, the store's timers) are spread over REQUESTS: compare
    # runs of the same size (1000 against 2000 requests moved redis_replay by 0.1 %).
    local na nb
    na=$(jq -r '.instructions.requests' "$a") nb=$(jq -r '.instructions.requests' "$b")
    [[ $na = "$nb" ]] || echo "WARNING: A ran REQUESTS=$na, B ran REQUESTS=$nb: compare runs of the same size"
    echo
    echo "| path | A gateway Ir/req | B gateway Ir/req | B/A | A redis Ir/req | B redis Ir/req | B/A | verdict |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|"
    # One tab-separated line per path present in either file: path, A gw, B gw, A redis, B redis,
    # and the two runs' checks (a path whose runs failed their checks fails the comparison).
    jq -rn --slurpfile a "$a" --slurpfile b "$b" '
        def fig($doc; $p; $k): ($doc[0].instructions.paths[] | select(.path == $p) | .[$k]) // "";
        ([$a[0].instructions.paths[].path] + [$b[0].instructions.paths[].path] | unique) as $order
        | ([$a[0].instructions.paths[].path] + ($order - [$a[0].instructions.paths[].path]))[]
        | [., fig($a; .; "gateway_ir_per_request"), fig($b; .; "gateway_ir_per_request"),
              fig($a; .; "redis_ir_per_request"), fig($b; .; "redis_ir_per_request"),
              fig($a; .; "check"), fig($b; .; "check")]
        | map(tostring) | join("\t")' |
        awk -F'\t' -v max="$max" '
        function ratio(x, y) { return (x != "" && y != "" && x + 0 > 0) ? sprintf("%.4f", y / x) : "n/a" }
        {
            r = ratio($2, $3)
            if ($2 == "" && $3 != "" && $7 == "ok") verdict = "ok (new in B)"
            else if (r == "n/a") verdict = "FAIL: missing in B"
            else if ($6 != "ok" || $7 != "ok") verdict = "FAIL: a run failed its checks"
            else if ((r - 1) * 100 > max) verdict = sprintf("FAIL: %+.2f %% > +%s %%", (r - 1) * 100, max)
            else verdict = sprintf("ok (%+.2f %%)", (r - 1) * 100)
            if (verdict !~ /^ok/) failed = 1
            printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, ($2 == "" ? "-" : $2), ($3 == "" ? "-" : $3), r,
                ($4 == "" ? "-" : $4), ($5 == "" ? "-" : $5), ratio($4, $5), verdict
        }
        END { exit failed }'
}

if [[ ${1:-} = --compare ]]; then
    [[ $# -eq 3 || ($# -eq 5 && ${4:-} = --max-increase) ]] ||
        { echo "usage: $0 --compare A.json B.json [--max-increase PERCENT]" >&2; exit 2; }
    if compare "$2" "$3" "${5:-3}"; then
        echo
        echo "no path's gateway instructions per request grew by more than ${5:-3} %"
    else
        echo
        echo "FAIL: a path grew by more than ${5:-3} %, is missing from one file, or failed its checks"
        exit 1
    fi
    exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: $0 | $0 --compare A.json B.json [--max-increase PERCENT]" >&2; exit 2; }

cd "$root"
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$root/$BUILD_DIR
bin=$BUILD_DIR/bin
REQUESTS=${REQUESTS:-2000}
WARMUP=${WARMUP:-200}
ROUNDS=${ROUNDS:-2}
PATHS=${PATHS:-tier_replay redis_replay memory_first redis_first proxy nginx_proxy}
key_in=header # bench-client --key-in: where the measured requests carry their key
read -ra callgrind_args <<<"${CALLGRIND_ARGS:-}" # extra callgrind options (word-split)
REDIS_INSTRUCTIONS=${REDIS_INSTRUCTIONS:-1}
RESULTS_DIR=${RESULTS_DIR:-$bench_dir/results}
((REQUESTS > 0 && WARMUP > 0 && ROUNDS > 0)) || die "REQUESTS, WARMUP and ROUNDS must be positive"

# ---------------------------------------------------------------- tools
if [[ ${SKIP_INSTALL:-0} != 1 ]]; then
    missing=()
    command -v valgrind >/dev/null || missing+=(valgrind)
    command -v jq >/dev/null || missing+=(jq)
    command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
    if ((${#missing[@]})); then
        # nginx-light brings its own service; the bench starts its own instance on a free port.
        say "installing ${missing[*]}"
        sudo=""
        [[ $(id -u) -eq 0 ]] || sudo=sudo
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for tool in valgrind callgrind_control callgrind_annotate redis-server curl jq taskset "$NGINX"; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
BENCH_CLIENT=${BENCH_CLIENT:-$bin/bench-client}
[[ -x $bin/idemgate ]] || die "$bin/idemgate missing (build it: scripts/build.sh, or set BUILD_DIR)"
[[ -x $BENCH_CLIENT ]] || die "$BENCH_CLIENT missing (a build with IDEMGATE_BUILD_BENCH=ON has it; or set BENCH_CLIENT)"

# PIN_CPU: every process of a run (upstream, redis-server, gateway, client) on that one CPU, so
# they take turns instead of racing; what the gateway finds ready when it reads (an answer already
# there, or a wait in epoll and a wake-up) then varies less from run to run. "" leaves them free.
PIN_CPU=${PIN_CPU-$(($(nproc) - 1))}
pin=()
[[ -n $PIN_CPU ]] && pin=(taskset -c "$PIN_CPU")

# ---------------------------------------------------------------- processes we own
work=$(mktemp -d /tmp/idemgate-instructions.XXXXXX)
chmod 755 "$work" # nginx workers (www-data when root) read their run dir below it
declare -a owned_pids=()

stop_pid() { # TERM, wait up to 10 s (valgrind writes its last dump on exit), then KILL
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local pid
    for pid in "${owned_pids[@]}"; do stop_pid "$pid"; done
    if [[ ${KEEP_WORK:-0} = 1 ]]; then say "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background, output in $work/NAME.log; sets started_pid.
start() {
    local name=$1
    shift
    "$@" >"$work/$name.log" 2>&1 &
    started_pid=$!
    owned_pids+=("$started_pid")
}
# stop PID: stops one process we started and forgets it.
stop() {
    local pid=$1 kept=() p
    stop_pid "$pid"
    for p in "${owned_pids[@]}"; do [[ $p = "$pid" ]] || kept+=("$p"); done
    owned_pids=("${kept[@]}")
}

# Waits (bounded: valgrind starts slowly) until $work/NAME.log has a line matching REGEX; prints it.
wait_for_log() {
    local name=$1 pid=$2 regex=$3 line i
    for ((i = 0; i < 1200; i++)); do
        line=$(grep -m1 -E "$regex" "$work/$name.log" 2>/dev/null || true)
        [[ -n $line ]] && { echo "$line"; return 0; }
        kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; die "$name exited during start-up"; }
        sleep 0.05
    done
    cat "$work/$name.log" >&2
    die "$name not ready after 60 s"
}

declare -A taken_ports=()
# Ports from below the kernel's ephemeral range (as bench/run.sh picks them).
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral_low=32768
port_base=10000 port_span=$((ephemeral_low - 10000))
((port_span >= 1000)) || port_base=61000 port_span=4000
pick_port() { # VAR: a loopback port nothing listens on, not handed out before
    local port i
    for ((i = 0; i < 200; i++)); do
        port=$((port_base + RANDOM % port_span))
        [[ -n ${taken_ports[$port]:-} ]] && continue
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            taken_ports[$port]=1
            printf -v "$1" '%s' "$port"
            return 0
        fi
    done
    die "no free port found"
}

render() { # template out KEY=VALUE...: a bench/conf template with @KEY@ placeholders replaced
    local template=$1 out=$2
    shift 2
    local sed_args=() kv
    for kv in "$@"; do sed_args+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
    sed "${sed_args[@]}" "$bench_dir/conf/$template" >"$out"
}

# ---------------------------------------------------------------- the upstream
# nginx answering 201 with a 33-byte JSON body (bench/conf/upstream.conf), one worker, outside
# valgrind: only what the gateway does with its answer is counted.
pick_port upstream_port
mkdir -p "$work/upstream"
nginx_user_line=""
[[ $(id -u) -eq 0 ]] && nginx_user_line="user www-data;"
render nginx-common.inc "$work/upstream/nginx-common.inc" "DIR=$work/upstream"
render upstream.conf "$work/upstream/nginx.conf" "DIR=$work/upstream" "PORT=$upstream_port" "WORKERS=1" \
    "USER_LINE=$nginx_user_line"
start upstream "${pin[@]}" "$NGINX" -p "$work/upstream" -c "$work/upstream/nginx.conf" -g "daemon off; master_process on;"
for ((i = 0; i < 300; i++)); do
    curl -s -o /dev/null --max-time 1 -X POST -d '{}' "http://127.0.0.1:$upstream_port/__ready" && break
    kill -0 "$started_pid" 2>/dev/null || { cat "$work/upstream.log" >&2; die "upstream nginx exited"; }
    sleep 0.05
done
say "work dir $work; upstream nginx on $upstream_port; gateway $bin/idemgate"

# ---------------------------------------------------------------- one measured run
# Ir total of a callgrind dump file (the "totals:" line; "summary:" in older formats).
ir_of() {
    awk '/^(totals|summary):/ { print $2; found = 1; exit } END { if (!found) print "" }' "$1"
}
# callgrind_control ACTION PID: talks to the valgrind gdbserver of PID through vgdb, which also
# reaches a process blocked in epoll_wait; fails loudly rather than measuring nothing.
cg() {
    local action=$1 pid=$2 out
    out=$(callgrind_control "$action" "$pid" 2>&1) || die "callgrind_control $action $pid failed: $out"
}
# Dumps PID's counters since the last zero and prints the new dump file's total Ir.
dump_ir() {
    local pid=$1 prefix=$2 before after file
    before=$(ls "$prefix".* 2>/dev/null | wc -l)
    cg -d "$pid"
    for ((i = 0; i < 200; i++)); do
        after=$(ls "$prefix".* 2>/dev/null | wc -l)
        ((after > before)) && break
        sleep 0.05
    done
    file=$(ls -t "$prefix".* 2>/dev/null | head -1)
    [[ -n $file ]] || die "no callgrind dump for $pid"
    ir_of "$file"
}
# Calls into the allocator in a callgrind dump (malloc, calloc, realloc, aligned_alloc,
# posix_memalign, memalign, operator new and new[]; a call made from inside one of them, such
# as operator new's own malloc, is not counted again): the process's allocations.
allocs_of() {
    awk '
        function isalloc(n) { return n ~ /^(malloc|calloc|realloc|aligned_alloc|posix_memalign|memalign|valloc|mallocx|rallocx)$/ || n ~ /^operator new(\[\])?\(/ }
        function parse(line,   close_at, open_at, id, name) {
            open_at = index(line, "("); close_at = index(line, ")")
            id = substr(line, open_at + 1, close_at - open_at - 1)
            name = substr(line, close_at + 2)
            if (name != "") names[id] = name
            return names[id]
        }
        /^fn=\(/ { cur = parse($0); pending = ""; next }
        /^cfn=\(/ { pending = parse($0); next }
        /^calls=/ { if (pending != "" && isalloc(pending) && !isalloc(cur)) { split($1, a, "="); total += a[2] } pending = ""; next }
        END { print total + 0 }' "$1"
}
fill() { # port prefix keys -> bench-client's JSON line; fails the run unless it says ok
    local out
    out=$("${pin[@]}" "$BENCH_CLIENT" fill --port "$1" --prefix "$2" --keys "$3" --connections 1 --key-in "$key_in") ||
        die "bench-client fill --prefix $2 --keys $3 failed: $out"
    echo "$out"
}
metric() { # admin_port name labels -> the sample's value (0 when absent)
    curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
        awk -v k="$2{$3}" '$1 == k { v = $2 } END { printf "%d\n", v + 0 }'
}

# run_path PATH ROUND: measures one path once; appends a line to $work/runs.tsv:
#   path round requests gateway_ir gateway_ir_per_request redis_ir redis_ir_per_request check
run_path() {
    local path=$1 round=$2 template store dir redis_port=0 redis_pid="" gw_pid line port admin check=ok
    case $path in
    tier_replay) template=gateway-redis-tier.yaml store=redis ;;
    redis_replay | redis_first | redis_first_shadow) template=gateway-redis.yaml store=redis ;;
    memory_first | memory_first_json | memory_first_shadow) template=gateway-memory.yaml store=memory ;;
    proxy) template=gateway-proxy.yaml store=redis ;;
    *) die "unknown path $path (PATHS: tier_replay redis_replay memory_first memory_first_json memory_first_shadow redis_first redis_first_shadow proxy nginx_proxy)" ;;
    esac
    key_in=header
    [[ $path = *_json ]] && key_in=body
    dir=$work/$path-$round
    mkdir -p "$dir"
    local redis_cg=0
    if [[ $store = redis ]]; then
        # A fresh, empty redis-server per run, so every run sees the same keyspace.
        pick_port redis_port
        local redis_cmd=(redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no
            --dir "$dir" --daemonize no --protected-mode yes)
        if [[ $REDIS_INSTRUCTIONS = 1 && $path != proxy ]]; then
            redis_cg=1
            redis_cmd=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$dir/redis.cg"
                "${redis_cmd[@]}")
        fi
        start "$path-$round-redis" "${pin[@]}" "${redis_cmd[@]}"
        redis_pid=$started_pid
        wait_for_log "$path-$round-redis" "$redis_pid" 'Ready to accept connections' >/dev/null
    fi
    render "$template" "$dir/gateway.yaml" "PORT=0" "ADMIN_PORT=0" "THREADS=1" \
        "UPSTREAM_PORT=$upstream_port" "REDIS_PORT=$redis_port"
    if [[ $path = tier_replay ]]; then
        # A tier copy lives at most max_age (10s in the template); under callgrind creating the
        # keys takes longer than that, and an expired copy is read from Redis again. An hour keeps
        # every measured replay a tier hit; what a hit costs does not depend on max_age.
        sed -i -E 's/max_age: *[0-9]+s/max_age: 1h/' "$dir/gateway.yaml"
        grep -q 'max_age: 1h' "$dir/gateway.yaml" || die "could not raise local_tier max_age in $dir/gateway.yaml"
    fi
    if [[ $key_in = body ]]; then
        sed -i -E 's/^( *)key_header: Idempotency-Key$/\1key_from: json\n\1key_json_pointer: "\/client_ref"/' "$dir/gateway.yaml"
        grep -q 'key_from: json' "$dir/gateway.yaml" || die "could not set key_from: json in $dir/gateway.yaml"
    fi
    if [[ $path = *_shadow ]]; then
        sed -i -E 's/^( *)key_header: Idempotency-Key$/\1key_header: Idempotency-Key\n\1mode: shadow/' "$dir/gateway.yaml"
        grep -q 'mode: shadow' "$dir/gateway.yaml" || die "could not set mode: shadow in $dir/gateway.yaml"
    fi
    "$bin/idemgate" --config "$dir/gateway.yaml" --check >"$dir/check.log" 2>&1 ||
        { cat "$dir/check.log" >&2; die "$path: config rejected"; }
    start "$path-$round-gateway" "${pin[@]}" valgrind --tool=callgrind --instr-atstart=no "${callgrind_args[@]}" \
        "--callgrind-out-file=$dir/gateway.cg" "$bin/idemgate" --config "$dir/gateway.yaml"
    gw_pid=$started_pid
    line=$(wait_for_log "$path-$round-gateway" "$gw_pid" '"msg":"listening"')
    port=$(sed -E 's/.*"listen":"[^"]*:([0-9]+)".*/\1/' <<<"$line")
    admin=$(sed -E 's/.*"admin_listen":"[^"]*:([0-9]+)".*/\1/' <<<"$line")
    if [[ $store = redis && $path != proxy ]]; then
        for ((i = 0; i < 600; i++)); do # the store reachable
            [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$admin/readyz") = 200 ]] && break
            sleep 0.1
        done
    fi

    cg -i on "$gw_pid"
    ((redis_cg)) && cg -i on "$redis_pid"
    # Warm-up (counted, then zeroed): every code path of the measured requests runs first here.
    # Keys are the same in every run (fresh processes), so runs repeat each other exactly.
    local measured_prefix=m expect_replayed=0 expect_executed=0 expect_tier=0
    case $path in
    tier_replay | redis_replay)
        # The records (first executions), then one replay of each: a record enters the local tier
        # when a replay first reads it from the store, so the measured pass, a second replay of
        # each, is all tier hits on tier_replay (and the same Redis reads again on redis_replay).
        fill "$port" m "$REQUESTS" >"$dir/create.json"
        fill "$port" m "$REQUESTS" >"$dir/warmup.json"
        expect_replayed=$REQUESTS
        [[ $path = tier_replay ]] && expect_tier=$REQUESTS
        ;;
    memory_first | memory_first_json | memory_first_shadow | redis_first | redis_first_shadow)
        fill "$port" w "$WARMUP" >"$dir/warmup.json"
        expect_executed=$REQUESTS
        ;;
    proxy)
        fill "$port" w "$WARMUP" >"$dir/warmup.json"
        ;;
    esac
    local replayed0 executed0 tier0 passed0
    replayed0=$(metric "$admin" idemgate_requests_total 'outcome="replayed"')
    executed0=$(metric "$admin" idemgate_requests_total 'outcome="executed"')
    passed0=$(metric "$admin" idemgate_requests_total 'outcome="pass_through"')
    tier0=$(metric "$admin" idemgate_local_tier_lookups_total 'result="hit"')

    cg -z "$gw_pid"
    ((redis_cg)) && cg -z "$redis_pid"
    local out
    out=$(fill "$port" "$measured_prefix" "$REQUESTS")
    local gw_ir redis_ir=""
    gw_ir=$(dump_ir "$gw_pid" "$dir/gateway.cg")
    local gw_allocs
    gw_allocs=$(allocs_of "$(ls -t "$dir"/gateway.cg.* | head -1)")
    if ((redis_cg)); then
        # serverCron (hz 10) runs on wall-clock time, and callgrind slows Redis down: left in, it
        # is nearly all of Redis's count on a run of tier hits and varies from run to run. Its
        # inclusive cost (it and all it calls) is taken out; the commands' own work stays.
        local redis_total cron
        redis_total=$(dump_ir "$redis_pid" "$dir/redis.cg")
        cron=$(callgrind_annotate --inclusive=yes --threshold=100 "$(ls -t "$dir"/redis.cg.* | head -1)" 2>/dev/null |
            awk '/:serverCron \[/ && !found { gsub(/,/, "", $1); print $1; found = 1 }')
        redis_ir=$((redis_total - ${cron:-0}))
    fi
    echo "$out" >"$dir/measured.json"

    # What the measured requests were: replays, tier hits, first executions, as the path says.
    local replayed executed tier passed
    replayed=$(($(metric "$admin" idemgate_requests_total 'outcome="replayed"') - replayed0))
    executed=$(($(metric "$admin" idemgate_requests_total 'outcome="executed"') - executed0))
    passed=$(($(metric "$admin" idemgate_requests_total 'outcome="pass_through"') - passed0))
    tier=$(($(metric "$admin" idemgate_local_tier_lookups_total 'result="hit"') - tier0))
    grep -q "\"requests\":$REQUESTS," <<<"$out" || check="FAIL: bench-client did not send exactly $REQUESTS requests: $out"
    if [[ $path = proxy ]]; then
        ((replayed == 0 && executed == 0)) || check="FAIL: the proxy route replayed $replayed, executed $executed"
    elif ((replayed != expect_replayed || executed != expect_executed)); then
        check="FAIL: replayed $replayed (expected $expect_replayed), executed $executed (expected $expect_executed)"
    elif [[ $path = tier_replay ]] && ((tier != expect_tier)); then
        check="FAIL: $tier local tier hits for $REQUESTS replays"
    fi
    [[ -n $gw_ir ]] || check="FAIL: no gateway Ir in the dump"

    stop "$gw_pid"
    [[ -n $redis_pid ]] && stop "$redis_pid"
    local gw_per redis_per="" allocs_per
    gw_per=$(awk -v t="${gw_ir:-0}" -v n="$REQUESTS" 'BEGIN { printf "%.1f", t / n }')
    [[ -n $redis_ir ]] && redis_per=$(awk -v t="$redis_ir" -v n="$REQUESTS" 'BEGIN { printf "%.1f", t / n }')
    allocs_per=$(awk -v t="${gw_allocs:-0}" -v n="$REQUESTS" 'BEGIN { printf "%.2f", t / n }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$path" "$round" "$REQUESTS" "${gw_ir:-0}" "$gw_per" \
        "${redis_ir:-}" "${redis_per:-}" "$check" "$allocs_per" >>"$work/runs.tsv"
    say "$path round $round: gateway $gw_per Ir/request, $allocs_per allocations/request${redis_per:+, redis $redis_per Ir/request}" \
        "(replayed $replayed, executed $executed, pass-through $passed, tier hits $tier) $check"
}

# run_nginx_path ROUND: nginx's plain proxy (bench/conf/nginx-proxy.conf, one process: no master,
# one worker) under callgrind the same way, the yardstick for the gateway's proxy path. Appends
# its line to $work/runs.tsv (no Redis figures).
run_nginx_path() {
    local round=$1 dir nginx_port pid out check=ok ir before_count after_count
    dir=$work/nginx_proxy-$round
    mkdir -p "$dir"
    pick_port nginx_port
    render nginx-common.inc "$dir/nginx-common.inc" "DIR=$dir"
    render nginx-proxy.conf "$dir/nginx.conf" "DIR=$dir" "PORT=$nginx_port" "UPSTREAM_PORT=$upstream_port" \
        "WORKERS=1" "USER_LINE=" "LISTEN_SSL=" "TLS_INCLUDE="
    start "nginx_proxy-$round" "${pin[@]}" valgrind --tool=callgrind --instr-atstart=no "${callgrind_args[@]}" \
        "--callgrind-out-file=$dir/nginx.cg" "$NGINX" -p "$dir" -c "$dir/nginx.conf" \
        -g "daemon off; master_process off;"
    pid=$started_pid
    for ((i = 0; i < 1200; i++)); do
        curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$nginx_port/__ready" && break
        kill -0 "$pid" 2>/dev/null || { cat "$work/nginx_proxy-$round.log" >&2; die "nginx under callgrind exited"; }
        sleep 0.05
    done
    cg -i on "$pid"
    fill "$nginx_port" w "$WARMUP" >"$dir/warmup.json"
    before_count=$(curl -s "http://127.0.0.1:$upstream_port/__nginx_status" | awk '/^ [0-9]/ { print $3 }')
    cg -z "$pid"
    out=$(fill "$nginx_port" m "$REQUESTS")
    ir=$(dump_ir "$pid" "$dir/nginx.cg")
    local allocs
    allocs=$(allocs_of "$(ls -t "$dir"/nginx.cg.* | head -1)")
    after_count=$(curl -s "http://127.0.0.1:$upstream_port/__nginx_status" | awk '/^ [0-9]/ { print $3 }')
    grep -q "\"requests\":$REQUESTS," <<<"$out" || check="FAIL: bench-client did not send exactly $REQUESTS requests: $out"
    # Every measured request reached the upstream (stub_status counts this one too).
    ((after_count - before_count >= REQUESTS)) ||
        check="FAIL: the upstream served $((after_count - before_count)) requests for $REQUESTS proxied"
    [[ -n $ir ]] || check="FAIL: no nginx Ir in the dump"
    stop "$pid"
    local per allocs_per
    per=$(awk -v t="${ir:-0}" -v n="$REQUESTS" 'BEGIN { printf "%.1f", t / n }')
    allocs_per=$(awk -v t="${allocs:-0}" -v n="$REQUESTS" 'BEGIN { printf "%.2f", t / n }')
    printf '%s\t%s\t%s\t%s\t%s\t\t\t%s\t%s\n' nginx_proxy "$round" "$REQUESTS" "${ir:-0}" "$per" "$check" \
        "$allocs_per" >>"$work/runs.tsv"
    say "nginx_proxy round $round: nginx $per Ir/request, $allocs_per allocations/request $check"
}

# ---------------------------------------------------------------- the runs
: >"$work/runs.tsv"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
say "paths: $PATHS; $ROUNDS rounds of $REQUESTS requests (after $WARMUP warm-up) each"
for ((round = 1; round <= ROUNDS; round++)); do
    for path in $PATHS; do
        if [[ $path = nginx_proxy ]]; then run_nginx_path "$round"; else run_path "$path" "$round"; fi
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
# Per path: the mean over rounds, the lowest and highest, and the spread (highest - lowest) / mean.
summary=$work/summary.tsv
awk -F'\t' '
function add(k, v) { if (v == "") return; n[k]++; s[k] += v; if (!(k in lo) || v < lo[k]) lo[k] = v; if (!(k in hi) || v > hi[k]) hi[k] = v }
function mean(k) { return n[k] ? s[k] / n[k] : "" }
function spread(k) { return n[k] && s[k] ? (hi[k] - lo[k]) / mean(k) * 100 : "" }
{
    if (!($1 in seen)) { seen[$1] = 1; order[++count] = $1 }
    add($1 " gw", $5); add($1 " rd", $7); add($1 " al", $9)
    if ($8 != "ok" && !($1 in verdict)) verdict[$1] = $8
}
END {
    for (i = 1; i <= count; i++) {
        p = order[i]
        printf "%s\t%.1f\t%.1f\t%.1f\t%.3f", p, mean(p " gw"), lo[p " gw"], hi[p " gw"], spread(p " gw")
        if (n[p " rd"]) printf "\t%.1f\t%.1f\t%.1f\t%.3f", mean(p " rd"), lo[p " rd"], hi[p " rd"], spread(p " rd")
        else printf "\t\t\t\t"
        printf "\t%s\t%.2f\n", (p in verdict) ? verdict[p] : "ok", mean(p " al")
    }
}' "$work/runs.tsv" >"$summary"

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] || commit+="+dirty"
build_commit=unknown # HEAD (now) of the source tree BUILD_DIR was configured from
if src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null) && [[ -n $src ]]; then
    build_commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
valgrind_version=$(valgrind --version)
redis_version=$(redis-server --version | sed -E 's/.*v=([^ ]+).*/\1/')
stamp=$(date -u +%Y-%m-%dT%H%MZ)

table() {
    echo "Instructions per request (callgrind Ir, user space), $ROUNDS runs of REQUESTS=$REQUESTS (WARMUP=$WARMUP);"
    echo "gateway: $bin/idemgate (source commit $build_commit), threads: 1; $valgrind_version; Redis $redis_version."
    echo
    echo "| path | server Ir/request (each run: the gateway, or nginx for nginx_proxy) | mean | spread | allocations/request | redis Ir/request (each run) | spread | check |"
    echo "|---|---|---:|---:|---:|---|---:|---|"
    awk -F'\t' '
        NR == FNR { gw[$1] = gw[$1] (gw[$1] == "" ? "" : ", ") $5; if ($7 != "") rd[$1] = rd[$1] (rd[$1] == "" ? "" : ", ") $7; next }
        { printf "| %s | %s | %s | %s %% | %s | %s | %s | %s |\n", $1, gw[$1], $2, $5, $11, ($1 in rd) ? rd[$1] : "-",
              ($9 == "" ? "-" : $9 " %"), $10 }' "$work/runs.tsv" "$summary"
}

mkdir -p "$RESULTS_DIR"
json=$RESULTS_DIR/instructions-$stamp.json
# Two runs in the same minute (two builds, one after the other) keep both files.
for ((n = 2; n < 100; n++)); do
    [[ -e $json ]] || break
    json=$RESULTS_DIR/instructions-$stamp-$n.json
done
{
    printf '{"date":"%s","commit":"%s","build_dir":"%s","build_commit":"%s","command":"bench/instructions.sh",' \
        "$stamp" "$commit" "$BUILD_DIR" "$build_commit"
    printf '"gateway_sha256":"%s",' "$(sha256sum "$bin/idemgate" | cut -d' ' -f1)"
    printf '"cores":%s,"loadavg_start":"%s","loadavg_end":"%s",\n' "$(nproc)" "$load_start" "$load_end"
    printf '"instructions":{"tool":"%s","event":"Ir","unit":"instructions per request, user space","requests":%s,"warmup":%s,"rounds":%s,"server_threads":1,"redis":"%s","redis_counted":%s,\n' \
        "$valgrind_version" "$REQUESTS" "$WARMUP" "$ROUNDS" "$redis_version" "$([[ $REDIS_INSTRUCTIONS = 1 ]] && echo true || echo false)"
    echo '"paths":['
    awk -F'\t' 'BEGIN { sep = "" } {
        printf "%s{\"path\":\"%s\",\"gateway_ir_per_request\":%s,\"gateway_min\":%s,\"gateway_max\":%s,\"gateway_spread_pct\":%s,\"allocations_per_request\":%s,", sep, $1, $2, $3, $4, $5, $11
        if ($6 != "") printf "\"redis_ir_per_request\":%s,\"redis_min\":%s,\"redis_max\":%s,\"redis_spread_pct\":%s,", $6, $7, $8, $9
        gsub(/"/, "\x27", $10)
        printf "\"check\":\"%s\"}", $10
        sep = ",\n"
    }' "$summary"
    echo '],'
    echo '"runs":['
    awk -F'\t' 'BEGIN { sep = "" } {
        gsub(/"/, "\x27", $8)
        printf "%s{\"path\":\"%s\",\"round\":%s,\"requests\":%s,\"gateway_ir\":%s,\"gateway_ir_per_request\":%s,\"allocations_per_request\":%s,", sep, $1, $2, $3, $4, $5, $9
        if ($6 != "") printf "\"redis_ir\":%s,\"redis_ir_per_request\":%s,", $6, $7
        printf "\"check\":\"%s\"}", $8
        sep = ",\n"
    }' "$work/runs.tsv"
    echo ']}}'
} >"$json"
jq -e . "$json" >/dev/null || die "wrote invalid JSON to $json"

table
say "wrote $json"
! grep -q $'\tFAIL' "$work/runs.tsv"
