# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/node.sh: the Node peer, what a Node team would run instead of idemgate: Express with
# express-idempotency, records in the same redis-server as idemgate-redis (through
# express-idempotency-redis-adapter) and express-http-proxy in front of the same upstream
# (bench/peers/express/). Two targets: express-node (one Node process) and express-node-cluster
# (a node:cluster primary with THREADS workers), and express-node-proxy (one process, the
# middleware left out: Express and the proxy alone). NODE_PEER=0 skips them.
# Sourced by run.sh after bench/lib/servers.sh and bench/lib/checks.sh.
# shellcheck disable=SC2154,SC2004 # settings, ports and PIDs are assigned by run.sh and servers.sh;
# sanity is checks.sh's associative array

node_dir=$bench_dir/peers/express
node_targets=() # the Node targets that run

# npm ci into bench/peers/express/node_modules (the exact versions of its package-lock.json), unless
# the installed tree already matches the lock; 0 when the peer can run.
node_install() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        say "node or npm missing: no Node peer rows"
        return 1
    fi
    # The lock the tree was installed from, kept beside it: npm ci again only when the lock changed.
    if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.bench-installed-lock"; then
        say "npm ci in $node_dir"
        (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm-ci.log" 2>&1 ||
            { cat "$work/npm-ci.log" >&2; say "npm ci failed: no Node peer rows"; return 1; }
        cp "$node_dir/package-lock.json" "$node_dir/node_modules/.bench-installed-lock"
    fi
}

