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

# The CPU account of a row: where the machine's CPU time went over the row's measured interval, as
# shares of the machine's total (the "cpu" line of /proc/stat, every CPU: user nice system idle
# iowait irq softirq steal). The parts are measured apart: the client (wrk's own user+system time,
# from the shell's `times` around it), the server under test, the upstream behind it and Redis
# (utime+stime of their processes), the other processes (every process's utime+stime+cutime+
# cstime read from /proc before and after, per process (process_ticks_delta), less those four:
# the cutime of a live parent holds what its children that ended meanwhile spent), irq+softirq, idle (idle+iowait) and steal from
# /proc/stat. The processes' own figures and /proc/stat's are kept apart, so the sum of the
# parts checks them: it closes when it is within CPU_ACCOUNT_TOLERANCE (5) % of 100. A process
# that ends while /proc is read, or whose parent never waits for it, escapes the sums (a kernel
# thread that ends takes its ticks of the row with it, not its earlier ones): on a
# machine where other processes come and go during the row (a build) the sum falls short, and
# the flag says the machine was not quiet.
# Interrupts: without IRQ_TIME_ACCOUNTING (Debian's kernels) the kernel samples time by tick, and a
# tick that lands in an irq or softirq goes to /proc/stat's irq or softirq AND to the stime of the
# process it interrupted (account_system_index_time): loopback traffic's softirqs are mostly run
# in the sender's or receiver's context, so they are already in the parts above. The sum therefore
# counts processes, idle and steal, not irq+softirq again; irq_softirq_pct (kept in the JSON) says
# how much of the machine went to interrupts, most of it inside the processes' figures. What the
# sum misses is an interrupt served while a CPU was idle (the idle task is no process in /proc).
proc_stat_cpu() { # user nice system idle iowait irq softirq steal, in clock ticks since boot
    local _ user nice system idle iowait irq softirq steal
    read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
    echo "$user $nice $system $idle $iowait $irq $softirq $steal"
}
process_ticks() { # every process: pid:starttime, ppid, utime+stime+cutime+cstime in clock ticks
    # cat goes on past a process that ended between the glob and its read.
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } |
        awk '{ pid = $1; sub(/^.*\) /, ""); print pid ":" $20, $2, $12 + $13 + $14 + $15 }'
}
process_ticks_delta() { # BEFORE AFTER (process_ticks snapshots): the CPU ticks spent between them
    # Per process: its own growth, or all of it for one that began meanwhile. One that ended
    # meanwhile: a user process's lifetime is now in its parent's cutime (its waiter's, or the
    # subreaper's), so its ticks before are taken off; a kernel thread (kthreadd's child) is reaped
    # by nobody, and its ticks before are simply left out (a kworker that retires mid-row took
    # 4-10 % of a row away from the plain difference of two sums).
    awk 'NR == FNR { before[$1] = $3; kernel[$1] = ($2 == 2); next }
        { if ($1 in before) { d += $3 - before[$1]; delete before[$1] } else d += $3 }
        END { for (p in before) if (!kernel[p]) d -= before[p]; printf "%d\n", d }' "$1" "$2"
}
times_child_ticks() { # the output of `times`: its last line (the children's user and system time) in clock ticks
    awk -v t="$clk_tck" 'NF == 2 && $1 ~ /^[0-9]+m[0-9.]+s$/ { line = $0 }
        END { split(line, f, " "); split(f[1], a, "m"); split(f[2], b, "m"); printf "%.0f\n", ((a[1] * 60 + a[2]) + (b[1] * 60 + b[2])) * t }'
}
CPU_ACCOUNT_TOLERANCE=${CPU_ACCOUNT_TOLERANCE:-5}
# cpu_account STAT0 STAT1 ALL_TICKS CLIENT SERVER UPSTREAM REDIS REQUESTS: the row's account, shares
# of the machine's total in %: client server upstream redis other idle steal sum irq_softirq
# other_processes, then the total in ticks, client and upstream CPU in µs per request, and
# whether it closes (yes/no).
cpu_account() {
    awk -v s0="$1" -v s1="$2" -v all="$3" -v c="$4" -v s="$5" -v u="$6" -v r="$7" -v reqs="$8" -v t="$clk_tck" \
        -v tol="$CPU_ACCOUNT_TOLERANCE" 'BEGIN {
        split(s0, a, " "); split(s1, b, " ")
        for (i = 1; i <= 8; i++) { d[i] = b[i] - a[i]; total += d[i] }
        if (total <= 0) total = 1
        irq = d[6] + d[7]; idle = d[4] + d[5]; steal = d[8]; procs = all - c - s - u - r
        sum = (all + idle + steal) / total * 100
        printf "%.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %d %.2f %.2f %s\n", c / total * 100, s / total * 100,
            u / total * 100, r / total * 100, procs / total * 100, idle / total * 100, steal / total * 100, sum,
            irq / total * 100, procs / total * 100, total, reqs ? c / t * 1e6 / reqs : 0, reqs ? u / t * 1e6 / reqs : 0,
            (sum - 100 <= tol && 100 - sum <= tol) ? "yes" : "no"
    }'
}

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
# [:seconds[:redis_cpu]]]) with its checks; appends a line to $runs (and to $tls_runs on a TLS target):
#   target scenario round rps p50 p99 requests non_2xx socket_errors upstream_requests
#   server_cpu_us_per_req redis_cpu_us_per_req verdict server_sys_us_per_req (the kernel's part
#   of server_cpu_us_per_req), then the CPU account (cpu_account): client server upstream redis
#   other idle steal sum irq_softirq other_processes (% of the machine) total_ticks
#   client_cpu_us_per_req upstream_cpu_us_per_req closes
# A scenario ending in _1k sends 1 KiB bodies to /api/orders-1k (a 2 KiB answer); redis_cpu (PIN=1
# only) moves Redis to that CPU for the row.
timed_run() {
    local round=$1 entry=$2 progress=$3
    local target scenario script conns secs close wrk_env port gw_pid redis_pid tls0 tls1 served0 served1
    local gw0 gw1 sys0 sys1 gw_sys_us rd0 rd1 out result rps p50 p99 reqs status_errors socket_errors upstream_delta gw_cpu_us
    local rd_cpu_us new_conns resumed c0 r0 c1 r1 verdict redis_cpu up_pid up0 up1 stat0 stat1 client account p
    local -a acct
    IFS=: read -r target scenario script conns secs redis_cpu <<<"$entry"
    conns=${conns:-$CONNECTIONS}
    secs=${secs:-$DURATION}
    close=0
    [[ $scenario = *_close ]] && close=1
    wrk_env=()
    [[ -n ${scheme_of[$(port_of "$target")]:-} ]] && wrk_env=("OPENSSL_CONF=$tls_dir/pinned.cnf")
    [[ $scenario = *_1k ]] && wrk_env+=("BENCH_BODY_BYTES=$LARGE_REQUEST_BYTES" BENCH_PATH=/api/orders-1k BENCH_KEY=bench-replay-one-1k)
    port=$(port_of "$target")
    read -ra gw_pid <<<"$(server_pids "$target")"
    redis_pid=()
    case $target in
    idemgate-redis | idemgate-redis-tier | idemgate-redis-log | idemgate-redis-traced | idemgate-uring) redis_pid=("$(pid_of redis)") ;;
    idemgate-cluster) redis_pid=("${cluster_pids[@]}") ;;
    idemgate-tls) redis_pid=("$(pid_of redis-tls)") ;;
    idemgate-https | express-node*) redis_pid=("$(pid_of redis)") ;;
    esac
    up_pid=() # the upstream behind the server (none when the upstream is the target itself)
    [[ $target = upstream ]] || read -ra up_pid <<<"$(server_pids upstream)"
    if [[ -n $redis_cpu && $PIN = 1 ]]; then
        for p in "${redis_pid[@]}"; do taskset -a -p -c "$redis_cpu" "$p" >/dev/null; done
    fi
    tls0="" tls1=""
    if [[ -n ${scheme_of[$port]:-} ]]; then tls0=$(tls_connections "$target"); fi
    served0=$(upstream_served)
    stat0=$(proc_stat_cpu)
    process_ticks >"$work/ticks0"
    gw0=$(cpu_ticks "${gw_pid[@]}")
    sys0=$(sys_ticks "${gw_pid[@]}")
    rd0=$(cpu_ticks "${redis_pid[@]}")
    up0=$(cpu_ticks "${up_pid[@]}")
    # `times` in the same subshell: wrk's own CPU time (the subshell's children are wrk alone).
    out=$(
        "${client_cpu[@]}" env "${wrk_env[@]}" BENCH_PREFIX="$scenario-$run_id-$round" BENCH_WARM_PREFIX="$warm_prefix" \
            BENCH_KEYS="$WARM_KEYS" BENCH_CONNECTION_CLOSE=$close wrk -t"$WRK_THREADS" -c"$conns" -d"${secs}s" \
            --timeout 5s -s "$bench_dir/$script.lua" "$(url_of "$port")/api/orders" 2>&1
        times
    ) || true
    gw1=$(cpu_ticks "${gw_pid[@]}")
    sys1=$(sys_ticks "${gw_pid[@]}")
    rd1=$(cpu_ticks "${redis_pid[@]}")
    up1=$(cpu_ticks "${up_pid[@]}")
    process_ticks >"$work/ticks1"
    stat1=$(proc_stat_cpu)
    client=$(times_child_ticks <<<"$out")
    served1=$(upstream_served)
    if [[ -n ${scheme_of[$port]:-} ]]; then tls1=$(tls_connections "$target"); fi
    if [[ -n $redis_cpu && $PIN = 1 ]]; then
        for p in "${redis_pid[@]}"; do taskset -a -p -c "${side_cpu[-1]}" "$p" >/dev/null; done
    fi
    result=$(grep -m1 '^BENCH_RESULT ' <<<"$out" | sed 's/^BENCH_RESULT //' || true)
    if [[ -z $result ]]; then
        say "wrk failed on $target $scenario: $out"
        printf '%s\t%s\t%d\t0\t0\t0\t0\t0\t0\t0\t0\t0\tFAIL: wrk produced no result\t0%s\tno\n' \
            "$target" "$scenario" "$round" "$(printf '\t0%.0s' {1..13})" >>"$runs"
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
    account=$(cpu_account "$stat0" "$stat1" "$(process_ticks_delta "$work/ticks0" "$work/ticks1")" "${client:-0}" $((gw1 - gw0)) $((up1 - up0)) $((rd1 - rd0)) "$reqs")
    read -ra acct <<<"$account"
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
    printf '%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$scenario" "$round" "$rps" \
        "$p50" "$p99" "$reqs" "$status_errors" "$socket_errors" "$upstream_delta" "$gw_cpu_us" "$rd_cpu_us" \
        "$verdict" "$gw_sys_us" "${account// /$'\t'}" >>"$runs"
    say "$progress round $round $target $scenario: $rps req/s p50 ${p50}us p99 ${p99}us upstream+$upstream_delta" \
        "${new_conns:+new connections $new_conns${resumed:+ (resumed $resumed)} }$verdict"
    say "    CPU % of the machine: client ${acct[0]} server ${acct[1]} upstream ${acct[2]} redis ${acct[3]}" \
        "other ${acct[4]} idle ${acct[5]} steal ${acct[6]}: sum ${acct[7]} %$([[ ${acct[13]} = yes ]] ||
            echo " NOT CLOSED (more than $CPU_ACCOUNT_TOLERANCE % from 100)")"
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
            "${client_cpu[@]}" wrk -t1 -c16 -d2s --timeout 5s -s "$bench_dir/$script.lua" \
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
#   target scenario rps p50 p99 server_cpu redis_cpu verdict rps_min rps_max server_sys, then the
#   CPU account's medians (each part apart, so they need not add up to the median sum):
#   client server upstream redis other idle steal sum irq_softirq other_processes (%)
#   client_cpu_us upstream_cpu_us, and closes: "no" when any round's account did not close
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
        for (f = 15; f <= 24; f++) part[k, f] = part[k, f] " " $f
        for (f = 26; f <= 27; f++) part[k, f] = part[k, f] " " $f
        if ($13 == "ok" && $28 == "no") open[k] = 1
    }
    END {
        for (i = 1; i <= count; i++) {
            k = order[i]
            printf "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%.0f\t%.0f\t%.2f", k, median(rps[k]), median(p50[k]), median(p99[k]),
                median(cpu[k]), median(rcpu[k]), (k in verdict) ? verdict[k] : "ok", lowest(rps[k]), highest(rps[k]),
                median(sys[k])
            for (f = 15; f <= 24; f++) printf "\t%.1f", median(part[k, f])
            printf "\t%.2f\t%.2f\t%s\n", median(part[k, 26]), median(part[k, 27]), (k in open) ? "no" : "yes"
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
