# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/checks.sh: correctness before speed. Before the timed runs each target answers and
# each cache or gateway replays (sanity), the https targets negotiate the pinned TLS, the replay
# keys are warmed (and a second pass must be all replays); after them, the duplicate storm.
# Sourced by run.sh after bench/lib/servers.sh; reads the targets start_targets set.
# shellcheck disable=SC2154 # settings, ports and PIDs are assigned by run.sh and servers.sh

declare -A sanity=() # target -> "ok" or the reason it is not
declare -A tls_negotiated=() # target -> "TLSv1.3 TLS_AES_128_GCM_SHA256 X25519 ECDSA resumed=no"
body='{"item":"book","qty":1}'
# The _1k rows' request (bench/common.lua with BENCH_BODY_BYTES): the same object padded to 1 KiB,
# sent to /api/orders-1k, which the upstream answers with LARGE_ANSWER_BYTES.
large_body='{"item":"book","qty":1,"note":"'
printf -v large_pad '%*s' $((LARGE_REQUEST_BYTES - ${#large_body} - 2)) ''
large_body+="${large_pad// /x}\"}"
url_of() { # port -> base URL (https for the TLS targets)
    echo "${scheme_of[$1]:-http}://127.0.0.1:$1"
}
post() { # port key [large] -> headers+body of the answer (large: the _1k rows' request and path)
    local data=$body path=/api/orders
    [[ ${3:-} = large ]] && data=$large_body path=/api/orders-1k
    curl -s -i --max-time 5 ${tls_dir:+--cacert "$tls_dir/ca.crt"} -X POST -H 'Content-Type: application/json' \
        -H "Idempotency-Key: $2" --data-binary "$data" "$(url_of "$1")$path" || echo "curl failed with status $?"
}
check_replay() { # target port replay_header_regex [large]: sanity[target] (large: sanity["target 1k"])
    local target=$1 port=$2 marker=$3 size=${4:-} first second key="sanity-$run_id" entry=$1 answer
    [[ $size = large ]] && entry="$target 1k" key="sanity-1k-$run_id"
    first=$(post "$port" "$key" "$size")
    second=$(post "$port" "$key" "$size")
    answer=$(sed '1,/^\r$/d' <<<"$first")
    if ! grep -qE '^HTTP/(1.1|2) 201' <<<"$first"; then
        sanity[$entry]="first answer not 201: $(head -1 <<<"$first")"
    elif ! grep -qiE "$marker" <<<"$second"; then
        sanity[$entry]="second answer is not a replay (no $marker)"
    elif [[ $answer != $(sed '1,/^\r$/d' <<<"$second") ]]; then
        sanity[$entry]="replayed body differs from the first"
    elif [[ $size = large && ${#answer} -ne $LARGE_ANSWER_BYTES ]]; then
        sanity[$entry]="answer body of ${#answer} bytes, not $LARGE_ANSWER_BYTES"
    else
        sanity[$entry]=ok
    fi
}
tls_gateway_handshakes() { # "full resumed" TLS handshakes idemgate-https has completed so far
    curl -s --max-time 2 "http://127.0.0.1:$admin_idemgate_https/metrics" |
        awk '/^idemgate_tls_handshakes_total\{resumed="false"\}/ { f = $2 } /^idemgate_tls_handshakes_total\{resumed="true"\}/ { r = $2 }
             END { printf "%d %d\n", f, r }'
}

# The sanity checks of every target that runs (sanity[target]: ok or why not).
run_sanity_checks() {
    local t p g s_client suite group sig verify resumed0 resumed1 reused second sanity_targets
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
        check_replay idemgate-redis-traced "$(port_of idemgate-redis-traced)" '^Idempotent-Replayed: true'
        # Its spans reach the collector stand-in (exported in batches: give the exporter a moment).
        sleep 1.5
        if [[ ${sanity[idemgate-redis-traced]} = ok ]] &&
            ! curl -s "http://127.0.0.1:$admin_idemgate_redis_traced/metrics" |
            grep -Eq '^idemgate_trace_spans_total\{result="exported"\} [1-9]'; then
            sanity[idemgate-redis-traced]="no span exported to the collector stand-in"
        fi
        check_replay idemgate-memory "$(port_of idemgate-memory)" '^Idempotent-Replayed: true'
        # The _1k rows' work: a 1 KiB request recorded with its 2 KiB answer and replayed whole.
        check_replay idemgate-redis "$(port_of idemgate-redis)" '^Idempotent-Replayed: true' large
    fi
    for g in "${extra_gateways[@]}"; do
        check_replay "$g" "$(port_of "$g")" '^Idempotent-Replayed: true'
    done
    # The https targets: a replay like the others (over https), the protocol, suite and group a default
    # client (openssl s_client, not pinned) negotiates with each, which must be the pinned ones, and
    # whether a second connection resumes the first one's session (it must not, unless TLS_RESUMPTION=1).
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
}

# Pre-warms the 10 000 replay keys (replay_10k) and replay_one's key on every replaying target,
# then checks a second pass over the warm keys is all replays.
warm_keys() {
    local t out warm_targets
    warm_targets=(nginx-cache)
    ((have_gateway)) && warm_targets+=(idemgate-redis idemgate-redis-tier idemgate-redis-log idemgate-redis-traced idemgate-memory "${extra_gateways[@]}")
    for t in "${warm_targets[@]}"; do
        if [[ $ONLY = tls || $ONLY = node ]]; then # no replay_10k rows
            post "$(port_of "$t")" bench-replay-one >/dev/null
            continue
        fi
        "$bin/bench-client" fill --port "$(port_of "$t")" --prefix "$warm_prefix" --keys "$WARM_KEYS" \
            --connections 32 >"$work/warm-$t.json" || sanity[$t]="warm-up failed: $(cat "$work/warm-$t.json")"
        # replay_one's key, warmed once so every timed request is a replay; replay_one_1k's too.
        post "$(port_of "$t")" bench-replay-one >/dev/null
        post "$(port_of "$t")" bench-replay-one-1k large >/dev/null
    done
    for t in nginx-cache-https idemgate-https; do # replay_one only (bench-client speaks plain HTTP)
        if [[ -n ${sanity[$t]:-} ]]; then post "$(port_of "$t")" bench-replay-one >/dev/null; fi
    done
    if ((have_gateway)) && [[ $ONLY != tls && $ONLY != node ]]; then
        for t in idemgate-redis idemgate-redis-tier idemgate-redis-log idemgate-redis-traced idemgate-memory "${extra_gateways[@]}"; do
            out=$("$bin/bench-client" fill --port "$(port_of "$t")" --prefix "$warm_prefix" --keys "$WARM_KEYS" --connections 32 || true)
            grep -q '"keys_executed_once":0,' <<<"$out" || sanity[$t]="second pass over warm keys was not all replays: $out"
        done
    fi
}

# The duplicate storm against a Redis and a memory-store gateway in front of the counting test
# upstream; appends to storm_results: target \t verdict \t upstream executions \t client JSON.
storm_results=()
run_storm() {
    local counter_port t before after ran admin_var detail client_ok verdict
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
    run_node_storm "$counter_port" # bench/lib/node.sh
}
