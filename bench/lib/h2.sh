# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/h2.sh: the HTTP/2 rows (ONLY=h2): idemgate terminating TLS with h2 by ALPN beside
# nginx 1.22 listening "ssl http2" (Debian 12's nginx has no "http2 on"), the same certificate and
# pinned TLS 1.3 suite on both sides, plain HTTP/1.1 to the same upstream. Replays: h2load, one
# Idempotency-Key on every request (nginx-cache-h2 serves them from proxy_cache). First
# executions: bench-h2-load, a new key per request (h2load's fields are fixed), against the gateway
# and nginx-proxy-h2. Each at -c H2_CONNECTIONS with -m H2_STREAMS (many streams per connection)
# and -m 1, interleaved over ROUNDS rounds; req/s and server CPU per request, medians.
# Sourced by run.sh; reads its settings and servers.sh's helpers.
# shellcheck disable=SC2154 # settings, paths and helpers come from run.sh and servers.sh

H2_DURATION=${H2_DURATION:-5}
H2_CONNECTIONS=${H2_CONNECTIONS:-16}
H2_STREAMS=${H2_STREAMS:-32}

start_h2_targets() {
    pick_port upstream_port
    start_nginx upstream upstream.conf "$upstream_port"
    make_tls_files
    pick_port port_nginx_cache_h2
    start_nginx nginx-cache-h2 nginx-cache.conf "$port_nginx_cache_h2" "$upstream_port" h2
    pick_port port_nginx_proxy_h2
    start_nginx nginx-proxy-h2 nginx-proxy.conf "$port_nginx_proxy_h2" "$upstream_port" h2
    pick_port redis_port
    mkdir -p "$work/redis"
    start redis redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$work/redis" --daemonize no --protected-mode yes
    wait_for_log redis 'Ready to accept connections' >/dev/null
    # http2 is on by default on a TLS listener.
    OPENSSL_CONF=$tls_dir/pinned.cnf start_gateway idemgate-https gateway-https.yaml "$upstream_port" "$redis_port" \
        "CERT_FILE=$tls_dir/server.crt" "KEY_FILE=$tls_dir/server.key"
    local i
    for ((i = 0; i < 300; i++)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$admin_idemgate_https/readyz") = 200 ]] && break
        sleep 0.05
    done
    local t v
    for t in idemgate-https nginx-cache-h2 nginx-proxy-h2; do
        v=$(curl -s -k --http2 -o /dev/null -w '%{http_version}' -X POST -H 'Idempotency-Key: h2-check' \
            -d '{}' "https://127.0.0.1:$(port_of "$t")/api/orders")
        [[ $v = 2 ]] || die "$t does not answer over HTTP/2 (curl saw HTTP/$v)"
    done
    say "h2 targets: idemgate-https $(port_of idemgate-https), nginx-cache-h2 $port_nginx_cache_h2," \
        "nginx-proxy-h2 $port_nginx_proxy_h2, upstream $upstream_port"
}

# h2_run ROUND TARGET SCENARIO STREAMS: one run; appends "target scenario streams round rps
# cpu_us_per_request non_2xx" to $work/h2-runs.tsv.
h2_run() {
    local round=$1 target=$2 scenario=$3 streams=$4 port out requests rps bad pids c0 c1 cpu
    port=$(port_of "$target")
    read -r -a pids <<<"$(server_pids "$target")"
    c0=$(cpu_ticks "${pids[@]}")
    if [[ $scenario = replay ]]; then
        # The key's first request before the run: every request of the run is a replay.
        curl -s -k -o /dev/null -X POST -H 'content-type: application/json' -H "idempotency-key: h2-replay-$run_id" \
            --data-binary "@$work/h2-body.json" "https://127.0.0.1:$port/api/orders"
        read -r -a pids <<<"$(server_pids "$target")"
        c0=$(cpu_ticks "${pids[@]}")
        out=$(h2load -D "$H2_DURATION" -c "$H2_CONNECTIONS" -m "$streams" -t 1 --tls13-ciphers="$TLS_SUITE" \
            -H 'content-type: application/json' -H "idempotency-key: h2-replay-$run_id" -d "$work/h2-body.json" \
            "https://127.0.0.1:$port/api/orders" 2>&1) || die "h2load failed against $target: $out"
        requests=$(sed -nE 's/^requests: .* ([0-9]+) succeeded.*/\1/p' <<<"$out")
        rps=$(sed -nE 's/^finished in [^,]*, ([0-9.]+) req\/s.*/\1/p' <<<"$out")
        bad=$(sed -nE 's/^status codes: [0-9]+ 2xx, [0-9]+ 3xx, ([0-9]+) 4xx, ([0-9]+) 5xx.*/\1 \2/p' <<<"$out" | awk '{print $1 + $2}')
    else
        out=$("$bin/bench-h2-load" --port "$port" --prefix "h2-first-$run_id-$round-$target-$streams" \
            --connections "$H2_CONNECTIONS" --streams "$streams" --seconds "$H2_DURATION" --path /api/orders \
            --body '{"item":"book","qty":1}') || die "bench-h2-load failed against $target: $out"
        requests=$(jq -r .requests <<<"$out")
        rps=$(jq -r .rps <<<"$out")
        bad=$(jq -r '[.statuses | to_entries[] | select(.key | test("^2") | not) | .value] | add // 0' <<<"$out")
    fi
    c1=$(cpu_ticks "${pids[@]}")
    cpu=$(awk -v t=$((c1 - c0)) -v hz="$clk_tck" -v n="${requests:-0}" 'BEGIN { printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0) }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$scenario" "$streams" "$round" "${rps:-0}" "$cpu" "${bad:-?}" >>"$work/h2-runs.tsv"
    say "h2 $target $scenario -m $streams round $round: ${rps:-?} req/s, $cpu us CPU/request, non-2xx ${bad:-?}"
}

run_h2_rows() {
    printf '{"item":"book","qty":1}' >"$work/h2-body.json"
    : >"$work/h2-runs.tsv"
    local round entry target scenario streams
    local plan=()
    for streams in "$H2_STREAMS" 1; do
        plan+=("idemgate-https:replay:$streams" "nginx-cache-h2:replay:$streams"
            "idemgate-https:first_execution:$streams" "nginx-proxy-h2:first_execution:$streams")
    done
    say "h2 rows: ${#plan[@]} runs x $ROUNDS rounds x ${H2_DURATION}s, -c $H2_CONNECTIONS"
    for ((round = 1; round <= ROUNDS; round++)); do
        for entry in "${plan[@]}"; do
            IFS=: read -r target scenario streams <<<"$entry"
            h2_run "$round" "$target" "$scenario" "$streams"
        done
    done
}

# The medians per row, as a Markdown table on stdout.
h2_table() {
    echo "| target | scenario | h2load/bench-h2-load | req/s (median) | server CPU µs/request (median) | non-2xx |"
    echo "|---|---|---|---:|---:|---:|"
    sort -k1,1 -k2,2 -k3,3n "$work/h2-runs.tsv" | awk -F'\t' -v c="$H2_CONNECTIONS" '
        function median(list,   n, a, i, t) {
            n = split(list, a, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        { k = $1 "\t" $2 "\t" $3; if (!(k in rps)) order[++m] = k; rps[k] = rps[k] " " $5; cpu[k] = cpu[k] " " $6; bad[k] += $7 }
        END { for (i = 1; i <= m; i++) { split(order[i], f, "\t")
            printf "| %s | %s | -c %s -m %s | %.0f | %.1f | %d |\n", f[1], f[2], c, f[3], median(rps[order[i]]), median(cpu[order[i]]), bad[order[i]] } }'
}
