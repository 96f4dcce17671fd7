# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/servers.sh: the processes bench/run.sh owns and starts. Sourced by run.sh (at its top
# level, so the declarations below are globals); reads run.sh's settings (THREADS, TLS_*, ...) and
# paths ($work, $bench_dir, $bin, $NGINX, $HAPROXY).
# shellcheck disable=SC2154 # settings and paths are assigned by run.sh before it calls anything here

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- processes we own
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

# The machine layout (PIN=1, set by run.sh): the servers under test on CPU 1, the load generator
# and what stands behind the servers (upstream, Redis, collector) on CPU 0, each as a taskset
# prefix; empty without PIN (every process free on every CPU).
# shellcheck disable=SC2034 # client_cpu: read by measure.sh
server_cpu=() side_cpu=() client_cpu=()
started_names=() # every name start was given, in order
# check_layout: under PIN=1, whether every process start ran sits on its CPU (sanity[layout]).
check_layout() {
    [[ $PIN = 1 ]] || return 0
    local name want have wrong=""
    for name in "${started_names[@]}"; do
        if [[ $(placement_of "$name") = side ]]; then want=${side_cpu[-1]}; else want=${server_cpu[-1]}; fi
        have=$(taskset -pc "$(pid_of "$name")" 2>/dev/null | sed 's/.*: //')
        [[ $have = "$want" ]] || wrong+="${wrong:+, }$name on CPU ${have:-?} (not $want)"
    done
    sanity[layout]=${wrong:-ok}
}
# placement_of NAME: "side" for the processes behind the servers under test, "server" for the rest.
placement_of() {
    case $1 in
    upstream | collector | bodies | test-upstream | redis | redis-* | cluster-*) echo side ;;
    *) echo server ;;
    esac
}

# Starts "$@" in the background with its output in $work/<name>.log and remembers its PID; under
# PIN=1 on its CPU (placement_of: taskset execs the command, so $! is the server's own PID).
start() {
    local name=$1 cpu=()
    shift
    if [[ $(placement_of "$name") = side ]]; then cpu=("${side_cpu[@]}"); else cpu=("${server_cpu[@]}"); fi
    "${cpu[@]}" "$@" >"$work/$name.log" 2>&1 &
    owned_pids+=("$!")
    started_names+=("$name")
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

# A fifth argument "tls" terminates TLS (nginx-tls.inc, the bench certificate from make_tls_files);
# "h2" does too and offers HTTP/2 by ALPN ("listen ... ssl http2", nginx 1.22).
start_nginx() {
    local name=$1 template=$2 port=$3 upstream_port=${4:-0} tls=${5:-}
    local dir=$work/$name listen_ssl="" tls_include="" scheme=http resumption
    mkdir -p "$dir"
    render nginx-common.inc "$dir/nginx-common.inc" "DIR=$dir"
    if [[ $tls = tls || $tls = h2 ]]; then
        if [[ $TLS_RESUMPTION = 1 ]]; then
            resumption="ssl_session_tickets on; ssl_session_cache shared:bench_tls:10m;"
        else
            resumption="ssl_session_tickets off; ssl_session_cache off; ssl_conf_command NumTickets 0;"
        fi
        render nginx-tls.inc "$dir/nginx-tls.inc" "CERT_FILE=$tls_dir/server.crt" "KEY_FILE=$tls_dir/server.key" \
            "TLS_SUITE=$TLS_SUITE" "TLS_GROUP=$TLS_GROUP" "RESUMPTION=$resumption"
        listen_ssl=" ssl" tls_include="include $dir/nginx-tls.inc;" scheme=https
        [[ $tls = h2 ]] && listen_ssl=" ssl http2"
    fi
    # ANSWER_LARGE: the upstream's answer to the _1k rows (upstream.conf; other templates have no such placeholder).
    render "$template" "$dir/nginx.conf" "DIR=$dir" "PORT=$port" "UPSTREAM_PORT=$upstream_port" \
        "WORKERS=$THREADS" "USER_LINE=$nginx_user_line" "LISTEN_SSL=$listen_ssl" "TLS_INCLUDE=$tls_include" \
        "ANSWER_LARGE=$(json_body "$LARGE_ANSWER_BYTES")"
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

# ---------------------------------------------------------------- the targets
declare -A scheme_of=() # port -> https (absent: http)
# Starts every target of the full run (the upstream, the anchors, the gateways in their bench
# configurations, Redis in each mode, the https twins) on free ports, and waits until each answers.
# Sets upstream_port, port_<target>, admin_<gateway>, redis_port, cluster_pids, extra_gateways
# (the Redis-mode and io_uring gateways that run) and https_targets.
start_targets() {
    local i ok n g t node_port bus_port nodes_yaml
    pick_port upstream_port
    # shellcheck disable=SC2034 # read as port_of upstream
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
        # Tracing's collector stand-in: an nginx of its own, so the upstream's request count
        # (replays never reach it) stays the gateways' alone.
        pick_port collector_port
        start_nginx collector upstream.conf "$collector_port"
        start_gateway idemgate-redis-traced gateway-redis-traced.yaml "$upstream_port" "${redis_port}" \
            "COLLECTOR_PORT=$collector_port"
        start_gateway idemgate-memory gateway-memory.yaml "$upstream_port"
        start_gateway idemgate-proxy gateway-proxy.yaml "$upstream_port"
    fi
    extra_gateways=()
    if ((have_gateway)) && [[ $REDIS_MODES == *cluster* ]]; then
        # Three primaries, no replicas, each with its own bus port.
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
        # shellcheck disable=SC2034 # read by url_of and timed_run
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
}
