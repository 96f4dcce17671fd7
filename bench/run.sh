#!/usr/bin/env bash
# bench/run.sh: idemgate's replay and first-execution throughput beside the proxies users already
# run, all measured in one run on this machine (absolute figures drift 10-25 % between runs on a
# shared box; the ratios are the result).
#
# One command, unattended, under 10 minutes: installs wrk, nginx-light, haproxy, strace and
# gnuplot-nox if missing, builds (scripts/build.sh into $BUILD_DIR), starts every server on free
# loopback ports inside a temp dir, runs the scenarios interleaved (A B A B ...) over $ROUNDS
# rounds, checks correctness, stops everything it started, and writes
#   bench/results/<UTC date>.json, bench/results/latest.md, bench/results/latest.svg (gnuplot).
#
# Environment: DURATION=5 (seconds per wrk run)  ROUNDS=3  CONNECTIONS=64  WRK_THREADS=2
#   THREADS=2 (threads/workers of every server)  BUILD_DIR=build  SKIP_INSTALL=0  SKIP_BUILD=0
#   RECORDS=20000 (records created per body size to measure Redis memory)
#   MEMORY_BODIES="200 2048" (upstream response body sizes, bytes, for the Redis memory figure)
#   STORM_KEYS=200  STORM_REPEATS=8  KEEP_WORK=0 (1: keep the temp dir with every log)
#   RESULTS_DIR=bench/results
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
[[ -z $ONLY || $ONLY = memory || $ONLY = tls ]] || { echo "bench: ONLY must be empty, 'memory' or 'tls', not '$ONLY'" >&2; exit 2; }
if [[ $ONLY = tls ]]; then
    TLS_TARGETS=1 REDIS_MODES="" SYSCALLS=0
fi
STORM_KEYS=${STORM_KEYS:-200}
STORM_REPEATS=${STORM_REPEATS:-8}
WARM_KEYS=10000
RESULTS_DIR=${RESULTS_DIR:-$bench_dir/results}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$root/$BUILD_DIR
bin=$BUILD_DIR/bin

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- install and build
install_packages() {
    bash "$root/scripts/install-deps.sh"
    local missing=() p wanted=(nginx-light)
    [[ $ONLY = memory ]] || wanted+=(wrk haproxy gnuplot-nox)
    [[ -n $ONLY || ${SYSCALLS:-1} = 0 ]] || wanted+=(strace) # the system calls per request table
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
if [[ ${SKIP_BUILD:-0} != 1 && $ONLY = memory ]]; then
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
        cmake -S "$root" -B "$URING_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMGATE_IO_URING=ON \
            -DIDEMGATE_BUILD_TESTS=OFF -DIDEMGATE_BUILD_BENCH=OFF >/dev/null &&
            cmake --build "$URING_BUILD_DIR" -j "${JOBS:-2}" --target idemgate >/dev/null ||
            say "io_uring build failed: no idemgate-uring target"
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
[[ $ONLY = memory ]] || tools+=(wrk haproxy)
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || die "$tool not found"
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
bench_binaries=(bench-client)
[[ $ONLY = memory ]] && bench_binaries+=(idemgate) || bench_binaries+=(bare-beast)
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
[[ $ONLY = tls ]] && RESULTS_DIR=$work/results # nothing lands in bench/results or a README
declare -a owned_pids=()

cleanup() {
    local pid i
    for pid in "${owned_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${owned_pids[@]}"; do
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ ${KEEP_WORK:-0} = 1 ]]; then say "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts "$@" in the background with its output in $work/<name>.log and remembers its PID.
start() {
    local name=$1
    shift
    "$@" >"$work/$name.log" 2>&1 &
    owned_pids+=("$!")
    eval "pid_${name//-/_}=$!"
}
pid_of() { local v="pid_${1//-/_}"; echo "${!v}"; }

declare -A taken_ports=()
# Ports come from below the kernel's ephemeral range: a port there can be held by an outgoing
# connection (refusing connects yet failing bind), and wrk opens many.
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral_low=32768
port_base=10000 port_span=$((ephemeral_low - 10000))
((port_span >= 1000)) || port_base=61000 port_span=4000
# pick_port VAR: sets VAR to a loopback port nothing listens on (a connect is refused) and that
# was not handed out before. Not a subshell, so taken_ports remembers it.
pick_port() {
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

# Waits (bounded) until $work/<name>.log has a line matching the regex; prints that line.
wait_for_log() {
    local name=$1 regex=$2 pid line i
    pid=$(pid_of "$name")
    for ((i = 0; i < 300; i++)); do
        line=$(grep -m1 -E "$regex" "$work/$name.log" 2>/dev/null || true)
        [[ -n $line ]] && { echo "$line"; return 0; }
        kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; die "$name exited during start-up"; }
        sleep 0.05
    done
    cat "$work/$name.log" >&2
    die "$name not ready after 15 s"
}

# Waits (bounded) until a POST to the port answers at all (https when the third argument says so).
wait_for_http() {
    local name=$1 port=$2 scheme=${3:-http} i
    for ((i = 0; i < 300; i++)); do
        curl -s -o /dev/null --max-time 1 -k -X POST -d '{}' "$scheme://127.0.0.1:$port/__ready" && return 0
        kill -0 "$(pid_of "$name")" 2>/dev/null || { cat "$work/$name.log" >&2; die "$name exited during start-up"; }
        sleep 0.05
    done
    die "$name not answering on $port after 15 s"
}

# Copies a bench/conf template into $work/<name>/ with @KEY@ placeholders replaced.
render() {
    local template=$1 out=$2
    shift 2
    local sed_args=() kv
    for kv in "$@"; do sed_args+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
    sed "${sed_args[@]}" "$bench_dir/conf/$template" >"$out"
}

nginx_user_line=""
[[ $(id -u) -eq 0 ]] && nginx_user_line="user www-data;"

# A fifth argument "tls" terminates TLS (nginx-tls.inc, the bench certificate from make_tls_files).
start_nginx() {
    local name=$1 template=$2 port=$3 upstream_port=${4:-0} tls=${5:-}
    local dir=$work/$name listen_ssl="" tls_include="" scheme=http resumption
    mkdir -p "$dir"
    render nginx-common.inc "$dir/nginx-common.inc" "DIR=$dir"
    if [[ $tls = tls ]]; then
        if [[ $TLS_RESUMPTION = 1 ]]; then
            resumption="ssl_session_tickets on; ssl_session_cache shared:bench_tls:10m;"
        else
            resumption="ssl_session_tickets off; ssl_session_cache off; ssl_conf_command NumTickets 0;"
        fi
        render nginx-tls.inc "$dir/nginx-tls.inc" "CERT_FILE=$tls_dir/server.crt" "KEY_FILE=$tls_dir/server.key" \
            "TLS_SUITE=$TLS_SUITE" "TLS_GROUP=$TLS_GROUP" "RESUMPTION=$resumption"
        listen_ssl=" ssl" tls_include="include $dir/nginx-tls.inc;" scheme=https
    fi
    render "$template" "$dir/nginx.conf" "DIR=$dir" "PORT=$port" "UPSTREAM_PORT=$upstream_port" \
        "WORKERS=$THREADS" "USER_LINE=$nginx_user_line" "LISTEN_SSL=$listen_ssl" "TLS_INCLUDE=$tls_include"
    start "$name" "$NGINX" -p "$dir" -c "$dir/nginx.conf" -g "daemon off; master_process on;"
    wait_for_http "$name" "$port" "$scheme"
}

# A CA and a server certificate for 127.0.0.1 (EC P-256) in $tls_dir (once), and pinned.cnf: an
# OpenSSL configuration pinning TLS 1.3, TLS_SUITE and TLS_GROUP (and no session tickets unless
# TLS_RESUMPTION=1) for processes that have no cipher setting of their own (idemgate, wrk).
tls_dir=""
make_tls_files() {
    [[ -n $tls_dir ]] && return 0
    tls_dir=$work/tls
    mkdir -p "$tls_dir"
    (
        cd "$tls_dir"
        openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout ca.key -out ca.crt \
            -days 2 -subj /CN=idemgate-bench-ca -addext basicConstraints=critical,CA:TRUE
        openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout server.key -out server.csr \
            -subj /CN=127.0.0.1
        printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
            -extfile server.ext
    ) >"$work/tls-certs.log" 2>&1 || { cat "$work/tls-certs.log" >&2; die "could not make TLS certificates"; }
    {
        echo "# Written by bench/run.sh: OPENSSL_CONF of idemgate-https and of wrk against the https targets."
        echo "openssl_conf = openssl_init"
        echo "[openssl_init]"
        echo "ssl_conf = ssl_module"
        echo "[ssl_module]"
        echo "system_default = bench_tls"
        echo "[bench_tls]"
        echo "MinProtocol = TLSv1.3"
        echo "Ciphersuites = $TLS_SUITE"
        echo "Groups = $TLS_GROUP"
        [[ $TLS_RESUMPTION = 1 ]] || echo "NumTickets = 0"
    } >"$tls_dir/pinned.cnf"
}

