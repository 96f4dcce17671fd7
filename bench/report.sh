#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/report.sh: the tables and the chart of one bench run, from its results JSON alone.
#
#   bash bench/report.sh bench/results/<UTC date>.json [OUT_DIR]
#   bash bench/report.sh FREE.json PINNED.json [OUT_DIR]     # both layouts (run.sh LAYOUTS="free pinned")
#
# Writes OUT_DIR/latest.md (the medians, the storm, the system calls, the TLS figures, the ratios
# and the sanity checks; then OUT_DIR/latency-latest.md, latency_sweep.sh's table, when present)
# and, when gnuplot is installed, OUT_DIR/latest.svg (a bar chart of the medians). OUT_DIR
# defaults to the JSON's own directory, so on a file in bench/results it rewrites the committed
# latest.md and latest.svg. bench/run.sh calls it at the end of every run; run it by
# hand to redraw an older run. Needs jq.
#
# Several JSON files (one per machine layout, PIN): latest.md holds each run's report in turn under
# its layout, after a table of the ratios side by side; latest.svg is the first run's chart and
# latest-<layout>.svg each further one's.
#
# A JSON written before run.sh recorded the CPU model, the allocator, the system calls and the
# sanity checks (up to 2026-12-02) gives a latest.md that says so where those would be; one
# written before the layout, the steal time and the CPU account (2026-12-07) says "not recorded".
set -euo pipefail

