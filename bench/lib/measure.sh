# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/measure.sh: what bench/run.sh measures on running targets: one timed wrk run (req/s,
# latency, server and Redis CPU per request from /proc, the upstream's request count, TLS
# connections), system calls per request (lib/syscalls.sh), and the medians over the rounds.
# Sourced by run.sh after bench/lib/servers.sh; reads run.sh's settings and the ports and PIDs
# start_targets set.
# shellcheck disable=SC2154 # settings, ports and PIDs are assigned by run.sh and servers.sh

upstream_served() { # requests the upstream nginx has served so far
    curl -s --max-time 2 "http://127.0.0.1:$upstream_port/__nginx_status" | awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ {print $3}'
}
ticks_of() { # "FIELD..." PID...: those /proc/PID/stat fields summed over processes (all threads), in clock ticks
    local fields=$1 pid total=0 t
    shift
    for pid in "$@"; do
        [[ -r /proc/$pid/stat ]] || continue
        t=$(awk -v f="$fields" '{sub(/^.*\) /, ""); n = split(f, k, " "); s = 0; for (i = 1; i <= n; i++) s += $k[i]; print s}' \
            "/proc/$pid/stat" 2>/dev/null || echo 0)
        total=$((total + ${t:-0}))
    done
    echo "$total"
}
# Fields after the command name: 12 utime, 13 stime (the same figures pidstat reads).
cpu_ticks() { ticks_of "12 13" "$@"; }
sys_ticks() { ticks_of 13 "$@"; } # the kernel's share of cpu_ticks
server_pids() { # the target's own processes: nginx master and its workers, or the one process
    local pid
    pid=$(pid_of "$1")
    # shellcheck disable=SC2046 # one PID per word
    echo "$pid" $(pgrep -P "$pid" 2>/dev/null || true)
}
clk_tck=$(getconf CLK_TCK)

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

