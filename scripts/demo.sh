#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo: installs what is missing, builds, then starts Redis (on a free port, never 6379),
# the sample order-service and the idemgate gateway in front of it, and runs the curl lines
# that show the three idempotency layers (see order_service/README.md):
#   create an order, pay it (Idempotency-Key K1), retry the payment (replayed by the gateway),
#   pay again with a new key K2 (passes the gateway, stopped by the domain guard), the payment
#   provider's webhook (stopped by the guard), the payment as a stream event (a new message:
#   the guard decides), that message delivered again (skipped by the inbox), and /stats; then
#   what the gateway itself says: the key reused with another body (refused), a retry while the
#   first attempt is still running (409 in flight), the record of a key through the admin API
#   (with a token made for this run), and its /metrics.
# Then it keeps everything running until Ctrl-C and stops all it started.
# It builds only what it runs (idemgate and order-service, no tests, no bench) into its own
# folder, build-demo/ (BUILD_DIR overrides it), and installs only what that needs
# (scripts/install-deps.sh --run); scripts/test.sh keeps its own build/ with every test.
#   --no-wait     stop everything and exit after the curl lines (used to test this script)
#   --no-build    skip installing and building (binaries must already be in $BUILD_DIR/bin)
#   --build-only  install what is missing and build, then exit (the quick start, the Dockerfile)
set -euo pipefail
cd "$(dirname "$0")/.."

wait_at_end=1
build=1
build_only=0
for arg in "$@"; do
  case "$arg" in
    --no-wait) wait_at_end=0 ;;
    --no-build) build=0 ;;
    --build-only) build_only=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

build_dir="${BUILD_DIR:-build-demo}"
if ((build)); then
  bash scripts/install-deps.sh --run
  # The demo's own build: the two programs it runs, without the tests (doctest is not in the
  # --run list) and the bench programs, compiled in batches (IDEMGATE_UNITY: a third less compiler
  # time on a first build; the image's build stage and CI build this way too).
  BUILD_DIR="$build_dir" bash scripts/build.sh -DIDEMGATE_BUILD_TESTS=OFF -DIDEMGATE_BUILD_BENCH=OFF \
    -DIDEMGATE_UNITY=ON -- idemgate order-service
fi
if ((build_only)); then
  echo "demo.sh: built $build_dir/bin/idemgate and $build_dir/bin/order-service"
  exit 0
fi
bin="$build_dir/bin"
for b in idemgate order-service; do
  [[ -x "$bin/$b" ]] || { echo "demo.sh: $bin/$b not found (build first)" >&2; exit 1; }
done

work="$(mktemp -d -t idemgate-demo-XXXXXX)"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "demo: stopping"; exit 0' INT TERM

# Waits (bounded) until file $1 has a line matching $2; prints that line.
wait_for_line() {
  local file=$1 pattern=$2 i
  for ((i = 0; i < 200; i++)); do
    if grep -m1 -- "$pattern" "$file" 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "demo.sh: timed out waiting for '$pattern' in $file:" >&2
  cat "$file" >&2
  return 1
}

# "127.0.0.1:PORT" of JSON field $2 in line $1.
field() { sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p" <<<"$1"; }

# --- Redis on a free port (a random one; retried if taken) ---
redis_port=""
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 40000))
  ((port == 6379)) && continue
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --daemonize no >"$work/redis.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then redis_port=$port; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [[ -n "$redis_port" ]]; then pids+=("$pid"); break; fi
  kill "$pid" 2>/dev/null || true
done
[[ -n "$redis_port" ]] || { echo "demo.sh: could not start redis-server" >&2; cat "$work/redis.log" >&2; exit 1; }

# --- the order service (domain guard + inbox), consuming the payments stream ---
"$bin/order-service" --listen 127.0.0.1:0 --db "$work/orders.db" --redis "127.0.0.1:$redis_port" \
  --stream payments --group order-service --consumer demo-1 --claim-idle-ms 1000 >"$work/order-service.log" 2>&1 &
pids+=("$!")
line=$(wait_for_line "$work/order-service.log" '"msg":"listening"')
orders=$(field "$line" listen)
wait_for_line "$work/order-service.log" '"msg":"consumer_ready"' >/dev/null

# --- the gateway (API layer) in front of it ---
sed -e "s/\${LISTEN}/127.0.0.1:0/" -e "s/\${ADMIN}/127.0.0.1:0/" \
    -e "s/\${REDIS}/127.0.0.1:$redis_port/" -e "s/\${ORDERS}/$orders/" config/demo.yaml >"$work/idemgate.yaml"
# The admin API's bearer token, made for this run (the gateway reads it from the environment).
IDEMGATE_ADMIN_TOKEN=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
export IDEMGATE_ADMIN_TOKEN
"$bin/idemgate" --config "$work/idemgate.yaml" >"$work/idemgate.log" 2>&1 &
pids+=("$!")
line=$(wait_for_line "$work/idemgate.log" '"msg":"listening"')
gw=$(field "$line" listen)
admin=$(field "$line" admin_listen)
for ((i = 0; i < 200; i++)); do
  curl -sf "http://$admin/readyz" >/dev/null 2>&1 && break
  sleep 0.05
done
curl -sf "http://$admin/readyz" >/dev/null || { echo "demo.sh: gateway not ready" >&2; cat "$work/idemgate.log" >&2; exit 1; }

echo
echo "redis-server   127.0.0.1:$redis_port"
echo "order-service  $orders   (logs: $work/order-service.log)"
echo "idemgate       $gw   admin $admin   (logs: $work/idemgate.log)"
echo "admin token    \$IDEMGATE_ADMIN_TOKEN=$IDEMGATE_ADMIN_TOKEN"

