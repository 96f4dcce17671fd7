# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/results.sh: the results JSON of a run, the one file bench/report.sh turns into
# latest.md and latest.svg. It holds everything those show: the settings, the medians and every
# run, the storm, the Redis memory, the TLS figures, the system calls, the sanity checks and the
# ratios. Sourced by run.sh.
# shellcheck disable=SC2154 # settings and results are assigned by run.sh and the other libraries

json_str() { # a bash string as the body of a JSON string (no surrounding quotes)
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\r'/\\r}
    s=${s//$'\t'/\\t}
    printf '%s' "$s"
}

# write_results_json FILE: $summary, $runs, $tls_summary and the arrays of the libraries as JSON.
write_results_json() {
    local json=$1 sep s t v ran d cpu_model allocator row sc rq c per top
    cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
    allocator=$("$bin/idemgate" --version 2>/dev/null | grep -m1 '^allocator:' || echo 'allocator: unknown')
    {
        printf '{"date":"%s","commit":"%s","command":"bench/run.sh","duration_s":%s,"rounds":%s,"wrk_threads":%s,"connections":%s,"server_threads":%s,"cores":%s,"loadavg_start":"%s","loadavg_end":"%s",\n' \
            "$stamp" "$commit" "$DURATION" "$ROUNDS" "$WRK_THREADS" "$CONNECTIONS" "$THREADS" "$(nproc)" "$load_start" "$load_end"
        printf '"only":"%s","cpu_model":"%s","allocator":"%s","gateway_built":%s,"records":%s,"storm_keys":%s,"storm_repeats":%s,\n' \
            "$ONLY" "$(json_str "$cpu_model")" "$(json_str "$allocator")" "$( ((have_gateway)) && echo true || echo false)" \
            "$RECORDS" "$STORM_KEYS" "$STORM_REPEATS"
        # The machine layout (PIN) and how quiet the machine was: steal over the whole run.
        if [[ $PIN = 1 ]]; then
            printf '"layout":"pinned","pin":{"server_cpu":1,"client_cpu":0,"upstream_cpu":0,"redis_cpu":0,"server_threads":1},\n'
        else
            printf '"layout":"free","pin":null,\n'
        fi
        printf '"request_bytes_large":%s,"answer_bytes_large":%s,"cpu_account_tolerance_pct":%s,\n' \
            "$LARGE_REQUEST_BYTES" "$LARGE_ANSWER_BYTES" "$CPU_ACCOUNT_TOLERANCE"
        awk -v s0="$run_stat_start" -v s1="$run_stat_end" 'BEGIN { split(s0, a, " "); split(s1, b, " ")
            for (i = 1; i <= 8; i++) total += b[i] - a[i]
            printf "\"run_cpu_ticks\":%d,\"steal_ticks\":%d,\"steal_pct\":%.2f,\n", total, b[8] - a[8], (total > 0 ? (b[8] - a[8]) / total * 100 : 0) }'
        # The CPU account's fields, in the order of $summary's columns 12-24 and $runs' 15-28.
        echo '"medians":['
        awk -F'\t' 'BEGIN { sep = "" } { printf "%s{\"target\":\"%s\",\"scenario\":\"%s\",\"rps\":%s,\"p50_us\":%s,\"p99_us\":%s,\"server_cpu_us_per_req\":%s,\"redis_cpu_us_per_req\":%s,\"check\":\"%s\",\"rps_min\":%s,\"rps_max\":%s,\"server_sys_us_per_req\":%s,", sep, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
            printf "\"cpu_account\":{\"client_pct\":%s,\"server_pct\":%s,\"upstream_pct\":%s,\"redis_pct\":%s,\"other_pct\":%s,\"idle_pct\":%s,\"steal_pct\":%s,\"sum_pct\":%s,\"irq_softirq_pct\":%s,\"other_processes_pct\":%s,\"client_cpu_us_per_req\":%s,\"upstream_cpu_us_per_req\":%s,\"closes\":%s}}", $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, ($24 == "yes" ? "true" : "false"); sep = ",\n" }' "$summary"
        echo '],'
        echo '"runs":['
        awk -F'\t' 'BEGIN { sep = "" } { printf "%s{\"target\":\"%s\",\"scenario\":\"%s\",\"round\":%s,\"rps\":%s,\"p50_us\":%s,\"p99_us\":%s,\"requests\":%s,\"non_2xx\":%s,\"socket_errors\":%s,\"upstream_requests\":%s,\"server_cpu_us_per_req\":%s,\"redis_cpu_us_per_req\":%s,\"check\":\"%s\",\"server_sys_us_per_req\":%s,", sep, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14
            printf "\"cpu_account\":{\"client_pct\":%s,\"server_pct\":%s,\"upstream_pct\":%s,\"redis_pct\":%s,\"other_pct\":%s,\"idle_pct\":%s,\"steal_pct\":%s,\"sum_pct\":%s,\"irq_softirq_pct\":%s,\"other_processes_pct\":%s,\"total_ticks\":%s,\"client_cpu_us_per_req\":%s,\"upstream_cpu_us_per_req\":%s,\"closes\":%s}}", $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, ($28 == "yes" ? "true" : "false"); sep = ",\n" }' "$runs"
        echo '],'
        # One storm entry per line with the client's JSON last, as it printed it: report.sh copies
        # that text into the table unchanged.
        echo '"storm":['
        sep=""
        for s in "${storm_results[@]}"; do
            IFS=$'\t' read -r t v ran d <<<"$s"
            printf '%s{"target":"%s","verdict":"%s","upstream_executions":%s,"client":%s}' "$sep" "$t" "$(json_str "$v")" "$ran" "${d:-null}"
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
        printf '"syscalls_method":"%s",\n' "$syscall_method"
        printf '"syscalls":['
        sep=""
        for row in "${syscall_rows[@]}"; do
            IFS=$'\t' read -r t sc rq c per top <<<"$row"
            printf '%s{"target":"%s","scenario":"%s","requests":%s,"calls":%s,"per_request":%s,"top":"%s"}' \
                "$sep" "$t" "$sc" "$rq" "$c" "$per" "$(json_str "$top")"
            sep=$',\n'
        done
        echo '],'
        printf '"sanity":{'
        sep=""
        for t in "${!sanity[@]}"; do printf '%s"%s":"%s"' "$sep" "$t" "$(json_str "${sanity[$t]}")"; sep=","; done
        echo '},'
        echo '"ratios":['
        (IFS=,; echo "${ratio_json[*]}")
        echo ']}'
    } >"$json"
}