# start_node_peer NAME UPSTREAM_PORT REDIS_DB [WORKERS [MORE ARGUMENTS]]: sets port_<name>.
start_node_peer() {
    local name=$1 upstream=$2 db=$3 workers=${4:-0} peer_port # not "port": pick_port has a local of that name
    shift $(($# < 4 ? $# : 4))
    pick_port peer_port
    NODE_ENV=production start "$name" node "$node_dir/server.js" --port "$peer_port" --upstream-port "$upstream" \
        --redis-port "$redis_port" --redis-db "$db" --workers "$workers" "$@"
    wait_for_log "$name" '^listening on ' >/dev/null
    eval "port_${name//-/_}=$peer_port"
}

start_node_targets() {
    [[ ${NODE_PEER:-1} = 1 && -n ${redis_port:-} ]] || return 0
    node_install || return 0
    # A database of its own per target: the adapter's keys are the bare Idempotency-Key.
    start_node_peer express-node "$upstream_port" 1
    start_node_peer express-node-cluster "$upstream_port" 2 "$THREADS"
    # The same process without the idempotency middleware: what Express and the proxy cost alone.
    start_node_peer express-node-proxy "$upstream_port" 1 0 --no-idempotency
    node_targets=(express-node express-node-cluster)
    say "Node peer: express-node $(port_of express-node), express-node-cluster $(port_of express-node-cluster) ($THREADS workers)"
}

# express-idempotency marks no replay on the answer: a replay is an identical 201 that did not
# reach the upstream (its request count moves by one over the two POSTs).
check_node_replay() {
    local target=$1 port=$2 first second before after key="sanity-$run_id"
    before=$(upstream_served)
    first=$(post "$port" "$key")
    second=$(post "$port" "$key")
    after=$(upstream_served)
    if ! grep -qE '^HTTP/1.1 201' <<<"$first"; then
        sanity[$target]="first answer not 201: $(head -1 <<<"$first")"
    elif ! grep -qE '^HTTP/1.1 201' <<<"$second"; then
        sanity[$target]="second answer not 201: $(head -1 <<<"$second")"
    elif [[ $(sed '1,/^\r$/d' <<<"$first") != $(sed '1,/^\r$/d' <<<"$second") ]]; then
        sanity[$target]="replayed body differs from the first"
    elif ((after - before - 1 != 1)); then # the status read counts once
        sanity[$target]="upstream served $((after - before - 1)) requests for a POST and its replay"
    else
        sanity[$target]=ok
    fi
}

run_node_sanity_checks() {
    local t
    if ((${#node_targets[@]})); then
        grep -q '^HTTP/1.1 201' <<<"$(post "$(port_of express-node-proxy)" "sanity-$run_id")" &&
            sanity[express-node-proxy]=ok || sanity[express-node-proxy]="no 201"
    fi
    for t in "${node_targets[@]}"; do
        check_node_replay "$t" "$(port_of "$t")"
        say "sanity $t: ${sanity[$t]}"
        post "$(port_of "$t")" bench-replay-one >/dev/null # replay_one's key, warmed once
    done
}

# The duplicate storm against the one-process peer in front of the counting test upstream, as
# run_storm does for the gateways: STORM_REPEATS copies of each of STORM_KEYS keys at once. The
# verdict is the upstream's count alone (the client's replay checks look for idemgate's
# Idempotent-Replayed marker, which this peer does not send); its status counts are kept.
run_node_storm() {
    local counter_port=$1 before after ran detail verdict t=express-node-storm
    ((${#node_targets[@]})) || return 0
    start_node_peer "$t" "$counter_port" 3
    before=$(executions)
    detail=$("$bin/idemgate-loadtest" --url "http://127.0.0.1:$(port_of "$t")/api/orders" --mode storm \
        --key-prefix "storm-$run_id-$t" --keys "$STORM_KEYS" --copies "$STORM_REPEATS" \
        --connections "$CONNECTIONS" --threads 1 -H 'Content-Type: application/json' \
        --body '{"item":"book","qty":1}' --json 2>"$work/$t.client.err") || true
    after=$(executions)
    ran=$((after - before))
    if ((ran == STORM_KEYS)); then
        verdict=PASS
    else
        verdict="FAIL: upstream ran $ran times for $STORM_KEYS keys; answers $(grep -o '"status":{[^}]*}' <<<"$detail" || true)"
    fi
    storm_results+=("express-node"$'\t'"$verdict"$'\t'"$ran"$'\t'"$detail")
    say "storm express-node: $verdict (upstream executions $ran)"
}

# The Node peer beside idemgate-redis (the same Redis, the same work) and the anchors: throughput
# and CPU per request (server + Redis on both sides of the idemgate ratios). Called by
# compute_ratios (bench/lib/ratios.sh).
node_ratios() {
    local t rep first
    for t in "${node_targets[@]}"; do
        rep=$(ok_rps "$t" replay_one) first=$(ok_rps "$t" first_execution)
        add_ratio "$t replay / idemgate-redis replay" "$(ratio "$rep" "$(ok_rps idemgate-redis replay_one)")" "(info)" "-"
        add_ratio "$t replay / nginx cache hit" "$(ratio "$rep" "$(ok_rps nginx-cache replay_one)")" "(info)" "-"
        add_ratio "$t replay / bare Beast" "$(ratio "$rep" "$(ok_rps bare-beast static)")" "(info)" "-"
        add_ratio "$t first execution / idemgate-redis first execution" \
            "$(ratio "$first" "$(ok_rps idemgate-redis first_execution)")" "(info)" "-"
        add_ratio "$t first execution / nginx proxy" "$(ratio "$first" "$(ok_rps nginx-proxy proxy)")" "(info)" "-"
        add_ratio "$t CPU (Node + Redis) per replay / idemgate-redis CPU (gateway + Redis) per replay" \
            "$(cpu_ratio "$(cpu_of "$t" replay_one)" "$(cpu_of idemgate-redis replay_one)")" "(info: lower is cheaper)" "-"
        add_ratio "$t CPU (Node + Redis) per first execution / idemgate-redis CPU (gateway + Redis)" \
            "$(cpu_ratio "$(cpu_of "$t" first_execution)" "$(cpu_of idemgate-redis first_execution)")" "(info: lower is cheaper)" "-"
        add_ratio "$t CPU (Node + Redis) per first execution / nginx proxy CPU per request" \
            "$(cpu_ratio "$(cpu_of "$t" first_execution)" "$(cpu_of nginx-proxy proxy)")" "(info: lower is cheaper)" "-"
    done
    ((${#node_targets[@]})) || return 0
    add_ratio "express-node-proxy (no idempotency) / nginx proxy" "$(ratio "$(ok_rps express-node-proxy proxy)" "$(ok_rps nginx-proxy proxy)")" "(info)" "-"
    add_ratio "express-node-proxy CPU per request / nginx proxy CPU per request" \
        "$(cpu_ratio "$(cpu_of express-node-proxy proxy)" "$(cpu_of nginx-proxy proxy)")" "(info: lower is cheaper)" "-"
    local a b
    a=$(cpu_of express-node first_execution) b=$(cpu_of express-node-proxy proxy)
    add_ratio "express-idempotency's CPU per first execution (µs): express-node (Node + Redis) − express-node-proxy" \
        "$([[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a - b }' || echo n/a)" "(info)" "-"
}
