# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/ratios.sh: the ratios against the anchors and the goals, computed from the medians
# ($summary), the Redis memory figures ($work/memory.tsv) and, for the TLS rows, what ran
# (https_targets). Sourced by run.sh; compute_ratios fills ratio_json, which the results JSON
# carries and bench/report.sh prints as the ratio table.
# shellcheck disable=SC2154 # settings and paths are assigned by run.sh and servers.sh

get() { awk -F'\t' -v t="$1" -v s="$2" -v c="$3" '$1 == t && $2 == s { print $c }' "$summary"; }
ok_rps() { # rps of a pair, or empty when it failed or did not run
    if [[ $(get "$1" "$2" 8) = ok ]]; then get "$1" "$2" 3; fi
}
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }' || echo "n/a"; }
ratio_json=()
add_ratio() { # name value target_text met; a value not measured (n/a: a row skipped or failed) is null
    local value="\"$2\""
    [[ -n $2 && $2 != n/a ]] || value=null
    ratio_json+=("{\"name\":\"$1\",\"value\":$value,\"target\":\"$3\",\"met\":\"$4\"}")
}
cpu_of() { # server + redis CPU µs per request of a pair
    awk -v a="$(get "$1" "$2" 6)" -v b="$(get "$1" "$2" 7)" 'BEGIN { if (a != "") printf "%.2f", a + b }'
}
p99_ms_of() { # target scenario -> its p99 in ms, n/a when it did not run (ROWS=) or failed
    if [[ $(get "$1" "$2" 8) = ok ]]; then
        awk -v p="$(get "$1" "$2" 5)" 'BEGIN { printf "%.2f", p / 1000 }'
    else
        echo n/a
    fi
}
cpu_ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }' || echo n/a; }
met() { if [[ $1 = n/a ]]; then echo n/a; else awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t) ? "yes" : "no" }'; fi; }
lat_met() { if [[ -z $1 ]]; then echo n/a; else awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "yes" : "no" }'; fi; }

