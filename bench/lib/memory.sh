# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/memory.sh: Redis memory per record, the step ONLY=memory runs alone and the full run
# runs last. Sourced by run.sh after bench/lib/servers.sh.
# shellcheck disable=SC2154 # settings and paths are assigned by run.sh and servers.sh

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
# $work/memory.tsv as a JSON array (the results' redis_memory).
memory_json() {
    printf "[%s]" "$(awk -F'\t' -v OFS='' '{
        printf "%s{\"body_bytes\":%s,\"records\":%s,\"keys_added\":%s,\"used_memory_delta\":%s,\"bytes_per_record\":%s,", (NR > 1 ? "," : ""), $1, $2, $3, $4, $5
        gsub(/"/, "\x27", $10)
        printf "\"upstream_response_bytes\":%s,\"stored_value_bytes\":%s,\"key_bytes\":%s,\"memory_usage_sample\":%s,\"verdict\":\"%s\"}", $6, $7, $8, $9, $10
    }' "$work/memory.tsv")"
}