# Prints a command (quoted so it can be pasted), then runs it.
quote() {
  local a out=()
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=@%+-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
  done
  echo "\$ ${out[*]}"
}
run() {
  quote "$@"
  "$@"
  echo
  echo
}
h='Content-Type: application/json'

echo
echo "# 1. Create an order through the gateway"
body='{"items":[{"sku":"book","qty":2,"price_cents":1250}]}'
quote curl -s -X POST "http://$gw/api/v1/orders" -H "$h" -H 'Idempotency-Key: order-1' -d "$body"
created=$(curl -s -X POST "http://$gw/api/v1/orders" -H "$h" -H 'Idempotency-Key: order-1' -d "$body")
echo "$created"
echo
id=$(field "$created" id)
[[ -n "$id" ]] || { echo "demo.sh: no order id in: $created" >&2; exit 1; }
pay='{"amount_cents":2500,"provider_ref":"psp-123"}'

echo "# 2. Pay it with Idempotency-Key K1: the service runs it (201, result paid)"
run curl -s -i -X POST "http://$gw/api/v1/orders/$id/payments" -H "$h" -H 'Idempotency-Key: K1' -d "$pay"

echo "# 3. The client retries the same request: API layer, the gateway replays it (Idempotent-Replayed: true)"
run curl -s -i -X POST "http://$gw/api/v1/orders/$id/payments" -H "$h" -H 'Idempotency-Key: K1' -d "$pay"

echo "# 4. The same payment with a new key K2 passes the gateway: domain layer, the guard answers already_paid"
run curl -s -i -X POST "http://$gw/api/v1/orders/$id/payments" -H "$h" -H 'Idempotency-Key: K2' -d "$pay"

echo "# 5. The provider's webhook (it never passes the gateway) reports the same payment: already_paid"
run curl -s -X POST "http://$orders/webhooks/payments" -H "$h" \
  -d "{\"order_id\":\"$id\",\"amount_cents\":2500,\"provider_ref\":\"psp-123\"}"

echo "# 6. The same payment as an event on the stream: a new message ID, so the inbox lets it in and the guard decides"
quote redis-cli -p "$redis_port" XADD payments '*' order_id "$id" amount_cents 2500 provider_ref psp-123
msg=$(redis-cli -p "$redis_port" XADD payments '*' order_id "$id" amount_cents 2500 provider_ref psp-123)
echo "$msg"
wait_for_line "$work/order-service.log" "\"id\":\"$msg\".*\"outcome\":\"applied\""
for ((i = 0; i < 100; i++)); do  # its XACK follows the log line
  [[ "$(redis-cli -p "$redis_port" XPENDING payments order-service | head -1)" == 0 ]] && break
  sleep 0.05
done
echo

echo "# 7. The broker delivers that message again (as after a consumer crash before XACK, simulated"
echo "#    with XCLAIM ... FORCE): message layer, the service reclaims it and the inbox skips it"
run redis-cli -p "$redis_port" XCLAIM payments order-service crashed-consumer 0 "$msg" FORCE JUSTID
wait_for_line "$work/order-service.log" "\"id\":\"$msg\".*\"outcome\":\"duplicate\""
echo

echo "# 8. Executions per endpoint, and still one payment"
run curl -s "http://$orders/stats"

echo "# 9. K1 again with another amount: the key was used for another request, so the gateway refuses"
echo "#    it (409 idempotency-key-reused, an RFC 9457 problem) and nothing runs"
run curl -s -i -X POST "http://$gw/api/v1/orders/$id/payments" -H "$h" -H 'Idempotency-Key: K1' \
  -d '{"amount_cents":9999,"provider_ref":"psp-999"}'

echo "# 10. A retry while the first attempt still runs: K3's payment waits 1.5 s at a slow provider"
echo "#     (X-Provider-Delay-Ms, a hook of the sample service); the gateway answers the retry at once"
echo "#     with 409 request-in-flight and Retry-After, and the first attempt finishes on its own"
curl -s -o "$work/k3-first.txt" -X POST "http://$gw/api/v1/orders/$id/payments" -H "$h" \
  -H 'Idempotency-Key: K3' -H 'X-Provider-Delay-Ms: 1500' -d "$pay" &
first_k3=$!
for ((i = 0; i < 100; i++)); do  # until the gateway holds K3's reservation
  curl -s -H "Authorization: Bearer $IDEMGATE_ADMIN_TOKEN" "http://$admin/admin/v1/records?key=K3" |
    grep -q '"state":"in_flight"' && break
  sleep 0.02
done
run curl -s -i -X POST "http://$gw/api/v1/orders/$id/payments" -H "$h" -H 'Idempotency-Key: K3' -d "$pay"
wait "$first_k3" || true
echo "(the first attempt then answered: $(cat "$work/k3-first.txt"))"
echo

echo "# 11. What the gateway holds for K1: its admin API (admin_listen, bearer token)"
run curl -s -H "Authorization: Bearer $IDEMGATE_ADMIN_TOKEN" "http://$admin/admin/v1/records?key=K1"

echo "# 12. What it did with every request so far, from its Prometheus metrics"
echo "\$ curl -s http://$admin/metrics | grep '^idemgate_requests_total'"
curl -s "http://$admin/metrics" | grep '^idemgate_requests_total' || true
echo

if ((wait_at_end)); then
  echo "Everything keeps running; try more curl lines (the admin token is above). Ctrl-C stops"
  echo "redis-server, order-service and idemgate."
  wait
fi