# Every ratio of the run, in the order of the table; mem_json says whether Redis memory was measured.
compute_ratios() {
    local bare cache cache10k nproxy hproxy g t_bare t_cache t_first t_cpu_bare t_cpu_first t_p99_replay t_p99_first
    local rep rep10k first r a b size per_record response_bytes verdict mode label suffix pair t sc c tls_c plain_c
    bare=$(ok_rps bare-beast static)
    cache=$(ok_rps nginx-cache replay_one)
    cache10k=$(ok_rps nginx-cache replay_10k)
    nproxy=$(ok_rps nginx-proxy proxy)
    hproxy=$(ok_rps haproxy proxy)
    if ((have_gateway)) && [[ $ONLY != tls && $ONLY != node ]]; then # ONLY=tls: the TLS figures below only
        # The goals: the Redis store with the local tier (replay >= 0.95x bare Beast and
        # >= 1.3x an nginx cache hit, CPU per replay <= 1.05x bare Beast's) and without it (replay >=
        # 0.85x bare Beast, first execution >= 0.65x nginx proxy at <= 2.1x its CPU); p99 at 64
        # connections <= 3 ms replay, <= 6 ms first execution. The memory store: information.
        # name target value: a row with its target, or information when the target is empty.
        at_least() {
            if [[ -n $2 ]]; then add_ratio "$1" "$3" ">= $2" "$(met "$3" "$2")"; else add_ratio "$1" "$3" "(info)" "-"; fi
        }
        at_most() { # a CPU ratio or a p99 (lower is better); $4: the text of an information row
            if [[ -z $2 ]]; then
                add_ratio "$1" "$3" "${4:-(info: lower is cheaper)}" "-"
            else
                add_ratio "$1" "$3" "<= $2" "$(if [[ $3 = n/a ]]; then echo n/a; else lat_met "$3" "$2"; fi)"
            fi
        }
        for g in idemgate-redis idemgate-redis-tier idemgate-memory; do
            t_bare="" t_cache="" t_first="" t_cpu_bare="" t_cpu_first="" t_p99_replay="" t_p99_first=""
            case $g in
            idemgate-redis) t_bare=0.85 t_first=0.65 t_cpu_first=2.1 t_p99_replay=3 t_p99_first=6 ;;
            idemgate-redis-tier) t_bare=0.95 t_cache=1.3 t_cpu_bare=1.05 t_p99_replay=3 t_p99_first=6 ;;
            esac
            rep=$(ok_rps "$g" replay_one) rep10k=$(ok_rps "$g" replay_10k) first=$(ok_rps "$g" first_execution)
            at_least "$g replay / bare Beast" "$t_bare" "$(ratio "$rep" "$bare")"
            at_least "$g replay / nginx cache hit" "$t_cache" "$(ratio "$rep" "$cache")"
            at_least "$g replay 10k keys / nginx cache hit 10k keys" "" "$(ratio "$rep10k" "$cache10k")"
            at_least "$g first execution / nginx proxy" "$t_first" "$(ratio "$first" "$nproxy")"
            at_least "$g first execution / haproxy" "" "$(ratio "$first" "$hproxy")"
            at_most "$g CPU per replay / bare Beast CPU per answer" "$t_cpu_bare" \
                "$(cpu_ratio "$(cpu_of "$g" replay_one)" "$(cpu_of bare-beast static)")"
            at_most "$g CPU per replay / nginx cache CPU per hit" "" \
                "$(cpu_ratio "$(cpu_of "$g" replay_one)" "$(cpu_of nginx-cache replay_one)")"
            at_most "$g CPU (gateway + Redis) per first execution / nginx proxy CPU per request" "$t_cpu_first" \
                "$(cpu_ratio "$(cpu_of "$g" first_execution)" "$(cpu_of nginx-proxy proxy)")"
            at_most "$g CPU per first execution / haproxy CPU per request" "" \
                "$(cpu_ratio "$(cpu_of "$g" first_execution)" "$(cpu_of haproxy proxy)")"
            at_most "$g replay p99 (ms)" "$t_p99_replay" "$(p99_ms_of "$g" replay_one)" "(info)"
            at_most "$g first execution p99 (ms)" "$t_p99_first" "$(p99_ms_of "$g" first_execution)" "(info)"
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
        # The access log on vs off (the goal: at most 5 % below).
        r=$(ratio "$(ok_rps idemgate-redis-log replay_one)" "$(ok_rps idemgate-redis replay_one)")
        add_ratio "access log on / off, replay (idemgate-redis)" "$r" ">= 0.95" "$(met "$r" 0.95)"
        r=$(ratio "$(ok_rps idemgate-redis-log first_execution)" "$(ok_rps idemgate-redis first_execution)")
        add_ratio "access log on / off, first execution (idemgate-redis)" "$r" ">= 0.95" "$(met "$r" 0.95)"
        # Tracing on (every request sampled and exported) vs off: throughput and CPU per request.
        r=$(ratio "$(ok_rps idemgate-redis-traced replay_one)" "$(ok_rps idemgate-redis replay_one)")
        add_ratio "tracing on (sample_ratio 1.0) / off, replay (idemgate-redis)" "$r" "(info)" "-"
        r=$(ratio "$(ok_rps idemgate-redis-traced first_execution)" "$(ok_rps idemgate-redis first_execution)")
        add_ratio "tracing on (sample_ratio 1.0) / off, first execution (idemgate-redis)" "$r" "(info)" "-"
        r=$(cpu_ratio "$(cpu_of idemgate-redis-traced first_execution)" "$(cpu_of idemgate-redis first_execution)")
        add_ratio "tracing on / off, CPU per first execution (idemgate-redis)" "$r" "(info: lower is cheaper)" "-"
        r=$(cpu_ratio "$(cpu_of idemgate-redis-traced replay_one)" "$(cpu_of idemgate-redis replay_one)")
        add_ratio "tracing on / off, CPU per replay (idemgate-redis)" "$r" "(info: lower is cheaper)" "-"
        # 512 connections, beside nginx at 512.
        r=$(ratio "$(ok_rps idemgate-redis first_execution_512)" "$(ok_rps nginx-proxy proxy_512)")
        add_ratio "idemgate-redis first execution / nginx proxy, 512 connections" "$r" "(info)" "-"
        add_ratio "idemgate-redis first execution p99 at 512 connections (ms)" "$(p99_ms_of idemgate-redis first_execution_512)" "(info)" "-"
        add_ratio "nginx proxy p99 at 512 connections (ms)" "$(p99_ms_of nginx-proxy proxy_512)" "(info)" "-"
        # Bodies of 1 KiB (request) and 2 KiB (answer): the proxying and a first execution beside nginx.
        r=$(cpu_ratio "$(cpu_of idemgate-proxy proxy_1k)" "$(cpu_of nginx-proxy proxy_1k)")
        add_ratio "idemgate-proxy CPU per request / nginx proxy CPU per request, 1 KiB / 2 KiB bodies" "$r" "(info: lower is cheaper)" "-"
        r=$(ratio "$(ok_rps idemgate-redis first_execution_1k)" "$(ok_rps nginx-proxy proxy_1k)")
        add_ratio "idemgate-redis first execution / nginx proxy, 1 KiB / 2 KiB bodies" "$r" "(info)" "-"
        r=$(ratio "$(ok_rps idemgate-redis replay_one_1k)" "$(ok_rps idemgate-redis replay_one)")
        add_ratio "idemgate-redis replay, 2 KiB answer / 33-byte answer" "$r" "(info)" "-"
        if [[ $PIN = 1 ]]; then # Redis beside the gateway on the server CPU, nginx alone on it
            r=$(ratio "$(ok_rps idemgate-redis first_execution_redis_cpu1)" "$nproxy")
            add_ratio "idemgate-redis first execution with Redis on the server CPU / nginx proxy" "$r" "(info)" "-"
        fi
        # Redis modes beside standalone Redis: the same scenarios, as ratios.
        for g in "${extra_gateways[@]}"; do
            r=$(ratio "$(ok_rps "$g" replay_10k)" "$(ok_rps idemgate-redis replay_10k)")
            add_ratio "$g replay 10k keys / idemgate-redis replay 10k keys" "$r" "(info)" "-"
            r=$(ratio "$(ok_rps "$g" first_execution)" "$(ok_rps idemgate-redis first_execution)")
            add_ratio "$g first execution / idemgate-redis first execution" "$r" "(info)" "-"
            r=$(cpu_ratio "$(cpu_of "$g" first_execution)" "$(cpu_of idemgate-redis first_execution)")
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
    node_ratios # bench/lib/node.sh
    # TLS termination (TLS_TARGETS): idemgate-https beside nginx with TLS on the same work, with
    # keep-alive and with a new connection per request; then what TLS adds to each side.
    if ((${#https_targets[@]})); then
        for mode in "keep-alive:" "new connection per request:_close"; do
            label=${mode%%:*} suffix=${mode#*:}
            r=$(ratio "$(ok_rps idemgate-https "replay_one$suffix")" "$(ok_rps nginx-cache-https "replay_one$suffix")")
            add_ratio "TLS, $label: idemgate-https replay / nginx-cache-https hit" "$r" "(info)" "-"
            r=$(cpu_ratio "$(cpu_of idemgate-https "replay_one$suffix")" "$(cpu_of nginx-cache-https "replay_one$suffix")")
            add_ratio "TLS, $label: idemgate-https CPU (gateway + Redis) per replay / nginx-cache-https CPU per hit" "$r" "(info: lower is cheaper)" "-"
            r=$(ratio "$(ok_rps idemgate-https "first_execution$suffix")" "$(ok_rps nginx-proxy-https "proxy$suffix")")
            add_ratio "TLS, $label: idemgate-https first execution / nginx-proxy-https" "$r" "(info)" "-"
            r=$(cpu_ratio "$(cpu_of idemgate-https "first_execution$suffix")" "$(cpu_of nginx-proxy-https "proxy$suffix")")
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
}
