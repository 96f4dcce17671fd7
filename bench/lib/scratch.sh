# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/scratch.sh: what the bench's standalone tools (tombstone_cost.sh, tools/ab_builds.sh,
# tools/cpu_split.sh) share: a work dir removed on exit after every process recorded in $pids is
# stopped, a free loopback port, and nginx instances that write only under the work dir.

# scratch_init PREFIX: sets $work (a new dir /tmp/PREFIX.XXXXXX) and $pids, and the EXIT trap.
scratch_init() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    pids=()
    trap scratch_cleanup EXIT
}
scratch_cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# nginx_conf NAME WORKERS HTTP_BLOCK: $work/NAME.conf, a foreground nginx with WORKERS workers
# writing only under $work/NAME, HTTP_BLOCK inside its http block.
nginx_conf() {
    mkdir -p "$work/$1"
    cat >"$work/$1.conf" <<NGINX
worker_processes $2; daemon off; error_log $work/$1/error.log; pid $work/$1/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 1000000;
  client_body_temp_path $work/$1; proxy_temp_path $work/$1; fastcgi_temp_path $work/$1;
  uwsgi_temp_path $work/$1; scgi_temp_path $work/$1;
  $3
}
NGINX
}

# start_nginx NAME: starts the nginx of nginx_conf NAME in the background, its PID in $pids and
# $started_pid.
start_nginx() {
    nginx -c "$work/$1.conf" -p "$work/$1" &
    started_pid=$!
    pids+=("$started_pid")
}

# start_upstream PORT: the bench's upstream on 127.0.0.1:PORT, one nginx worker answering every
# request 201 with a 33-byte JSON body (as bench/conf/upstream.conf).
start_upstream() {
    nginx_conf upstream 1 "server { listen 127.0.0.1:$1;
    location / { default_type application/json; return 201 '{\"id\":\"ord_1\",\"status\":\"created\"}'; } }"
    start_nginx upstream
}