# timed_run ROUND ENTRY PROGRESS: one wrk run of a plan entry (target:scenario:script[:connections
# [:seconds]]) with its checks; appends a line to $runs (and to $tls_runs on a TLS target):
#   target scenario round rps p50 p99 requests non_2xx socket_errors upstream_requests
#   server_cpu_us_per_req redis_cpu_us_per_req verdict server_sys_us_per_req (the kernel's part
#   of server_cpu_us_per_req)
timed_run() {
    local round=$1 entry=$2 progress=$3
    local target scenario script conns secs close wrk_env port gw_pid redis_pid tls0 tls1 served0 served1
    local gw0 gw1 sys0 sys1 gw_sys_us rd0 rd1 out result rps p50 p99 reqs status_errors socket_errors upstream_delta gw_cpu_us
    local rd_cpu_us new_conns resumed c0 r0 c1 r1 verdict
    IFS=: read -r target scenario script conns secs <<<"$entry"
    conns=${conns:-$CONNECTIONS}
    secs=${secs:-$DURATION}
    close=0
    [[ $scenario = *_close ]] && close=1
    wrk_env=()
    [[ -n ${scheme_of[$(port_of "$target")]:-} ]] && wrk_env=("OPENSSL_CONF=$tls_dir/pinned.cnf")
    port=$(port_of "$target")
    read -ra gw_pid <<<"$(server_pids "$target")"
    redis_pid=()
    case $target in
    idemgate-redis | idemgate-redis-tier | idemgate-redis-log | idemgate-redis-traced | idemgate-uring) redis_pid=("$(pid_of redis)") ;;
    idemgate-cluster) redis_pid=("${cluster_pids[@]}") ;;
    idemgate-tls) redis_pid=("$(pid_of redis-tls)") ;;
    idemgate-https | express-node*) redis_pid=("$(pid_of redis)") ;;
    esac
    tls0="" tls1=""
    if ((${#wrk_env[@]})); then tls0=$(tls_connections "$target"); fi
    served0=$(upstream_served)
    gw0=$(cpu_ticks "${gw_pid[@]}")
    sys0=$(sys_ticks "${gw_pid[@]}")
    rd0=$(cpu_ticks "${redis_pid[@]}")
    out=$(env "${wrk_env[@]}" BENCH_PREFIX="$scenario-$run_id-$round" BENCH_WARM_PREFIX="$warm_prefix" \
        BENCH_KEYS="$WARM_KEYS" BENCH_CONNECTION_CLOSE=$close wrk -t"$WRK_THREADS" -c"$conns" -d"${secs}s" \
        --timeout 5s -s "$bench_dir/$script.lua" "$(url_of "$port")/api/orders" 2>&1) || true
    gw1=$(cpu_ticks "${gw_pid[@]}")
    sys1=$(sys_ticks "${gw_pid[@]}")
    rd1=$(cpu_ticks "${redis_pid[@]}")
    served1=$(upstream_served)
    if ((${#wrk_env[@]})); then tls1=$(tls_connections "$target"); fi
    result=$(grep -m1 '^BENCH_RESULT ' <<<"$out" | sed 's/^BENCH_RESULT //' || true)
    if [[ -z $result ]]; then
        say "wrk failed on $target $scenario: $out"
        printf '%s\t%s\t%d\t0\t0\t0\t0\t0\t0\t0\t0\t0\tFAIL: wrk produced no result\t0\n' \
            "$target" "$scenario" "$round" >>"$runs"
        return 0
    fi
    num() { sed -E "s/.*\"$1\":([0-9.]+).*/\1/" <<<"$result"; }
    rps=$(num rps) p50=$(num p50_us) p99=$(num p99_us) reqs=$(num requests)
    status_errors=$(num status)
    socket_errors=$(($(num connect) + $(num read) + $(num write) + $(num timeout)))
    upstream_delta=$((served1 - served0 - 1)) # the status request itself counts once
    gw_cpu_us=$(awk -v d=$((gw1 - gw0)) -v r="$reqs" -v t="$clk_tck" 'BEGIN { printf "%.2f", r ? d / t * 1e6 / r : 0 }')
    gw_sys_us=$(awk -v d=$((sys1 - sys0)) -v r="$reqs" -v t="$clk_tck" 'BEGIN { printf "%.2f", r ? d / t * 1e6 / r : 0 }')
    rd_cpu_us=$(awk -v d=$((rd1 - rd0)) -v r="$reqs" -v t="$clk_tck" 'BEGIN { printf "%.2f", r ? d / t * 1e6 / r : 0 }')
    new_conns="" resumed=""
    if [[ -n $tls0 && -n $tls1 ]]; then
        read -r c0 r0 <<<"$tls0"
        read -r c1 r1 <<<"$tls1"
        new_conns=$((c1 - c0))
        if [[ $target = idemgate-https ]]; then resumed=$((r1 - r0)); else new_conns=$((new_conns - 1)); fi # nginx: our status read
        printf '%s\t%s\t%d\t%s\t%s\t%s\n' "$target" "$scenario" "$round" "$reqs" "$new_conns" "${resumed:--}" >>"$tls_runs"
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
    printf '%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$scenario" "$round" "$rps" \
        "$p50" "$p99" "$reqs" "$status_errors" "$socket_errors" "$upstream_delta" "$gw_cpu_us" "$rd_cpu_us" \
        "$verdict" "$gw_sys_us" >>"$runs"
    say "$progress round $round $target $scenario: $rps req/s p50 ${p50}us p99 ${p99}us upstream+$upstream_delta" \
        "${new_conns:+new connections $new_conns${resumed:+ (resumed $resumed)} }$verdict"
}

# measure_syscalls ENTRY...: the target's system calls on a short separate run per entry
# (target:scenario:script), counted as pick_syscall_method chose. These runs are not timed. Appends
# to syscall_rows:
#   target \t scenario \t requests \t calls \t calls per request \t top calls
syscall_rows=()
measure_syscalls() {
    local entry target scenario script trace args p counter_pid out reqs calls top per empty=""
    for entry in "$@"; do
        IFS=: read -r target scenario script <<<"$entry"
        trace=$work/syscalls-$target-$scenario.txt
        args=()
        if [[ $syscall_method = perf ]]; then
            local pids=""
            for p in $(server_pids "$target"); do pids+=${pids:+,}$p; done
            perf stat -x, -o "$trace" "${syscall_perf_args[@]}" -p "$pids" 2>"$trace.log" &
        else
            for p in $(server_pids "$target"); do args+=(-p "$p"); done
            strace -f -c -o "$trace" "${args[@]}" 2>"$trace.log" &
        fi
        counter_pid=$!
        sleep 0.5 # the counter attaches to every thread before the run starts
        out=$(BENCH_PREFIX="sys-$scenario-$run_id" BENCH_WARM_PREFIX="$warm_prefix" BENCH_KEYS=$WARM_KEYS \
            wrk -t1 -c16 -d2s --timeout 5s -s "$bench_dir/$script.lua" \
            "http://127.0.0.1:$(port_of "$target")/api/orders" 2>&1) || true
        kill -INT "$counter_pid" 2>/dev/null || true
        wait "$counter_pid" 2>/dev/null || true
        reqs=$(grep -m1 '^BENCH_RESULT ' <<<"$out" | sed -E 's/.*"requests":([0-9]+).*/\1/' || true)
        local by_call # "count name" per system call
        if [[ $syscall_method = perf ]]; then
            by_call=$(perf_syscall_counts "$trace")
            calls=$(awk '$2 == "all" { print $1 }' <<<"$by_call")
            empty=$(awk '$2 == "empty" { print $1 }' <<<"$by_call")
            by_call=$(awk '$2 != "all" && $2 != "empty"' <<<"$by_call")
        else
            calls=$(awk '$NF == "total" { print $4 }' "$trace" 2>/dev/null || true)
            by_call=$(awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $4, $NF }' "$trace" 2>/dev/null || true)
        fi
        top=$(sort -rn <<<"$by_call" | head -4 |
            awk -v r="${reqs:-0}" 'NF == 2 { printf "%s%s %.2f", sep, $2, r ? $1 / r : 0; sep = ", " }')
        # The reads that found nothing (perf only): what waiting for readiness would save.
        [[ -n $empty && ${reqs:-0} -gt 0 ]] &&
            top+=$(awk -v e="$empty" -v r="$reqs" 'BEGIN { printf "; empty reads %.2f", e / r }')
        if [[ -n $reqs && $reqs -gt 0 && -n $calls ]]; then
            per=$(awk -v c="$calls" -v r="$reqs" 'BEGIN { printf "%.2f", c / r }')
            syscall_rows+=("$target"$'\t'"$scenario"$'\t'"$reqs"$'\t'"$calls"$'\t'"$per"$'\t'"$top")
            say "syscalls ($syscall_method) $target $scenario: $per per request ($calls for $reqs requests): $top"
        else
            say "syscalls $target $scenario: no result ($syscall_method: $(tail -1 "$trace.log" 2>/dev/null))"
        fi
    done
}

# Medians per target+scenario of $runs into $summary (the middle run of ROUNDS, mean of the middle
# two when even); any failed round fails the pair:
#   target scenario rps p50 p99 server_cpu redis_cpu verdict rps_min rps_max server_sys
summarize_runs() {
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
        rps[k] = rps[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $6; cpu[k] = cpu[k] " " $11; rcpu[k] = rcpu[k] " " $12; sys[k] = sys[k] " " ($14 == "" ? 0 : $14)
        if ($13 != "ok" && !(k in verdict)) verdict[k] = $13
    }
    END {
        for (i = 1; i <= count; i++) {
            k = order[i]
            printf "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%.0f\t%.0f\t%.2f\n", k, median(rps[k]), median(p50[k]), median(p99[k]),
                median(cpu[k]), median(rcpu[k]), (k in verdict) ? verdict[k] : "ok", lowest(rps[k]), highest(rps[k]),
                median(sys[k])
        }
    }' "$runs" >"$summary"
}

# New connections per request of the TLS runs, median per target+scenario, and the resumed
# handshakes summed over the rounds ("-" where not counted), from $tls_runs into $tls_summary.
summarize_tls_runs() {
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
}