say() { printf '[report %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage="usage: bash bench/report.sh RESULTS.json [MORE.json ...] [OUT_DIR]"
(($# >= 1)) || die "$usage"
# Latency at fixed load (bench/tools/latency_sweep.sh, a run of its own): its table, kept in
# DIR as latency-latest.md (with its plot, latency-latest.svg), printed as a section of latest.md.
latency_section() {
    [[ -f $1/latency-latest.md ]] || return 0
    echo
    echo "## Latency at fixed load"
    echo
    echo "From \`bench/tools/latency_sweep.sh\` (a run of its own, its settings in the next line; its JSON beside this file)."
    echo
    cat "$1/latency-latest.md"
    [[ -f $1/latency-latest.svg ]] && { echo; echo "![p99 by offered load](latency-latest.svg)"; }
    return 0
}
# A ratio or figure as a table shows it: n/a where it was not measured (its row skipped by ROWS= or
# failed): null in the JSON, or "n/a"; "0.00" in a p99 of a JSON written before run.sh wrote null
# there (a p99 never rounds to 0.00 ms). Its "met" is then n/a too.
ratio_jq='def figure: if .value == null or .value == "n/a" or ((.name | test("p99")) and .value == "0.00")
        then "n/a" else .value end;
    def verdict: if figure == "n/a" and (.met == "yes" or .met == "no") then "n/a" else .met end;'
# The goals' ratios paired per round (.runs): name, numerator row, denominator row, what is divided
# (rps, or CPU: the server's plus Redis's µs per request), the target and its direction.
# shellcheck disable=SC2016 # a jq program: its $ names are jq's
paired_jq='def cpu: .server_cpu_us_per_req + .redis_cpu_us_per_req;
    def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    def two: . * 100 | round / 100 | tostring | if test("\\.") then . else . + ".0" end
        | if test("\\.[0-9]$") then . + "0" else . end;
    def row($t; $s; $r): map(select(.target == $t and .scenario == $s and .round == $r and .check == "ok"))[0];
    def paired($name; $a; $b; $what; $op; $goal):
        . as $runs
        | [$runs[].round] | unique
        | map(. as $r | ($runs | row($a[0]; $a[1]; $r)) as $x | ($runs | row($b[0]; $b[1]; $r)) as $y
              | select($x != null and $y != null)
              | if $what == "rps" then $x.rps / $y.rps else ($x | cpu) / ($y | cpu) end)
        | select(length > 0)
        | (median) as $m
        | "| \($name) | \($m | two) | \(min | two)-\(max | two) | \(length) | "
          + (if $goal == null then "(info) | - |"
             elif $op == ">=" then ">= \($goal) | \(if $m >= $goal then "yes" else "no" end) |"
             else "<= \($goal) | \(if $m <= $goal then "yes" else "no" end) |" end);
    (.runs // []) as $runs | $runs
    | paired("idemgate-proxy CPU per request / nginx proxy"; ["idemgate-proxy", "proxy"]; ["nginx-proxy", "proxy"]; "cpu"; "<="; 1.15),
      paired("idemgate-redis first execution / nginx proxy, req/s"; ["idemgate-redis", "first_execution"]; ["nginx-proxy", "proxy"]; "rps"; ">="; 0.58),
      paired("idemgate-redis CPU (gateway + Redis) per first execution / nginx proxy"; ["idemgate-redis", "first_execution"]; ["nginx-proxy", "proxy"]; "cpu"; "<="; null),
      paired("idemgate-redis replay / bare Beast, req/s"; ["idemgate-redis", "replay_one"]; ["bare-beast", "static"]; "rps"; ">="; 0.95),
      paired("idemgate-redis-tier replay / bare Beast, req/s"; ["idemgate-redis-tier", "replay_one"]; ["bare-beast", "static"]; "rps"; ">="; 0.95),
      paired("idemgate-redis-tier replay / nginx cache hit, req/s"; ["idemgate-redis-tier", "replay_one"]; ["nginx-cache", "replay_one"]; "rps"; ">="; 1.3),
      paired("idemgate-redis-tier CPU per replay / bare Beast"; ["idemgate-redis-tier", "replay_one"]; ["bare-beast", "static"]; "cpu"; "<="; 1.05)'
inputs=("$@") out_dir=""
if (($# >= 2)) && [[ ${inputs[-1]} != *.json ]]; then
    out_dir=${inputs[-1]}
    unset 'inputs[-1]'
fi
command -v jq >/dev/null || die "jq not found (apt-get install jq)"
if ((${#inputs[@]} > 1)); then
    out_dir=${out_dir:-$(dirname "${inputs[0]}")}
    mkdir -p "$out_dir"
    merged=$(mktemp -d /tmp/idemgate-report.XXXXXX)
    trap 'rm -rf "$merged"' EXIT
    layouts=()
    for i in "${!inputs[@]}"; do
        bash "${BASH_SOURCE[0]}" "${inputs[$i]}" "$merged/$i" >/dev/null
        layouts+=("$(jq -r '.layout // "free"' "${inputs[$i]}")")
    done
    {
        echo "# idemgate bench — layouts ${layouts[*]}"
        echo
        echo "One report per machine layout below, from $(printf "\`%s\` " "${inputs[@]##*/}")(\`LAYOUTS=\"${layouts[*]}\" bench/run.sh\`"
        echo "runs the bench once per layout). First the ratios side by side:"
        echo
        printf '| ratio / figure |'; printf ' %s |' "${layouts[@]}"; echo
        printf '|---|'; printf -- '---:|%.0s' "${layouts[@]}"; echo
        for i in "${!inputs[@]}"; do
            jq -r --arg i "$i" "$ratio_jq"' .ratios[] | [$i, .name, figure] | @tsv' "${inputs[$i]}"
        done | awk -F'\t' -v n="${#inputs[@]}" '
            !($2 in seen) { seen[$2] = 1; order[++count] = $2 }
            { value[$2, $1] = $3 }
            END { for (r = 1; r <= count; r++) { line = "| " order[r] " |"
                  for (i = 0; i < n; i++) line = line " " (((order[r], i) in value) ? value[order[r], i] : "-") " |"
                  print line } }'
        for i in "${!inputs[@]}"; do
            echo
            sed -e 's/^# idemgate bench — /## Layout '"${layouts[$i]}"' — /' -e 's/^### /#### /' "$merged/$i/latest.md"
        done
        latency_section "$out_dir"
    } >"$out_dir/latest.md"
    for i in "${!inputs[@]}"; do
        [[ -f $merged/$i/latest.svg ]] || continue
        if ((i == 0)); then cp "$merged/$i/latest.svg" "$out_dir/latest.svg"; else cp "$merged/$i/latest.svg" "$out_dir/latest-${layouts[$i]}.svg"; fi
    done
    say "wrote $out_dir/latest.md (layouts ${layouts[*]})"
    exit 0
fi
json=${inputs[0]}
[[ -r $json ]] || die "$json: no such file"
out_dir=${out_dir:-$(dirname "$json")}
jq -e 'type == "object" and has("medians")' "$json" >/dev/null 2>&1 || die "$json: not a bench results JSON"
mkdir -p "$out_dir"
tmp=$(mktemp -d /tmp/idemgate-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

field() { jq -r "$1" "$json"; } # a jq expression on the results, as raw text
stamp=$(field .date)
commit=$(field .commit)
only=$(field '.only // ""')
cpu_model=$(field '.cpu_model // "CPU model not recorded"')
allocator=$(field '.allocator // "allocator: not recorded"')
duration=$(field .duration_s) rounds=$(field .rounds) wrk_threads=$(field .wrk_threads)
connections=$(field .connections) server_threads=$(field .server_threads) cores=$(field .cores)
load_start=$(field .loadavg_start) load_end=$(field .loadavg_end)
layout=$(field '.layout // ""')
steal=$(field 'if has("steal_ticks") then "\(.steal_ticks) ticks (\(.steal_pct) % of the \(.run_cpu_ticks) ticks of CPU time)" else "" end')
# Before these were recorded: the storm's own figures, the memory step's, any gateway row.
storm_keys=$(field '.storm_keys // .storm[0].client.keys // "?"')
storm_repeats=$(field '.storm_repeats // .storm[0].client.copies // "?"')
records=$(field '.records // .redis_memory[0]?.records // "?"')
gateway_built=$(field 'if has("gateway_built") then .gateway_built else any(.medians[]; .target | startswith("idemgate-")) end')

# The medians with the formats run.sh printed them in (jq prints 8.50 as 8.5):
#   target scenario rps p50 p99 server_cpu redis_cpu check rps_min rps_max server_sys ("-" in a
#   JSON written before the kernel's part was recorded)
summary=$tmp/summary.tsv
jq -r '.medians[] | [.target, .scenario, .rps, .p50_us, .p99_us, .server_cpu_us_per_req, .redis_cpu_us_per_req,
    .check, .rps_min, .rps_max, (.server_sys_us_per_req // "-")] | @tsv' "$json" |
    awk -F'\t' '{ printf "%s\t%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%.0f\t%.0f\t%s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
        ($11 == "-" ? "-" : sprintf("%.2f", $11)) }' >"$summary"

# The storm's client JSON as idemgate-loadtest printed it: jq would rewrite its numbers (1E0 as 1),
# so it is cut from the line run.sh wrote for each entry; jq's form only if that layout is gone.
storm_count=$(field '.storm | length')
storm_client=$tmp/storm-client.txt
awk 'index($0, "\"storm\":[") == 1 { inside = 1; next }
    inside && index($0, "{\"target\":\"") == 1 && (i = index($0, ",\"client\":")) {
        raw = substr($0, i + 10)
        sub(/\}(\],|,)$/, "", raw)
        print (raw == "null" ? "" : raw)
        next
    }
    inside { exit }' "$json" >"$storm_client"
if [[ $(wc -l <"$storm_client") -ne $storm_count ]]; then
    jq -r '.storm[] | if .client == null then "" else .client | tojson end' "$json" >"$storm_client"
fi
jq -r '.storm[] | [.target, .verdict, .upstream_executions] | @tsv' "$json" | paste - "$storm_client" >"$tmp/storm.tsv"

md=$out_dir/latest.md
{
    echo "# idemgate bench — $stamp"
    echo
    echo "Commit $commit, $cpu_model." "idemgate's $allocator."
    echo "Command: \`${only:+ONLY=$only }bench/run.sh\` (DURATION=${duration}s per run, ROUNDS=$rounds interleaved, wrk -t$wrk_threads -c$connections," \
        "servers with $server_threads threads/workers, $cores cores)."
    case $layout in
    pinned) echo "Layout: pinned (\`PIN=1\`): every server under test with 1 thread (nginx, haproxy: 1 worker) on CPU 1; wrk, the upstream and Redis on CPU 0 (\`_redis_cpu1\` rows: Redis on CPU 1 beside the gateway)." ;;
    free) echo "Layout: free (\`PIN\` unset): every process on every CPU, servers with $server_threads threads/workers." ;;
    *) echo "Layout: not recorded (runs before 2026-12-07: free, every process on every CPU)." ;;
    esac
    echo "Load average (1, 5, 15 min) before the runs: $load_start; at the end: $load_end. The bench itself keeps"
    echo "about 2-3 runnable; more means other work shared the cores during the runs."
    echo "Steal time from /proc/stat over the run: ${steal:-not recorded in this results file}."
    if [[ $(field 'has("request_bytes_large")') = true ]]; then
        echo "Medians over $rounds rounds. Every target sits in front of the same nginx upstream (201 + 33-byte JSON;"
        echo "\`_1k\` rows send $(field .request_bytes_large)-byte request bodies to a path it answers with $(field .answer_bytes_large) bytes)."
    else
        echo "Medians over $rounds rounds. Every target sits in front of the same nginx upstream (201 + 33-byte JSON)."
    fi
    echo "The machine is shared: other processes (builds) running at the same time lower every figure; compare ratios."
    echo
    echo "| target | scenario | req/s (median) | req/s min–max | p50 µs | p99 µs | server CPU µs/req | of it in the kernel | redis CPU µs/req | check |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    while IFS=$'\t' read -r t s r p50 p99 cpu rcpu v lo hi sys; do
        [[ $t = idemgate-redis || $t = idemgate-redis-tier || $t = idemgate-redis-log || $t = idemgate-redis-traced || $t = idemgate-uring || $t = idemgate-cluster || $t = idemgate-tls || $t = idemgate-https || $t = express-node* ]] || rcpu=""
        if [[ $v = ok ]]; then
            echo "| $t | $s | $r | $lo–$hi | $p50 | $p99 | $cpu | $sys | $rcpu | ok |"
        else
            echo "| $t | $s | FAIL | | | | | | | $v |"
        fi
    done <"$summary"
    if [[ $(field '[.medians[] | select(.cpu_account)] | length') -gt 0 ]]; then
        echo
        echo "CPU account per row: where the machine's CPU time went during the row's runs, in % of all of it (every CPU;"
        echo "median of each part over the rounds). client: wrk; server: the target's processes; upstream: the nginx behind"
        echo "it; Redis: the redis-server(s) behind a gateway; other: every other process; idle: idle and iowait. Each part is"
        echo "measured apart (the processes from /proc/PID/stat, idle and steal from /proc/stat), so the sum checks the"
        echo "account: a row closes when every round's sum is within"
        echo "$(field '.cpu_account_tolerance_pct // 5') % of 100. irq+softirq: the machine's share in interrupts (/proc/stat); this kernel"
        echo "counts an interrupt by tick in the process it interrupted too, so that share is inside the parts, not added to"
        echo "the sum. client and upstream µs/req: their CPU per request, as server CPU above."
        echo
        echo "| target | scenario | client % | server % | upstream % | Redis % | other % | idle % | sum % | closes | irq+softirq % | client µs/req | upstream µs/req |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
        jq -r '.medians[] | select(.cpu_account and .check == "ok") | .cpu_account as $a |
            [.target, .scenario, $a.client_pct, $a.server_pct, $a.upstream_pct, $a.redis_pct, $a.other_pct, $a.idle_pct,
             $a.sum_pct, (if $a.closes then "yes" else "**NO**" end), ($a.irq_softirq_pct // 0), $a.client_cpu_us_per_req,
             $a.upstream_cpu_us_per_req] | @tsv' "$json" |
            awk -F'\t' '{ printf "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %.1f | %.2f | %.2f |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }'
    else
        echo
        echo "CPU account per row (client, server, upstream, Redis, other, idle): not recorded in this results file."
    fi
    if ((storm_count)); then
        echo
        echo "Duplicate storm: $storm_keys new keys x $storm_repeats copies over $connections connections (\`idemgate-loadtest --mode storm\`), against the counting test upstream."
        echo
        echo "| target | result | upstream executions | client counts |"
        echo "|---|---|---:|---|"
        while IFS=$'\t' read -r t v ran d; do
            echo "| $t | $v | $ran | \`$d\` |"
        done <"$tmp/storm.tsv"
    fi
    if [[ $(field '.syscalls // [] | length') -gt 0 ]]; then
        echo
        if [[ $(field '.syscalls_method // "strace"') = perf ]]; then
            echo "System calls per request (the kernel's tracepoints read by \`perf stat\` on a separate 2 s run, wrk -t1 -c16; not timed):"
        else
            echo "System calls per request (\`strace -c -f\` on a separate 2 s run, wrk -t1 -c16; strace slows the target, so no timing here):"
        fi
        echo
        echo "| target | scenario | requests | system calls | per request | most frequent (per request) |"
        echo "|---|---|---:|---:|---:|---|"
        jq -r '.syscalls[] | [.target, .scenario, .requests, .calls, .per_request, .top] | @tsv' "$json" |
            awk -F'\t' '{ printf "| %s | %s | %s | %s | %.2f | %s |\n", $1, $2, $3, $4, $5, $6 }'
    elif [[ $(field 'has("syscalls")') = false ]]; then
        echo
        echo "System calls per request: not recorded in this results file (written before run.sh kept them in the JSON)."
    fi
    if [[ $(field 'has("tls")') = true ]]; then
        echo
        echo "TLS termination on the client hop (\`TLS_TARGETS=1\`, $(field .tls.duration_s)s per run): one EC P-256 certificate for every target,"
        echo "TLS 1.3 with $(field .tls.suite) and $(field .tls.group) pinned on both sides (nginx: \`ssl_conf_command Ciphersuites\`,"
        echo "\`ssl_ecdh_curve\`; idemgate, which has no cipher setting, and wrk: an OpenSSL configuration in \`OPENSSL_CONF\`);"
        if [[ $(field .tls.resumption) = 1 ]]; then
            echo "session tickets on (\`TLS_RESUMPTION=1\`): wrk resumes the session on every reconnect, so \`_close\` rows are resumed handshakes."
        else
            echo "no session tickets or cache on either side (\`TLS_RESUMPTION=0\`): every new connection is a full handshake."
        fi
        echo "\`_close\` rows send \`Connection: close\`: a new connection (and on https a new handshake) per request, also on the plain"
        echo "\`nginx-cache\` and \`idemgate-redis\` replay_one_close rows, which give a new connection's cost without TLS; the other rows keep"
        echo "$connections connections open. New connections per request counted around each run (idemgate: \`idemgate_tls_handshakes_total\`;"
        echo "nginx: \`stub_status\` accepts, which has no resumption figure):"
        echo
        echo "| target | scenario | new connections per request (median) | resumed handshakes (all rounds) |"
        echo "|---|---|---:|---:|"
        jq -r '.tls.connections[] | [.target, .scenario, .new_connections_per_request, .resumed] | @tsv' "$json" |
            awk -F'\t' '{ printf "| %s | %s | %.3f | %s |\n", $1, $2, $3, $4 }'
        echo
        echo "Negotiated with an unpinned \`openssl s_client\` before the runs (protocol, suite, key exchange, signature; resumed: whether"
        echo "the second of two connections of one curl resumed the first one's session):"
        echo
        jq -r '.tls.negotiated | to_entries[] | "- \(.key): \(if .value == "" then "not checked" else .value end)"' "$json"
    fi
    if [[ $(field '.ratios | length') -gt 0 ]]; then
        echo
        echo "| ratio / figure | measured | target | met |"
        echo "|---|---:|---|---|"
        jq -r "$ratio_jq"' .ratios[] | "| \(.name) | \(figure) | \(.target) | \(verdict) |"' "$json"
    fi
    paired=$(jq -r "$paired_jq" "$json")
    if [[ -n $paired ]]; then
        echo
        echo "The same ratios paired per round: each round's idemgate run divided by its yardstick's run of the same round,"
        echo "seconds apart, then the median and range of those per-round ratios. A ratio of two medians (above) can pair a"
        echo "fast round with a slow one when the machine changes speed during the run; the paired median cannot."
        echo
        echo "| ratio, paired per round | median | range | rounds | target | met |"
        echo "|---|---:|---|---:|---|---|"
        echo "$paired"
    fi
    echo
    echo "Server CPU per request: utime+stime of the target's own processes (the gateway; nginx master and workers;"
    echo "haproxy; not the upstream behind a proxy), all threads, read from /proc (what pidstat reads) before and"
    echo "after a run, divided by the requests wrk completed. It depends far less on other load than req/s does."
    echo "Of it in the kernel: the stime part alone (system calls, loopback TCP, wake-ups), the same way."
    echo "Redis CPU is the redis-server behind idemgate-redis; the CPU ratios count it with the gateway. Redis memory: INFO used_memory delta over $records records per body size created through the gateway into an empty redis-server."
    echo
    echo "Sanity checks before the runs:"
    if [[ $(field 'has("sanity")') = true ]]; then
        jq -r '.sanity | to_entries[] | "- \(.key): \(.value)"' "$json" | sort
    else
        echo "- not recorded in this results file (written before run.sh kept them in the JSON)"
    fi
    [[ $gateway_built = true ]] || echo "- idemgate: NOT BUILT, gateway targets skipped"
    latency_section "$out_dir"
} >"$md"

if command -v gnuplot >/dev/null; then
    # label, req/s, colour: anchors blue, idemgate-redis orange, idemgate-memory green
    awk -F'\t' '$8 == "ok" {
        colour = $1 == "idemgate-redis" ? 14254635 : ($1 == "idemgate-memory" ? 4168786 : 3894952)
        printf "\"%s\\n%s\" %s %s\n", $1, $2, $3, colour
    }' "$summary" >"$tmp/chart.dat"
    bars=$(wc -l <"$tmp/chart.dat")
    gnuplot <<EOF 2>"$tmp/gnuplot.err" || say "gnuplot failed: $(cat "$tmp/gnuplot.err")"
set terminal svg size 1100,520 dynamic noenhanced font "sans,11" background rgb "white"
set output "$out_dir/latest.svg"
set title "idemgate bench $stamp: req/s, median of $rounds (wrk -t$wrk_threads -c$connections, $cores cores)\nblue: anchors, orange: idemgate with Redis, green: idemgate with the memory store"
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
plot "$tmp/chart.dat" using 0:2:3:xtic(1) with boxes notitle lc rgb variable, \
     "" using 0:2:(sprintf("%.1fk", \$2 / 1000)) with labels offset 0,0.7 font ",9" notitle
EOF
else
    say "gnuplot not installed: no latest.svg"
fi
say "wrote $md${bars:+ and $out_dir/latest.svg}"