# Starts idemgate with a rendered config; sets port_<name> and admin_<name> from its ready line.
# The Redis port is $redis_port unless a fourth argument names another.
# Further KEY=VALUE arguments fill other placeholders (NODES, CA_FILE).
start_gateway() {
    local name=$1 template=$2 upstream_port=$3 store_port=${4:-${redis_port:-0}} line
    shift $(($# < 4 ? $# : 4))
    render "$template" "$work/$name.yaml" "PORT=0" "ADMIN_PORT=0" "THREADS=$THREADS" \
        "UPSTREAM_PORT=$upstream_port" "REDIS_PORT=$store_port" "$@"
    local gateway_bin=${GATEWAY_BIN:-$bin/idemgate} # GATEWAY_BIN: another build (io_uring)
    "$gateway_bin" --config "$work/$name.yaml" --check >"$work/$name.check.log" 2>&1 ||
        { cat "$work/$name.check.log" >&2; die "$name: config rejected"; }
    start "$name" "$gateway_bin" --config "$work/$name.yaml"
    line=$(wait_for_log "$name" '"msg":"listening"')
    eval "port_${name//-/_}=$(sed -E 's/.*"listen":"[^"]*:([0-9]+)".*/\1/' <<<"$line")"
    eval "admin_${name//-/_}=$(sed -E 's/.*"admin_listen":"[^"]*:([0-9]+)".*/\1/' <<<"$line")"
}
port_of() { local v="port_${1//-/_}"; echo "${!v}"; }

# ---------------------------------------------------------------- measuring helpers
upstream_served() { # requests the upstream nginx has served so far
    curl -s --max-time 2 "http://127.0.0.1:$upstream_port/__nginx_status" | awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ {print $3}'
}
cpu_ticks() { # utime+stime of processes (all threads; the same figures pidstat reads), in clock ticks
    local pid total=0 t
    for pid in "$@"; do
        [[ -r /proc/$pid/stat ]] || continue
        t=$(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$pid/stat" 2>/dev/null || echo 0)
        total=$((total + ${t:-0}))
    done
    echo "$total"
}
server_pids() { # the target's own processes: nginx master and its workers, or the one process
    local pid
    pid=$(pid_of "$1")
    echo "$pid" $(pgrep -P "$pid" 2>/dev/null || true)
}
clk_tck=$(getconf CLK_TCK)
run_id=$(date -u +%Y%m%d%H%M%S)-$$

# ---------------------------------------------------------------- Redis memory per record
# For each size in MEMORY_BODIES: an empty private redis-server (FLUSHALL SYNC between sizes), a
# gateway with the Redis store in front of an nginx answering 201 with a JSON body of exactly that
# many bytes, RECORDS new keys through the gateway (bench-client fill), and the INFO memory
# used_memory delta divided by the keys added. One sample record gives the stored value size
# (STRLEN), the key length and MEMORY USAGE, to split the figure into data and Redis overhead.
# Appends one tab-separated line per size to $work/memory.tsv:
#   body  records  keys_added  used_memory_delta  bytes_per_record  response_bytes  value_bytes
#   key_bytes  memory_usage_sample  verdict
# Needs $bin/idemgate and $bin/bench-client; starts (and owns) nginx, redis-server and idemgate.
json_body() { # N: a JSON object of exactly N bytes (N >= 48), nothing nginx would interpolate
    local head='{"id":"ord_1","status":"created","padding":"' tail='"}' pad
    printf -v pad '%*s' $(($1 - ${#head} - ${#tail})) ''
    printf '%s%s%s' "$head" "${pad// /x}" "$tail"
}
measure_redis_memory() {
    local size locations="" dir=$work/bodies bodies_port memory_redis_port
    for size in $MEMORY_BODIES; do
        # nginx keeps one config token within its 4 KiB parse buffer.
        ((size >= 48 && size <= 4000)) || die "MEMORY_BODIES: $size is outside 48..4000 bytes"
        locations+="        location = /bodies/$size { default_type application/json; return 201 '$(json_body "$size")'; }"$'\n'
    done
    pick_port bodies_port
    mkdir -p "$dir"
    render nginx-common.inc "$dir/nginx-common.inc" "DIR=$dir"
    cat >"$dir/nginx.conf" <<EOF
# Written by bench/run.sh: answers POST /bodies/<n> with 201 and a JSON body of n bytes.
$nginx_user_line
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    include $dir/nginx-common.inc;
    server {
        listen 127.0.0.1:$bodies_port;
$locations        location / { return 201 '{}'; }
    }
}
EOF
    start bodies "$NGINX" -p "$dir" -c "$dir/nginx.conf" -g "daemon off; master_process on;"
    wait_for_http bodies "$bodies_port"
    pick_port memory_redis_port
    mkdir -p "$work/redis-memory"
    start redis-memory redis-server --port "$memory_redis_port" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$work/redis-memory" --daemonize no --protected-mode yes
    wait_for_log redis-memory 'Ready to accept connections' >/dev/null
    start_gateway idemgate-memory-cost gateway-redis.yaml "$bodies_port" "$memory_redis_port"
    local rcli=(redis-cli -p "$memory_redis_port")
    used_memory() { "${rcli[@]}" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}'; }
    : >"$work/memory.tsv"
    for size in $MEMORY_BODIES; do
        "${rcli[@]}" FLUSHALL SYNC >/dev/null
        local keys0 mem0 keys1 mem1 fill_out response response_bytes sample value_bytes usage per_record verdict=ok
        keys0=$("${rcli[@]}" DBSIZE | tr -d '\r') mem0=$(used_memory)
        fill_out=$("$bin/bench-client" fill --port "$(port_of idemgate-memory-cost)" --path "/bodies/$size" \
            --prefix "mem-$run_id-$size" --keys "$RECORDS" --connections "$CONNECTIONS" || true)
        keys1=$("${rcli[@]}" DBSIZE | tr -d '\r') mem1=$(used_memory)
        response=$(curl -s -i --max-time 2 -X POST -H 'Content-Type: application/json' \
            --data-binary '{"item":"book","qty":1}' "http://127.0.0.1:$bodies_port/bodies/$size")
        response_bytes=${#response}
        sample=$("${rcli[@]}" RANDOMKEY | tr -d '\r')
        value_bytes=$("${rcli[@]}" STRLEN "$sample" | tr -d '\r')
        usage=$("${rcli[@]}" MEMORY USAGE "$sample" SAMPLES 0 | tr -d '\r')
        [[ $value_bytes =~ ^[0-9]+$ ]] || value_bytes=0
        [[ $usage =~ ^[0-9]+$ ]] || usage=0
        per_record=$(awk -v a="$mem0" -v b="$mem1" -v n="$((keys1 - keys0))" 'BEGIN { printf "%.1f", n ? (b - a) / n : 0 }')
        grep -q '"ok":true' <<<"$fill_out" || verdict="FAIL: $fill_out"
        ((keys1 - keys0 >= RECORDS)) || verdict="FAIL: only $((keys1 - keys0)) keys added for $RECORDS records"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$size" "$RECORDS" "$((keys1 - keys0))" "$((mem1 - mem0))" \
            "$per_record" "$response_bytes" "$value_bytes" "${#sample}" "$usage" "$verdict" >>"$work/memory.tsv"
        say "redis memory, $size-byte body: $per_record bytes/record (upstream response $response_bytes B," \
            "stored value $value_bytes B, key ${#sample} B, MEMORY USAGE $usage B) $verdict"
    done
}
# Markdown table of $work/memory.tsv.
memory_table() {
    echo "| response body | records | used_memory delta | bytes per record | upstream response | stored value (STRLEN) | key | MEMORY USAGE of one key | per record - response | check |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    awk -F'\t' '{ printf "| %s B | %s | %s B | %s | %s B | %s B | %s B | %s B | %.1f | %s |\n", $1, $3, $4, $5, $6, $7, $8, $9, $5 - $6, $10 }' "$work/memory.tsv"
}

if [[ $ONLY = memory ]]; then
    say "work dir $work; only the Redis memory per record ($RECORDS records per body size: $MEMORY_BODIES)"
    measure_redis_memory
    echo "Redis memory per record, $(redis-server --version | sed -E 's/.*v=([^ ]+).*malloc=([^ ]+).*/Redis \1, \2/')," \
        "INFO used_memory delta over RECORDS=$RECORDS new keys per body size through idemgate (bench/run.sh, ONLY=memory):"
    echo
    memory_table
    ! grep -q $'\tFAIL' "$work/memory.tsv"
    exit
fi

# ---------------------------------------------------------------- start the targets
say "work dir $work"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
pick_port upstream_port
port_upstream=$upstream_port
start_nginx upstream upstream.conf "$upstream_port"
say "upstream nginx on $upstream_port"

start bare-beast "$bin/bare-beast" --port 0 --threads "$THREADS"
port_bare_beast=$(wait_for_log bare-beast '"msg":"listening"' | sed -E 's/.*"listen":"[^"]*:([0-9]+)".*/\1/')

pick_port port_nginx_proxy
start_nginx nginx-proxy nginx-proxy.conf "$port_nginx_proxy" "$upstream_port"
pick_port port_nginx_cache
start_nginx nginx-cache nginx-cache.conf "$port_nginx_cache" "$upstream_port"

pick_port port_haproxy
mkdir -p "$work/haproxy"
render haproxy.cfg "$work/haproxy/haproxy.cfg" "DIR=$work/haproxy" "PORT=$port_haproxy" \
    "UPSTREAM_PORT=$upstream_port" "THREADS=$THREADS"
start haproxy "$HAPROXY" -db -f "$work/haproxy/haproxy.cfg"
wait_for_http haproxy "$port_haproxy"

if ((have_gateway)); then
    pick_port redis_port
    mkdir -p "$work/redis"
    start redis redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$work/redis" --daemonize no --protected-mode yes
    wait_for_log redis 'Ready to accept connections' >/dev/null
    start_gateway idemgate-redis gateway-redis.yaml "$upstream_port"
    start_gateway idemgate-redis-tier gateway-redis-tier.yaml "$upstream_port"
    start_gateway idemgate-redis-log gateway-redis-log.yaml "$upstream_port"
    start_gateway idemgate-memory gateway-memory.yaml "$upstream_port"
    start_gateway idemgate-proxy gateway-proxy.yaml "$upstream_port"
fi
extra_gateways=()
if ((have_gateway)) && [[ $REDIS_MODES == *cluster* ]]; then
    # Three primaries, no replicas (RECIPES.md), each with its own bus port.
    cluster_nodes=() cluster_pids=()
    for i in 1 2 3; do
        pick_port node_port
        pick_port bus_port
        mkdir -p "$work/cluster-$i"
        start "cluster-$i" redis-server --port "$node_port" --bind 127.0.0.1 --save "" --appendonly no \
            --dir "$work/cluster-$i" --daemonize no --cluster-enabled yes --cluster-config-file nodes.conf \
            --cluster-port "$bus_port" --cluster-node-timeout 2000
        wait_for_log "cluster-$i" 'Ready to accept connections' >/dev/null
        cluster_nodes+=("127.0.0.1:$node_port")
        cluster_pids+=("$(pid_of "cluster-$i")")
    done
    redis-cli --cluster create "${cluster_nodes[@]}" --cluster-replicas 0 --cluster-yes \
        >"$work/cluster-create.log" 2>&1 || { cat "$work/cluster-create.log" >&2; die "redis-cli --cluster create failed"; }
    for ((i = 0; i < 200; i++)); do
        ok=1
        for n in "${cluster_nodes[@]}"; do
            redis-cli -p "${n##*:}" CLUSTER INFO 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
        done
        ((ok)) && break
        sleep 0.05
    done
    ((ok)) || die "the bench cluster did not reach cluster_state:ok"
    nodes_yaml=$(printf '"%s", ' "${cluster_nodes[@]}")
    start_gateway idemgate-cluster gateway-cluster.yaml "$upstream_port" 0 "NODES=${nodes_yaml%, }"
    extra_gateways+=(idemgate-cluster)
fi
if ((have_gateway)) && [[ $REDIS_MODES == *tls* ]]; then
    # The bench CA and server certificate (make_tls_files), then a TLS-only redis-server.
    make_tls_files
    pick_port tls_redis_port
    mkdir -p "$work/redis-tls"
    start redis-tls redis-server --port 0 --tls-port "$tls_redis_port" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$work/redis-tls" --daemonize no --tls-cert-file "$tls_dir/server.crt" \
        --tls-key-file "$tls_dir/server.key" --tls-ca-cert-file "$tls_dir/ca.crt" --tls-auth-clients no
    wait_for_log redis-tls 'Ready to accept connections' >/dev/null
    start_gateway idemgate-tls gateway-tls.yaml "$upstream_port" "$tls_redis_port" "CA_FILE=$tls_dir/ca.crt"
    extra_gateways+=(idemgate-tls)
fi
if ((have_gateway)) && [[ -n $uring_bin ]]; then
    # The same configuration, key prefix of its own, run by the io_uring build.
    GATEWAY_BIN=$uring_bin start_gateway idemgate-uring gateway-uring.yaml "$upstream_port"
    extra_gateways+=(idemgate-uring)
fi
# TLS termination on the client hop: the same certificate and pinned suite on every side; the
# nginx targets proxy plain HTTP to the same upstream as nginx-proxy / nginx-cache, and the gateway
# uses the same redis-server as idemgate-redis (its own key prefix), plain HTTP to the upstream.
https_targets=()
declare -A scheme_of=() # port -> https (absent: http)
if [[ $TLS_TARGETS = 1 ]]; then
    make_tls_files
    pick_port port_nginx_proxy_https
    start_nginx nginx-proxy-https nginx-proxy.conf "$port_nginx_proxy_https" "$upstream_port" tls
    pick_port port_nginx_cache_https
    start_nginx nginx-cache-https nginx-cache.conf "$port_nginx_cache_https" "$upstream_port" tls
    https_targets+=(nginx-proxy-https nginx-cache-https)
    if ((have_gateway)); then
        # idemgate has no cipher setting: the pinned OpenSSL configuration comes from its
        # environment (a prefix assignment on a function call is exported to what it runs).
        OPENSSL_CONF=$tls_dir/pinned.cnf start_gateway idemgate-https gateway-https.yaml "$upstream_port" "$redis_port" \
            "CERT_FILE=$tls_dir/server.crt" "KEY_FILE=$tls_dir/server.key"
        https_targets+=(idemgate-https)
    fi
    for t in "${https_targets[@]}"; do scheme_of[$(port_of "$t")]=https; done
fi
# A gateway's readiness (Redis reachable, every slot served): wait for it before measuring.
for g in "${extra_gateways[@]}" ${port_idemgate_https:+idemgate-https}; do
    for ((i = 0; i < 300; i++)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$(eval echo "\$admin_${g//-/_}")/readyz") = 200 ]] && break
        sleep 0.05
    done
done
say "targets: bare-beast $port_bare_beast, nginx-proxy $port_nginx_proxy, nginx-cache $port_nginx_cache," \
    "haproxy $port_haproxy${redis_port:+, redis $redis_port, idemgate-redis $(port_of idemgate-redis)," \
    "idemgate-memory $(port_of idemgate-memory)}"

# ---------------------------------------------------------------- correctness before speed
declare -A sanity=() # target -> "ok" or the reason it is not
body='{"item":"book","qty":1}'
url_of() { # port -> base URL (https for the TLS targets)
    echo "${scheme_of[$1]:-http}://127.0.0.1:$1"
}
post() { # port key -> headers+body of the answer
    curl -s -i --max-time 5 ${tls_dir:+--cacert "$tls_dir/ca.crt"} -X POST -H 'Content-Type: application/json' \
        -H "Idempotency-Key: $2" --data-binary "$body" "$(url_of "$1")/api/orders" || echo "curl failed with status $?"
}
check_replay() { # target port replay_header_regex
    local target=$1 port=$2 marker=$3 first second key="sanity-$run_id"
    first=$(post "$port" "$key")
    second=$(post "$port" "$key")
    if ! grep -q '^HTTP/1.1 201' <<<"$first"; then
        sanity[$target]="first answer not 201: $(head -1 <<<"$first")"
    elif ! grep -qiE "$marker" <<<"$second"; then
        sanity[$target]="second answer is not a replay (no $marker)"
    elif [[ $(sed '1,/^\r$/d' <<<"$first") != $(sed '1,/^\r$/d' <<<"$second") ]]; then
        sanity[$target]="replayed body differs from the first"
    else
        sanity[$target]=ok
    fi
}
sanity_targets=(upstream bare-beast nginx-proxy haproxy)
((have_gateway)) && sanity_targets+=(idemgate-proxy)
for t in "${sanity_targets[@]}"; do
    p=$(port_of "$t")
    if grep -q '^HTTP/1.1 201' <<<"$(post "$p" "sanity-$run_id")"; then sanity[$t]=ok; else sanity[$t]="no 201"; fi
done
check_replay nginx-cache "$port_nginx_cache" '^X-Cache-Status: HIT'
if ((have_gateway)); then
    check_replay idemgate-redis "$(port_of idemgate-redis)" '^Idempotent-Replayed: true'
    check_replay idemgate-redis-tier "$(port_of idemgate-redis-tier)" '^Idempotent-Replayed: true'
    check_replay idemgate-redis-log "$(port_of idemgate-redis-log)" '^Idempotent-Replayed: true'
    check_replay idemgate-memory "$(port_of idemgate-memory)" '^Idempotent-Replayed: true'
fi
for g in "${extra_gateways[@]}"; do
    check_replay "$g" "$(port_of "$g")" '^Idempotent-Replayed: true'
done
# The https targets: a replay like the others (over https), the protocol, suite and group a default
# client (openssl s_client, not pinned) negotiates with each, which must be the pinned ones, and
# whether a second connection resumes the first one's session (it must not, unless TLS_RESUMPTION=1).
declare -A tls_negotiated=() # target -> "TLSv1.3 TLS_AES_128_GCM_SHA256 X25519 ECDSA resumed=no"
tls_gateway_handshakes() { # "full resumed" TLS handshakes idemgate-https has completed so far
    curl -s --max-time 2 "http://127.0.0.1:$admin_idemgate_https/metrics" |
        awk '/^idemgate_tls_handshakes_total\{resumed="false"\}/ { f = $2 } /^idemgate_tls_handshakes_total\{resumed="true"\}/ { r = $2 }
             END { printf "%d %d\n", f, r }'
}
for t in "${https_targets[@]}"; do
    p=$(port_of "$t")
    case $t in
    nginx-cache-https) check_replay "$t" "$p" '^X-Cache-Status: HIT' ;;
    idemgate-https) check_replay "$t" "$p" '^Idempotent-Replayed: true' ;;
    *) grep -q '^HTTP/1.1 201' <<<"$(post "$p" "sanity-$run_id")" && sanity[$t]=ok || sanity[$t]="no 201 over https" ;;
    esac
    s_client=$(openssl s_client -connect "127.0.0.1:$p" -CAfile "$tls_dir/ca.crt" </dev/null 2>&1 || true)
    suite=$(sed -nE 's/^New, (TLSv[0-9.]+), Cipher is (.*)$/\1 \2/p' <<<"$s_client" | head -1)
    group=$(sed -nE 's/^Server Temp Key: ([^,]+),.*/\1/p' <<<"$s_client" | head -1)
    sig=$(sed -nE 's/^Peer signature type: (.*)$/\1/p' <<<"$s_client" | head -1)
    verify=$(sed -nE 's/^ *Verify return code: ([0-9]+).*/\1/p' <<<"$s_client" | head -1)
    # Two requests on two connections of one curl (Connection: close between them): curl offers
    # the first one's session on the second.
    if [[ $t = idemgate-https ]]; then
        read -r _ resumed0 <<<"$(tls_gateway_handshakes)"
        curl -s -o /dev/null --cacert "$tls_dir/ca.crt" -H 'Connection: close' "$(url_of "$p")/healthz" \
            -o /dev/null "$(url_of "$p")/healthz" || true
        read -r _ resumed1 <<<"$(tls_gateway_handshakes)"
        reused=$([[ $((resumed1 - resumed0)) -gt 0 ]] && echo yes || echo no)
    else
        second=$(curl -s --cacert "$tls_dir/ca.crt" -H 'Connection: close' "$(url_of "$p")/__tls" "$(url_of "$p")/__tls" | tail -1)
        reused=$([[ $second = *reused=r* ]] && echo yes || echo no)
    fi
    tls_negotiated[$t]="$suite $group $sig resumed=$reused"
    say "TLS $t: ${tls_negotiated[$t]} (s_client verify $verify)"
    [[ ${sanity[$t]} = ok ]] || continue
    if [[ $suite != "TLSv1.3 $TLS_SUITE" || $group != "$TLS_GROUP" || $verify != 0 ]]; then
        sanity[$t]="negotiated $suite $group (verify $verify), not TLSv1.3 $TLS_SUITE $TLS_GROUP"
    elif [[ $reused = yes && $TLS_RESUMPTION != 1 ]] || [[ $reused = no && $TLS_RESUMPTION = 1 ]]; then
        sanity[$t]="session resumed: $reused with TLS_RESUMPTION=$TLS_RESUMPTION"
    fi
done
for t in "${!sanity[@]}"; do say "sanity $t: ${sanity[$t]}"; done

# Pre-warm the 10 000 replay keys, then check a second pass is all replays.
warm_prefix="warm-$run_id"
warm_targets=(nginx-cache)
((have_gateway)) && warm_targets+=(idemgate-redis idemgate-redis-tier idemgate-redis-log idemgate-memory "${extra_gateways[@]}")
for t in "${warm_targets[@]}"; do
    if [[ $ONLY = tls ]]; then # no replay_10k rows
        post "$(port_of "$t")" bench-replay-one >/dev/null
        continue
    fi
    "$bin/bench-client" fill --port "$(port_of "$t")" --prefix "$warm_prefix" --keys "$WARM_KEYS" \
        --connections 32 >"$work/warm-$t.json" || sanity[$t]="warm-up failed: $(cat "$work/warm-$t.json")"
    # replay_one's key, warmed once so every timed request is a replay.
    post "$(port_of "$t")" bench-replay-one >/dev/null
done
for t in nginx-cache-https idemgate-https; do # replay_one only (bench-client speaks plain HTTP)
    if [[ -n ${sanity[$t]:-} ]]; then post "$(port_of "$t")" bench-replay-one >/dev/null; fi
done
if ((have_gateway)) && [[ $ONLY != tls ]]; then
    for t in idemgate-redis idemgate-redis-tier idemgate-redis-log idemgate-memory "${extra_gateways[@]}"; do
        out=$("$bin/bench-client" fill --port "$(port_of "$t")" --prefix "$warm_prefix" --keys "$WARM_KEYS" --connections 32 || true)
        grep -q '"keys_executed_once":0,' <<<"$out" || sanity[$t]="second pass over warm keys was not all replays: $out"
    done
fi

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
    # The access log's cost: the same gateway with access_log on (issue 12: <= 5 % below off).
    plan+=("idemgate-redis-log:replay_one:replay_one" "idemgate-redis-log:first_execution:first_execution")
    # Many connections: first executions at 512 connections beside nginx at 512.
    plan+=("idemgate-redis:first_execution_512:first_execution:512" "nginx-proxy:proxy_512:first_execution:512")
fi
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
runs=$work/runs.tsv
tls_runs=$work/tls-runs.tsv # target scenario round requests new_connections resumed (- when not counted)
: >"$runs"
: >"$tls_runs"
total=$((${#plan[@]} * ROUNDS))
plan_seconds=0
for entry in "${plan[@]}"; do
    IFS=: read -r _ _ _ _ secs <<<"$entry"
    plan_seconds=$((plan_seconds + ${secs:-$DURATION} + 1))
done
say "timed runs: ${#plan[@]} target/scenario pairs x $ROUNDS rounds = ~$((plan_seconds * ROUNDS))s"
# New connections a TLS target has accepted so far, and how many of their handshakes resumed a
# session: idemgate's handshake counters, or nginx's stub_status accepts (no resumption figure;
# the read itself is a connection, which the caller subtracts).
tls_connections() {
    case $1 in
    idemgate-https) tls_gateway_handshakes | awk '{ print $1 + $2, $2 }' ;;
    *) curl -s --max-time 2 --cacert "$tls_dir/ca.crt" "$(url_of "$(port_of "$1")")/__nginx_status" |
        awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ { print $1, "-" }' ;;
    esac
}
n=0
for ((round = 1; round <= ROUNDS; round++)); do
    for entry in "${plan[@]}"; do
        IFS=: read -r target scenario script conns secs <<<"$entry"
        conns=${conns:-$CONNECTIONS}
        secs=${secs:-$DURATION}
        close=0
        [[ $scenario = *_close ]] && close=1
        wrk_env=()
        [[ -n ${scheme_of[$(port_of "$target")]:-} ]] && wrk_env=("OPENSSL_CONF=$tls_dir/pinned.cnf")
        n=$((n + 1))
        port=$(port_of "$target")
        gw_pid=$(server_pids "$target")
        redis_pid=""
        case $target in
        idemgate-redis | idemgate-redis-tier | idemgate-redis-log | idemgate-uring) redis_pid=$(pid_of redis) ;;
        idemgate-cluster) redis_pid="${cluster_pids[*]}" ;;
        idemgate-tls) redis_pid=$(pid_of redis-tls) ;;
        idemgate-https) redis_pid=$(pid_of redis) ;;
        esac
        tls0="" tls1=""
        if ((${#wrk_env[@]})); then tls0=$(tls_connections "$target"); fi
        served0=$(upstream_served)
        gw0=$(cpu_ticks $gw_pid)
        rd0=$(cpu_ticks $redis_pid)
        out=$(env "${wrk_env[@]}" BENCH_PREFIX="$scenario-$run_id-$round" BENCH_WARM_PREFIX="$warm_prefix" \
            BENCH_KEYS=$WARM_KEYS BENCH_CONNECTION_CLOSE=$close wrk -t"$WRK_THREADS" -c"$conns" -d"${secs}s" \
            --timeout 5s -s "$bench_dir/$script.lua" "$(url_of "$port")/api/orders" 2>&1) || true
        gw1=$(cpu_ticks $gw_pid)
        rd1=$(cpu_ticks $redis_pid)
        served1=$(upstream_served)
        if ((${#wrk_env[@]})); then tls1=$(tls_connections "$target"); fi
        result=$(grep -m1 '^BENCH_RESULT ' <<<"$out" | sed 's/^BENCH_RESULT //' || true)
        if [[ -z $result ]]; then
            say "wrk failed on $target $scenario: $out"
            printf '%s\t%s\t%d\t0\t0\t0\t0\t0\t0\t0\t0\t0\tFAIL: wrk produced no result\n' \
                "$target" "$scenario" "$round" >>"$runs"
            continue
        fi
        num() { sed -E "s/.*\"$1\":([0-9.]+).*/\1/" <<<"$result"; }
        rps=$(num rps) p50=$(num p50_us) p99=$(num p99_us) reqs=$(num requests)
        status_errors=$(num status)
        socket_errors=$(($(num connect) + $(num read) + $(num write) + $(num timeout)))
        upstream_delta=$((served1 - served0 - 1)) # the status request itself counts once
        gw_cpu_us=$(awk -v d=$((gw1 - gw0)) -v r="$reqs" -v t="$clk_tck" 'BEGIN { printf "%.2f", r ? d / t * 1e6 / r : 0 }')
        rd_cpu_us=$(awk -v d=$((rd1 - rd0)) -v r="$reqs" -v t="$clk_tck" 'BEGIN { printf "%.2f", r ? d / t * 1e6 / r : 0 }')
        new_conns="" resumed=""
        if [[ -n $tls0 && -n $tls1 ]]; then
            read -r c0 r0 <<<"$tls0"
            read -r c1 r1 <<<"$tls1"
            new_conns=$((c1 - c0))
            [[ $target = idemgate-https ]] && resumed=$((r1 - r0)) || new_conns=$((new_conns - 1)) # nginx: our status read
            printf '%s	%s	%d	%s	%s	%s
' "$target" "$scenario" "$round" "$reqs" "$new_conns" "${resumed:--}" >>"$tls_runs"
        fi
        verdict=ok
        if ! kill -0 "$(pid_of "$target")" 2>/dev/null; then
            verdict="FAIL: $target exited during the run (KEEP_WORK=1 keeps its log)"
        elif ((status_errors > 0)); then
            verdict="FAIL: $status_errors non-2xx answers"
        elif [[ $scenario = replay_* ]] && ((upstream_delta > 0)); then
            verdict="FAIL: $upstream_delta replays reached the upstream"
        elif [[ $scenario = first_execution* || $scenario = proxy* ]] && ((upstream_delta < reqs)); then
            verdict="FAIL: upstream served $upstream_delta of $reqs requests"
        elif [[ $scenario = mixed_* ]] && ((upstream_delta > reqs / 5)); then
            verdict="FAIL: upstream served $upstream_delta of $reqs requests (10 % expected)"
        elif ((socket_errors > reqs / 1000)); then
            verdict="FAIL: $socket_errors socket errors"
        elif ((close)) && [[ -n $new_conns ]] && ((new_conns < reqs)); then
            verdict="FAIL: $new_conns new connections for $reqs requests with Connection: close"
        elif [[ -n $resumed && $TLS_RESUMPTION != 1 ]] && ((resumed > 0)); then
            verdict="FAIL: $resumed resumed handshakes with TLS_RESUMPTION=0"
        fi
        printf '%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$scenario" "$round" "$rps" \
            "$p50" "$p99" "$reqs" "$status_errors" "$socket_errors" "$upstream_delta" "$gw_cpu_us" "$rd_cpu_us" \
            "$verdict" >>"$runs"
        say "[$n/$total] round $round $target $scenario: $rps req/s p50 ${p50}us p99 ${p99}us upstream+$upstream_delta" \
            "${new_conns:+new connections $new_conns${resumed:+ (resumed $resumed)} }$verdict"
    done
done

# ---------------------------------------------------------------- system calls per request
# strace -c -f on a short separate run per row: strace slows what it traces, so these runs are
# not timed; what they count (system calls per request) does not depend on speed. SYSCALLS=0 skips.
syscall_rows=() # target \t scenario \t requests \t calls \t calls per request \t top calls
if [[ ${SYSCALLS:-1} != 0 ]] && ! command -v strace >/dev/null; then
    say "WARNING: strace missing (SKIP_INSTALL=1?): no system calls per request table"
fi
if [[ ${SYSCALLS:-1} != 0 ]] && command -v strace >/dev/null; then
    sys_plan=(bare-beast:static:replay_one nginx-cache:replay_one:replay_one nginx-proxy:proxy:first_execution)
    ((have_gateway)) && sys_plan+=(idemgate-redis:replay_one:replay_one idemgate-redis-tier:replay_one:replay_one
        idemgate-memory:replay_one:replay_one idemgate-redis:first_execution:first_execution)
    [[ -n $uring_bin ]] && ((have_gateway)) &&
        sys_plan+=(idemgate-uring:replay_one:replay_one idemgate-uring:first_execution:first_execution)
    for entry in "${sys_plan[@]}"; do
        IFS=: read -r target scenario script <<<"$entry"
        trace=$work/strace-$target-$scenario.txt
        strace_args=()
        for p in $(server_pids "$target"); do strace_args+=(-p "$p"); done
        strace -f -c -o "$trace" "${strace_args[@]}" 2>"$trace.log" &
        strace_pid=$!
        sleep 0.5 # strace attaches to every thread before the run starts
        out=$(BENCH_PREFIX="sys-$scenario-$run_id" BENCH_WARM_PREFIX="$warm_prefix" BENCH_KEYS=$WARM_KEYS \
            wrk -t1 -c16 -d2s --timeout 5s -s "$bench_dir/$script.lua" \
            "http://127.0.0.1:$(port_of "$target")/api/orders" 2>&1) || true
        kill -INT "$strace_pid" 2>/dev/null || true
        wait "$strace_pid" 2>/dev/null || true
        reqs=$(grep -m1 '^BENCH_RESULT ' <<<"$out" | sed -E 's/.*"requests":([0-9]+).*/\1/' || true)
        calls=$(awk '$NF == "total" { print $4 }' "$trace" 2>/dev/null || true)
        top=$(awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $4, $NF }' "$trace" 2>/dev/null | sort -rn | head -4 |
            awk -v r="${reqs:-0}" '{ printf "%s%s %.2f", sep, $2, r ? $1 / r : 0; sep = ", " }')
        if [[ -n $reqs && $reqs -gt 0 && -n $calls ]]; then
            per=$(awk -v c="$calls" -v r="$reqs" 'BEGIN { printf "%.2f", c / r }')
            syscall_rows+=("$target"$'\t'"$scenario"$'\t'"$reqs"$'\t'"$calls"$'\t'"$per"$'\t'"$top")
            say "syscalls $target $scenario: $per per request ($calls for $reqs requests): $top"
        else
            say "syscalls $target $scenario: no result (strace: $(tail -1 "$trace.log" 2>/dev/null))"
        fi
    done
fi

# ---------------------------------------------------------------- duplicate storm
storm_results=() # target \t verdict \t detail json
if ((have_gateway && have_counter)) && [[ $ONLY != tls ]]; then
    start test-upstream "$bin/idemgate-test-upstream" --port 0
    counter_port=$(wait_for_log test-upstream '^listening ' | sed -E 's/.*:([0-9]+)$/\1/')
    start_gateway storm-redis gateway-redis.yaml "$counter_port"
    start_gateway storm-memory gateway-memory.yaml "$counter_port"
    executions() { curl -s --max-time 2 "http://127.0.0.1:$counter_port/__count" | sed -E 's/.*"executions":([0-9]+).*/\1/'; }
    for t in storm-redis storm-memory; do
        before=$(executions)
        # idemgate-loadtest storm: STORM_REPEATS copies of each key racing over CONNECTIONS
        # connections (409 request-in-flight asked again); it fails unless every key executed once
        # (its answers and the gateway's executed counter) and every answer repeats the first.
        admin_var="admin_${t//-/_}"
        detail=$("$bin/idemgate-loadtest" --url "http://127.0.0.1:$(port_of "$t")/api/orders" --mode storm \
            --key-prefix "storm-$run_id-$t" --keys "$STORM_KEYS" --copies "$STORM_REPEATS" \
            --connections "$CONNECTIONS" --threads 1 -H 'Content-Type: application/json' \
            --body '{"item":"book","qty":1}' --metrics "http://127.0.0.1:${!admin_var}/metrics" --json \
            2>"$work/$t.client.err") && client_ok=1 || client_ok=0
        after=$(executions)
        ran=$((after - before))
        if ((client_ok)) && ((ran == STORM_KEYS)); then
            verdict=PASS
        else
            verdict="FAIL: upstream ran $ran times for $STORM_KEYS keys; $(grep -o '"failures":\[[^]]*\]' <<<"$detail" || true) $(cat "$work/$t.client.err")"
        fi
        storm_results+=("${t/storm-/idemgate-}"$'\t'"$verdict"$'\t'"$ran"$'\t'"$detail")
        say "storm ${t/storm-/idemgate-}: $verdict (upstream executions $ran, client $detail)"
    done
fi

# ---------------------------------------------------------------- Redis memory per record
mem_json="null"
if ((have_gateway)) && [[ $ONLY != tls ]]; then
    measure_redis_memory
    mem_json="[$(awk -F'\t' -v OFS='' '{
        printf "%s{\"body_bytes\":%s,\"records\":%s,\"keys_added\":%s,\"used_memory_delta\":%s,\"bytes_per_record\":%s,", (NR > 1 ? "," : ""), $1, $2, $3, $4, $5
        gsub(/"/, "\x27", $10)
        printf "\"upstream_response_bytes\":%s,\"stored_value_bytes\":%s,\"key_bytes\":%s,\"memory_usage_sample\":%s,\"verdict\":\"%s\"}", $6, $7, $8, $9, $10
    }' "$work/memory.tsv")]"
fi

# ---------------------------------------------------------------- report
mkdir -p "$RESULTS_DIR"
stamp=$(date -u +%Y-%m-%dT%H%MZ)
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] || commit+="+dirty"
# Medians per target+scenario (the middle run of ROUNDS, mean of the middle two when even);
# any failed round fails the pair.
summary=$work/summary.tsv
awk -F'\t' '
function sorted(list, a,   n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n
}
function lowest(list,   a) { sorted(list, a); return a[1] }
function highest(list,   a) { return a[sorted(list, a)] }
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    k = $1 "\t" $2
    if (!(k in seen)) { seen[k] = 1; order[++count] = k }
    rps[k] = rps[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $6; cpu[k] = cpu[k] " " $11; rcpu[k] = rcpu[k] " " $12
    if ($13 != "ok" && !(k in verdict)) verdict[k] = $13
}
END {
    for (i = 1; i <= count; i++) {
        k = order[i]
        printf "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%.0f\t%.0f\n", k, median(rps[k]), median(p50[k]), median(p99[k]),
            median(cpu[k]), median(rcpu[k]), (k in verdict) ? verdict[k] : "ok", lowest(rps[k]), highest(rps[k])
    }
}' "$runs" >"$summary"

get() { awk -F'\t' -v t="$1" -v s="$2" -v c="$3" '$1 == t && $2 == s { print $c }' "$summary"; }
ok_rps() { # rps of a pair, or empty when it failed or did not run
    if [[ $(get "$1" "$2" 8) = ok ]]; then get "$1" "$2" 3; fi
}
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }' || echo "n/a"; }
ratio_lines=()
ratio_json=()
add_ratio() { # name value target_text met
    ratio_lines+=("| $1 | $2 | $3 | $4 |")
    ratio_json+=("{\"name\":\"$1\",\"value\":\"$2\",\"target\":\"$3\",\"met\":\"$4\"}")
}
cpu_of() { # server + redis CPU µs per request of a pair
    awk -v a="$(get "$1" "$2" 6)" -v b="$(get "$1" "$2" 7)" 'BEGIN { if (a != "") printf "%.2f", a + b }'
}
p99_ms_of() { # target scenario -> its p99 in ms (0.00 when it did not run)
    awk -v p="$(get "$1" "$2" 5)" 'BEGIN { printf "%.2f", (p == "" ? 0 : p) / 1000 }'
}
cpu_ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }' || echo n/a; }
met() { [[ $1 = n/a ]] && echo n/a || awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t) ? "yes" : "no" }'; }
lat_met() { [[ -z $1 ]] && echo n/a || awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "yes" : "no" }'; }
bare=$(ok_rps bare-beast static)
cache=$(ok_rps nginx-cache replay_one)
cache10k=$(ok_rps nginx-cache replay_10k)
nproxy=$(ok_rps nginx-proxy proxy)
hproxy=$(ok_rps haproxy proxy)
if ((have_gateway)) && [[ $ONLY != tls ]]; then # ONLY=tls: the TLS figures below only
    # Issue 12's targets: the Redis store with the local tier (replay >= 0.95x bare Beast and
    # >= 1.3x an nginx cache hit, CPU per replay <= 1.05x bare Beast's) and without it (replay >=
    # 0.85x bare Beast, first execution >= 0.65x nginx proxy at <= 2.1x its CPU); p99 at 64
    # connections <= 3 ms replay, <= 6 ms first execution. The memory store: information.
    # name target value: a row with its target, or information when the target is empty.
    at_least() { [[ -n $2 ]] && add_ratio "$1" "$3" ">= $2" "$(met "$3" "$2")" || add_ratio "$1" "$3" "(info)" "-"; }
    at_most() { # a CPU ratio or a p99 (lower is better); $4: the text of an information row
        if [[ -z $2 ]]; then
            add_ratio "$1" "$3" "${4:-(info: lower is cheaper)}" "-"
        else
            add_ratio "$1" "$3" "<= $2" "$([[ $3 = n/a ]] && echo n/a || lat_met "$3" "$2")"
        fi
    }
    for g in idemgate-redis idemgate-redis-tier idemgate-memory; do
        t_bare="" t_cache="" t_first="" t_cpu_bare="" t_cpu_first="" t_p99_replay="" t_p99_first=""
        case $g in
        idemgate-redis) t_bare=0.85 t_first=0.65 t_cpu_first=2.1 t_p99_replay=3 t_p99_first=6 ;;
        idemgate-redis-tier) t_bare=0.95 t_cache=1.3 t_cpu_bare=1.05 t_p99_replay=3 t_p99_first=6 ;;
        esac
        rep=$(ok_rps $g replay_one) rep10k=$(ok_rps $g replay_10k) first=$(ok_rps $g first_execution)
        at_least "$g replay / bare Beast" "$t_bare" "$(ratio "$rep" "$bare")"
        at_least "$g replay / nginx cache hit" "$t_cache" "$(ratio "$rep" "$cache")"
        at_least "$g replay 10k keys / nginx cache hit 10k keys" "" "$(ratio "$rep10k" "$cache10k")"
        at_least "$g first execution / nginx proxy" "$t_first" "$(ratio "$first" "$nproxy")"
        at_least "$g first execution / haproxy" "" "$(ratio "$first" "$hproxy")"
        at_most "$g CPU per replay / bare Beast CPU per answer" "$t_cpu_bare" \
            "$(cpu_ratio "$(cpu_of $g replay_one)" "$(cpu_of bare-beast static)")"
        at_most "$g CPU per replay / nginx cache CPU per hit" "" \
            "$(cpu_ratio "$(cpu_of $g replay_one)" "$(cpu_of nginx-cache replay_one)")"
        at_most "$g CPU (gateway + Redis) per first execution / nginx proxy CPU per request" "$t_cpu_first" \
            "$(cpu_ratio "$(cpu_of $g first_execution)" "$(cpu_of nginx-proxy proxy)")"
        at_most "$g CPU per first execution / haproxy CPU per request" "" \
            "$(cpu_ratio "$(cpu_of $g first_execution)" "$(cpu_of haproxy proxy)")"
        at_most "$g replay p99 (ms)" "$t_p99_replay" "$(p99_ms_of $g replay_one)" "(info)"
        at_most "$g first execution p99 (ms)" "$t_p99_first" "$(p99_ms_of $g first_execution)" "(info)"
    done
    # What the client and the machine add to every p99 here: bare Beast's own.
    add_ratio "bare Beast p99 (ms), for reference" "$(p99_ms_of bare-beast static)" "(info)" "-"
    # The proxying alone (idemgate-proxy: no idempotency on the route) beside nginx-proxy, and what
    # idempotency adds on top of it per first execution (gateway + Redis CPU).
    r=$(ratio "$(ok_rps idemgate-proxy proxy)" "$nproxy")
    add_ratio "idemgate-proxy (no idempotency) / nginx proxy" "$r" "(info)" "-"
    r=$(cpu_ratio "$(cpu_of idemgate-proxy proxy)" "$(cpu_of nginx-proxy proxy)")
    add_ratio "idemgate-proxy CPU per request / nginx proxy CPU per request" "$r" "(info: lower is cheaper)" "-"
    r=$(ratio "$(ok_rps idemgate-redis first_execution)" "$(ok_rps idemgate-proxy proxy)")
    add_ratio "idemgate-redis first execution / idemgate-proxy" "$r" "(info)" "-"
    a=$(cpu_of idemgate-redis first_execution) b=$(cpu_of idemgate-proxy proxy)
    r=$([[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a - b }' || echo n/a)
    add_ratio "idempotency's CPU per first execution (µs): idemgate-redis (gateway + Redis) − idemgate-proxy" "$r" "(info)" "-"
    # The access log on vs off (issue 12: at most 5 % below).
    r=$(ratio "$(ok_rps idemgate-redis-log replay_one)" "$(ok_rps idemgate-redis replay_one)")
    add_ratio "access log on / off, replay (idemgate-redis)" "$r" ">= 0.95" "$(met "$r" 0.95)"
    r=$(ratio "$(ok_rps idemgate-redis-log first_execution)" "$(ok_rps idemgate-redis first_execution)")
    add_ratio "access log on / off, first execution (idemgate-redis)" "$r" ">= 0.95" "$(met "$r" 0.95)"
    # 512 connections (issue 12: report beside nginx).
    r=$(ratio "$(ok_rps idemgate-redis first_execution_512)" "$(ok_rps nginx-proxy proxy_512)")
    add_ratio "idemgate-redis first execution / nginx proxy, 512 connections" "$r" "(info)" "-"
    add_ratio "idemgate-redis first execution p99 at 512 connections (ms)" "$(p99_ms_of idemgate-redis first_execution_512)" "(info)" "-"
    add_ratio "nginx proxy p99 at 512 connections (ms)" "$(p99_ms_of nginx-proxy proxy_512)" "(info)" "-"
    # Redis modes beside standalone Redis (issue 9): the same scenarios, as ratios.
    for g in "${extra_gateways[@]}"; do
        r=$(ratio "$(ok_rps $g replay_10k)" "$(ok_rps idemgate-redis replay_10k)")
        add_ratio "$g replay 10k keys / idemgate-redis replay 10k keys" "$r" "(info)" "-"
        r=$(ratio "$(ok_rps $g first_execution)" "$(ok_rps idemgate-redis first_execution)")
        add_ratio "$g first execution / idemgate-redis first execution" "$r" "(info)" "-"
        r=$(cpu_ratio "$(cpu_of $g first_execution)" "$(cpu_of idemgate-redis first_execution)")
        add_ratio "$g CPU (gateway + Redis) per first execution / idemgate-redis" "$r" "(info: lower is cheaper)" "-"
    done
    if [[ $mem_json != null ]]; then
        # Information, not a goal: what a record costs is Redis' allocator and dict overhead as
        # much as ours (bench/README.md).
        while IFS=$'\t' read -r size _ _ _ per_record response_bytes _ _ _ verdict; do
            add_ratio "Redis bytes per record, $size B body ($response_bytes B response)" "$per_record" \
                "(info: response + $(awk -v a="$per_record" -v b="$response_bytes" 'BEGIN { printf "%.0f", a - b }') B)" \
                "$([[ $verdict = ok ]] && echo - || echo FAIL)"
        done <"$work/memory.tsv"
    fi
fi
# TLS termination (TLS_TARGETS): idemgate-https beside nginx with TLS on the same work, with
# keep-alive and with a new connection per request; then what TLS adds to each side.
tls_summary=$work/tls-summary.tsv # target scenario new_connections_per_request(median) resumed(sum or -)
: >"$tls_summary"
if ((${#https_targets[@]})); then
    awk -F'\t' '
    function median(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        k = $1 "\t" $2
        if (!(k in seen)) { seen[k] = 1; order[++count] = k }
        per[k] = per[k] " " ($4 > 0 ? $5 / $4 : 0)
        if ($6 == "-") resumed[k] = "-"; else if (resumed[k] != "-") resumed[k] += $6
    }
    END { for (i = 1; i <= count; i++) printf "%s\t%.3f\t%s\n", order[i], median(per[order[i]]), resumed[order[i]] }' \
        "$tls_runs" >"$tls_summary"
    for mode in "keep-alive:" "new connection per request:_close"; do
        label=${mode%%:*} suffix=${mode#*:}
        r=$(ratio "$(ok_rps idemgate-https replay_one$suffix)" "$(ok_rps nginx-cache-https replay_one$suffix)")
        add_ratio "TLS, $label: idemgate-https replay / nginx-cache-https hit" "$r" "(info)" "-"
        r=$(cpu_ratio "$(cpu_of idemgate-https replay_one$suffix)" "$(cpu_of nginx-cache-https replay_one$suffix)")
        add_ratio "TLS, $label: idemgate-https CPU (gateway + Redis) per replay / nginx-cache-https CPU per hit" "$r" "(info: lower is cheaper)" "-"
        r=$(ratio "$(ok_rps idemgate-https first_execution$suffix)" "$(ok_rps nginx-proxy-https proxy$suffix)")
        add_ratio "TLS, $label: idemgate-https first execution / nginx-proxy-https" "$r" "(info)" "-"
        r=$(cpu_ratio "$(cpu_of idemgate-https first_execution$suffix)" "$(cpu_of nginx-proxy-https proxy$suffix)")
        add_ratio "TLS, $label: idemgate-https CPU (gateway + Redis) per first execution / nginx-proxy-https CPU per request" "$r" "(info: lower is cheaper)" "-"
    done
    # What TLS termination adds on each side, keep-alive: the same gateway / nginx work without it.
    r=$(ratio "$(ok_rps idemgate-https replay_one)" "$(ok_rps idemgate-redis replay_one)")
    add_ratio "TLS, keep-alive: idemgate-https replay / idemgate-redis replay (plain)" "$r" "(info)" "-"
    r=$(ratio "$(ok_rps nginx-cache-https replay_one)" "$(ok_rps nginx-cache replay_one)")
    add_ratio "TLS, keep-alive: nginx-cache-https hit / nginx-cache hit (plain)" "$r" "(info)" "-"
    r=$(ratio "$(ok_rps idemgate-https first_execution)" "$(ok_rps idemgate-redis first_execution)")
    add_ratio "TLS, keep-alive: idemgate-https first execution / idemgate-redis first execution (plain)" "$r" "(info)" "-"
    r=$(ratio "$(ok_rps nginx-proxy-https proxy)" "$(ok_rps nginx-proxy proxy)")
    add_ratio "TLS, keep-alive: nginx-proxy-https / nginx-proxy (plain)" "$r" "(info)" "-"
    # A new connection's cost: the server's CPU per request with Connection: close minus with
    # keep-alive, on the same work (TCP accept and close, plus the TLS handshake on https); the
    # handshake's share: the https figure minus the plain one.
    conn_cost() { # target scenario -> µs, or empty
        local a b
        a=$(get "$1" "${2}_close" 6) b=$(get "$1" "$2" 6)
        [[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a - b }'
    }
    for pair in idemgate-redis:replay_one nginx-cache:replay_one idemgate-https:replay_one nginx-cache-https:replay_one \
        idemgate-https:first_execution nginx-proxy-https:proxy; do
        t=${pair%%:*} sc=${pair#*:}
        c=$(conn_cost "$t" "$sc") || continue
        add_ratio "new connection: $t server CPU per connection, $sc (µs, close − keep-alive)" "$c" "(info)" "-"
    done
    for pair in idemgate-https:idemgate-redis nginx-cache-https:nginx-cache; do
        tls_c=$(conn_cost "${pair%%:*}" replay_one) || continue
        plain_c=$(conn_cost "${pair#*:}" replay_one) || continue
        add_ratio "TLS handshake: ${pair%%:*} server CPU per handshake (µs, its new-connection cost − ${pair#*:}'s)" \
            "$(awk -v a="$tls_c" -v b="$plain_c" 'BEGIN { printf "%.1f", a - b }')" "(info)" "-"
    done
fi

md=$RESULTS_DIR/latest.md
{
    echo "# idemgate bench — $stamp"
    echo
    echo "Commit $commit, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')." \
        "idemgate's $("$bin/idemgate" --version 2>/dev/null | grep -m1 '^allocator:' || echo 'allocator: unknown')."
    echo "Command: \`${ONLY:+ONLY=$ONLY }bench/run.sh\` (DURATION=${DURATION}s per run, ROUNDS=$ROUNDS interleaved, wrk -t$WRK_THREADS -c$CONNECTIONS," \
        "servers with $THREADS threads/workers, $(nproc) cores)."
    echo "Load average (1, 5, 15 min) before the runs: $load_start; at the end: $load_end. The bench itself keeps"
    echo "about 2-3 runnable; more means other work shared the cores during the runs."
    echo "Medians over $ROUNDS rounds. Every target sits in front of the same nginx upstream (201 + 33-byte JSON)."
    echo "The machine is shared: other processes (builds) running at the same time lower every figure; compare ratios."
    echo
    echo "| target | scenario | req/s (median) | req/s min–max | p50 µs | p99 µs | server CPU µs/req | redis CPU µs/req | check |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
    while IFS=$'\t' read -r t s r p50 p99 cpu rcpu v lo hi; do
        [[ $t = idemgate-redis || $t = idemgate-redis-tier || $t = idemgate-redis-log || $t = idemgate-uring || $t = idemgate-cluster || $t = idemgate-tls || $t = idemgate-https ]] || rcpu=""
        if [[ $v = ok ]]; then
            echo "| $t | $s | $r | $lo–$hi | $p50 | $p99 | $cpu | $rcpu | ok |"
        else
            echo "| $t | $s | FAIL | | | | | | $v |"
        fi
    done <"$summary"
    if ((${#storm_results[@]})); then
        echo
        echo "Duplicate storm: $STORM_KEYS new keys x $STORM_REPEATS copies over $CONNECTIONS connections (\`idemgate-loadtest --mode storm\`), against the counting test upstream."
        echo
        echo "| target | result | upstream executions | client counts |"
        echo "|---|---|---:|---|"
        for s in "${storm_results[@]}"; do
            IFS=$'\t' read -r t v ran d <<<"$s"
            echo "| $t | $v | $ran | \`$d\` |"
        done
    fi
    if ((${#syscall_rows[@]})); then
        echo
        echo "System calls per request (\`strace -c -f\` on a separate 2 s run, wrk -t1 -c16; strace slows the target, so no timing here):"
        echo
        echo "| target | scenario | requests | system calls | per request | most frequent (per request) |"
        echo "|---|---|---:|---:|---:|---|"
        for r in "${syscall_rows[@]}"; do
            IFS=$'\t' read -r t sc rq c per top <<<"$r"
            echo "| $t | $sc | $rq | $c | $per | $top |"
        done
    fi
    if ((${#https_targets[@]})); then
        echo
        echo "TLS termination on the client hop (\`TLS_TARGETS=1\`, ${TLS_DURATION}s per run): one EC P-256 certificate for every target,"
        echo "TLS 1.3 with $TLS_SUITE and $TLS_GROUP pinned on both sides (nginx: \`ssl_conf_command Ciphersuites\`,"
        echo "\`ssl_ecdh_curve\`; idemgate, which has no cipher setting, and wrk: an OpenSSL configuration in \`OPENSSL_CONF\`);"
        if [[ $TLS_RESUMPTION = 1 ]]; then
            echo "session tickets on (\`TLS_RESUMPTION=1\`): wrk resumes the session on every reconnect, so \`_close\` rows are resumed handshakes."
        else
            echo "no session tickets or cache on either side (\`TLS_RESUMPTION=0\`): every new connection is a full handshake."
        fi
        echo "\`_close\` rows send \`Connection: close\`: a new connection (and on https a new handshake) per request, also on the plain"
        echo "\`nginx-cache\` and \`idemgate-redis\` replay_one_close rows, which give a new connection's cost without TLS; the other rows keep"
        echo "$CONNECTIONS connections open. New connections per request counted around each run (idemgate: \`idemgate_tls_handshakes_total\`;"
        echo "nginx: \`stub_status\` accepts, which has no resumption figure):"
        echo
        echo "| target | scenario | new connections per request (median) | resumed handshakes (all rounds) |"
        echo "|---|---|---:|---:|"
        while IFS=$'\t' read -r t sc per res; do echo "| $t | $sc | $per | $res |"; done <"$tls_summary"
        echo
        echo "Negotiated with an unpinned \`openssl s_client\` before the runs (protocol, suite, key exchange, signature; resumed: whether"
        echo "the second of two connections of one curl resumed the first one's session):"
        echo
        for t in "${https_targets[@]}"; do echo "- $t: ${tls_negotiated[$t]:-not checked}"; done
    fi
    if ((${#ratio_lines[@]})); then
        echo
        echo "| ratio / figure | measured | target | met |"
        echo "|---|---:|---|---|"
        printf '%s\n' "${ratio_lines[@]}"
    fi
    echo
    echo "Server CPU per request: utime+stime of the target's own processes (the gateway; nginx master and workers;"
    echo "haproxy; not the upstream behind a proxy), all threads, read from /proc (what pidstat reads) before and"
    echo "after a run, divided by the requests wrk completed. It depends far less on other load than req/s does."
    echo "Redis CPU is the redis-server behind idemgate-redis; the CPU ratios count it with the gateway. Redis memory: INFO used_memory delta over $RECORDS records per body size created through the gateway into an empty redis-server."
    echo
    echo "Sanity checks before the runs:"
    for t in "${!sanity[@]}"; do echo "- $t: ${sanity[$t]}"; done | sort
    ((have_gateway)) || echo "- idemgate: NOT BUILT, gateway targets skipped"
} >"$md"

json=$RESULTS_DIR/$stamp.json
{
    printf '{"date":"%s","commit":"%s","command":"bench/run.sh","duration_s":%s,"rounds":%s,"wrk_threads":%s,"connections":%s,"server_threads":%s,"cores":%s,"loadavg_start":"%s","loadavg_end":"%s",\n' \
        "$stamp" "$commit" "$DURATION" "$ROUNDS" "$WRK_THREADS" "$CONNECTIONS" "$THREADS" "$(nproc)" "$load_start" "$load_end"
    echo '"medians":['
    awk -F'\t' 'BEGIN { sep = "" } { printf "%s{\"target\":\"%s\",\"scenario\":\"%s\",\"rps\":%s,\"p50_us\":%s,\"p99_us\":%s,\"server_cpu_us_per_req\":%s,\"redis_cpu_us_per_req\":%s,\"check\":\"%s\",\"rps_min\":%s,\"rps_max\":%s}", sep, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10; sep = ",\n" }' "$summary"
    echo '],'
    echo '"runs":['
    awk -F'\t' 'BEGIN { sep = "" } { printf "%s{\"target\":\"%s\",\"scenario\":\"%s\",\"round\":%s,\"rps\":%s,\"p50_us\":%s,\"p99_us\":%s,\"requests\":%s,\"non_2xx\":%s,\"socket_errors\":%s,\"upstream_requests\":%s,\"server_cpu_us_per_req\":%s,\"redis_cpu_us_per_req\":%s,\"check\":\"%s\"}", sep, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13; sep = ",\n" }' "$runs"
    echo '],'
    echo '"storm":['
    sep=""
    for s in "${storm_results[@]}"; do
        IFS=$'\t' read -r t v ran d <<<"$s"
        printf '%s{"target":"%s","verdict":"%s","upstream_executions":%s,"client":%s}' "$sep" "$t" "${v//\"/\'}" "$ran" "${d:-null}"
        sep=$',\n'
    done
    echo '],'
    echo "\"redis_memory\":$mem_json,"
    if ((${#https_targets[@]})); then
        printf '"tls":{"suite":"%s","group":"%s","resumption":%s,"duration_s":%s,"negotiated":{' \
            "$TLS_SUITE" "$TLS_GROUP" "$TLS_RESUMPTION" "$TLS_DURATION"
        sep=""
        for t in "${https_targets[@]}"; do printf '%s"%s":"%s"' "$sep" "$t" "${tls_negotiated[$t]:-}"; sep=","; done
        printf '},"connections":['
        awk -F'\t' 'BEGIN { sep = "" } { printf "%s{\"target\":\"%s\",\"scenario\":\"%s\",\"new_connections_per_request\":%s,\"resumed\":\"%s\"}", sep, $1, $2, $3, $4; sep = "," }' "$tls_summary"
        echo ']},'
    fi
    echo '"ratios":['
    (IFS=,; echo "${ratio_json[*]}")
    echo ']}'
} >"$json"

if command -v gnuplot >/dev/null; then
    # label, req/s, colour: anchors blue, idemgate-redis orange, idemgate-memory green
    awk -F'\t' '$8 == "ok" {
        colour = $1 == "idemgate-redis" ? 14254635 : ($1 == "idemgate-memory" ? 4168786 : 3894952)
        printf "\"%s\\n%s\" %s %s\n", $1, $2, $3, colour
    }' "$summary" >"$work/chart.dat"
    bars=$(wc -l <"$work/chart.dat")
    gnuplot <<EOF 2>"$work/gnuplot.err" || say "gnuplot failed: $(cat "$work/gnuplot.err")"
set terminal svg size 1100,520 dynamic noenhanced font "sans,11" background rgb "white"
set output "$RESULTS_DIR/latest.svg"
set title "idemgate bench $stamp: req/s, median of $ROUNDS (wrk -t$WRK_THREADS -c$CONNECTIONS, $(nproc) cores)\nblue: anchors, orange: idemgate with Redis, green: idemgate with the memory store"
set style fill solid 0.85 border -1
set boxwidth 0.75
set xrange [-0.6:$bars - 0.4]
set xtics rotate by -40 font ",9" nomirror
set ytics nomirror
set grid ytics
set key off
set ylabel "requests / second"
set yrange [0:*]
set bmargin 7
plot "$work/chart.dat" using 0:2:3:xtic(1) with boxes notitle lc rgb variable, \
     "" using 0:2:(sprintf("%.1fk", \$2 / 1000)) with labels offset 0,0.7 font ",9" notitle
EOF
fi

# READMEs that carry the markers get the latest table between them (bench/README.md does).
for readme in "$root/README.md" "$bench_dir/README.md"; do
    [[ $RESULTS_DIR = "$bench_dir/results" ]] || break # a scratch RESULTS_DIR leaves the READMEs alone
    grep -q '^<!-- bench:latest:start -->$' "$readme" 2>/dev/null || continue
    grep -q '^<!-- bench:latest:end -->$' "$readme" || continue
    awk -v md="$md" '
        /^<!-- bench:latest:start -->$/ {
            print
            while ((getline line < md) > 0) print (line ~ /^# / ? "###" substr(line, 2) : line)
            skip = 1
            next
        }
        /^<!-- bench:latest:end -->$/ { skip = 0 }
        !skip { print }' "$readme" >"$work/readme.new" && cat "$work/readme.new" >"$readme"
    say "updated the latest table in $readme"
done

cat "$md"
say "wrote $md and $json"
