#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Dockerfile with podman and runs the image it makes, on this machine, without a
# container daemon and without a registry:
#   1. base images: the Dockerfile's FROM images (debian:bookworm, debian:bookworm-slim). If they
#      are not in local storage and the registry cannot be reached, a Debian 12 base is made from
#      Debian's packages (mmdebstrap --variant=minbase, slimmed like debian:*-slim: no man pages,
#      docs or translations) and imported under both names.
#   2. podman build --isolation=chroot --pull=never (crun cannot run here; chroot can).
#   3. the README's first command in a fresh root: the build stage (tagged $IMAGE-build in step 2,
#      whose whole-image build takes it from the layer cache) installed and built exactly as scripts/demo.sh
#      does, so `scripts/demo.sh --no-build --no-wait` run in it fails if the demo's package list
#      (install-deps.sh --run) lacks anything the demo needs.
#   4. the runtime image's order-service and gateway (buildah run --isolation=chroot
#      --network=host) on free loopback ports, the gateway with a test config (memory store) in
#      front of the service; checks /healthz, one executed and one replayed POST (Idempotent-
#      Replayed: true, byte-identical body), then prints the image size.
# Everything it starts stops by itself: the processes in the container run under `timeout`, the
# buildah processes under a host `timeout`, and the EXIT trap stops them and removes the working
# container and temporary files.
#   --base-only                      step 1 only (scripts/test.sh runs it while it compiles)
#   --build-only                     steps 1 and 2 only (scripts/test.sh runs it, niced, beside
#                                    the sanitizer pass, then the checks with --run-only)
#   --run-only                       skip steps 1 and 2: run the checks on existing images
#   IMAGE=localhost/idemgate:check   the tag it builds
#   CONTAINER_NO_CACHE=1             build without podman's layer cache (a CI machine's first build)
#   CONTAINER_NEW_BASE=1             make the base images again even if they exist
# Needs podman, buildah and mmdebstrap (scripts/install-deps.sh installs them) and root: run as
# another user it re-runs itself through `sudo -n` (as install-deps.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then
  if sudo -n true 2>/dev/null; then
    exec sudo -n --preserve-env=IMAGE,CONTAINER_NO_CACHE,CONTAINER_NEW_BASE bash "$0" "$@"
  fi
  echo "container-check: needs root (or password-less sudo) for podman --isolation=chroot" >&2
  exit 1
fi

run_only=0
base_only=0
build_only=0
for arg in "$@"; do
  case "$arg" in
    --run-only) run_only=1 ;;
    --base-only) base_only=1 ;;
    --build-only) build_only=1 ;;
    -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "container-check: unknown argument $arg" >&2; exit 2 ;;
  esac
done
image="${IMAGE:-localhost/idemgate:check}"
bases=(docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim)
started=$SECONDS
t0=$SECONDS
step() { # prints and restarts the step clock
  echo "container-check: $1 ($((SECONDS - t0)) s)"
  t0=$SECONDS
}

work="$(mktemp -d -t idemgate-container-XXXXXX)"
container=""
pids=()
# Process $1 and all its descendants, children first.
tree() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$child"; done
  echo "$1"
}
cleanup() {
  local pid procs=() i
  # `buildah run --isolation=chroot` does not pass signals on to the command: signal the whole
  # tree (the command's `timeout` forwards SIGTERM to it), then SIGKILL what is left after 5 s.
  for pid in "${pids[@]}"; do procs+=($(tree "$pid")); done
  if ((${#procs[@]})); then
    kill -TERM "${procs[@]}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "${procs[@]}" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "${procs[@]}" 2>/dev/null || true
  fi
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n "$container" ]]; then buildah rm "$container" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- 1. base images ---
make_bases() {
  local b have=1 p slim=()
  for b in "${bases[@]}"; do podman image exists "$b" || have=0; done
  if [[ "${CONTAINER_NEW_BASE:-0}" != 0 ]]; then have=0; fi
  if ((have)); then
    step "base images present: ${bases[*]}"
    return
  fi
  if [[ "${CONTAINER_NEW_BASE:-0}" == 0 ]] && curl -s -m 5 -o /dev/null https://registry-1.docker.io/v2/; then
    for b in "${bases[@]}"; do podman pull -q "$b" >/dev/null; done
    step "pulled ${bases[*]}"
    return
  fi
  echo "container-check: making a Debian 12 base with mmdebstrap (registry not used)"
  # What debian:*-slim leaves out: man pages, docs (but the copyright files) and translations.
  # The dpkg options stay in the image (/etc/dpkg/dpkg.cfg.d), so later installs skip them too.
  for p in /usr/share/man/ /usr/share/info/ /usr/share/doc/ /usr/share/groff/ /usr/share/lintian/ \
    /usr/share/linda/ /usr/share/locale/ /var/cache/man/; do
    slim+=("--dpkgopt=path-exclude=$p*")
  done
  slim+=("--dpkgopt=path-include=/usr/share/doc/*/copyright"
    "--dpkgopt=path-include=/usr/share/locale/locale.alias")
  # Like Debian's images, dpkg skips fsync (force-unsafe-io, kept in the image for the Dockerfile's
  # installs); eatmydata does the same for mmdebstrap's own dpkg runs (minutes on a busy disk).
  # The merged-usr hook merges /usr without the usrmerge package (which pulls in 47 MB of Perl).
  if ! timeout 900 mmdebstrap --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata --dpkgopt=force-unsafe-io "${slim[@]}" \
    --aptopt='APT::Install-Recommends "false"' bookworm "$work/base.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >"$work/mmdebstrap.log" 2>&1; then
    cat "$work/mmdebstrap.log" >&2
    echo "container-check: mmdebstrap failed" >&2
    exit 1
  fi
  step "mmdebstrap: $(du -m "$work/base.tar" | cut -f1) MB tar"
  podman import -q --change 'CMD ["/bin/bash"]' --change 'LABEL org.idemgate.base=mmdebstrap' \
    "$work/base.tar" "${bases[0]}" >/dev/null
  podman tag "${bases[0]}" "${bases[1]}"
  rm -f "$work/base.tar"
  step "imported as ${bases[*]}"
}

# --- 2. the image ---
build_image() {
  local args=(--isolation=chroot --pull=never) build_start=$SECONDS
  if [[ "${CONTAINER_NO_CACHE:-0}" != 0 ]]; then args+=(--no-cache); fi
  # Each output line gets the seconds since the build started: the log shows where the time goes
  # (packages, compile, runtime stage). The build stage first, under its own tag (step 3 runs the
  # demo in it); the whole image then takes that stage from the layer cache: one compile.
  timeout 3600 podman build "${args[@]}" --target build -t "$image-build" . 2>&1 | while IFS= read -r line; do
    printf '[%4d s] %s\n' $((SECONDS - build_start)) "$line"
  done
  step "podman build --target build: $image-build"
  timeout 3600 podman build --isolation=chroot --pull=never -t "$image" . 2>&1 | while IFS= read -r line; do
    printf '[%4d s] %s\n' $((SECONDS - build_start)) "$line"
  done
  step "podman build: $image"
}

if ((!run_only)); then
  make_bases
  if ((base_only)); then exit 0; fi
  build_image
  if ((build_only)); then exit 0; fi
fi

run_in() { # runs a command in the working container, bounded on both sides
  local limit=$1
  shift
  timeout -k 5 $((limit + 10)) buildah run --isolation=chroot --network=host "$container" -- \
    timeout -k 2 "$limit" "$@"
}

# --- 3. the demo in the build stage's fresh root ---
container=$(buildah from --pull=never "$image-build")
demo_rc=0
run_in 180 bash scripts/demo.sh --no-build --no-wait >"$work/demo.log" 2>&1 || demo_rc=$?
buildah rm "$container" >/dev/null
container=""
if ((demo_rc != 0)) || ! grep -q '^Idempotent-Replayed: true' "$work/demo.log"; then
  cat "$work/demo.log" >&2
  echo "container-check: FAILED: scripts/demo.sh in the build stage's root (exit $demo_rc)" >&2
  exit 1
fi
step "the demo ran in the build stage's fresh root ($(grep -c '^\$ ' "$work/demo.log") commands shown)"

# --- 4. run the image's order-service and gateway ---
container=$(buildah from --pull=never "$image")

# Waits (bounded) until file $1 has a line matching $2; prints that line.
wait_for_line() {
  local file=$1 pattern=$2 i
  for ((i = 0; i < 300; i++)); do
    if grep -m1 -- "$pattern" "$file" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "container-check: timed out waiting for '$pattern' in $file:" >&2
  cat "$file" >&2
  return 1
}
field() { sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p" <<<"$1"; }

run_in 120 order-service --listen 127.0.0.1:0 --db /tmp/orders.db >"$work/order-service.log" 2>&1 &
pids+=("$!")
orders=$(field "$(wait_for_line "$work/order-service.log" '"msg":"listening"')" listen)

cat >"$work/idemgate.yaml" <<EOF
listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
threads: 1
access_log: true
store: { type: memory }
upstreams:
  orders: { address: "$orders" }
routes:
  - path_prefix: "/api/"
    upstream: orders
    idempotency: { methods: [POST], key_header: Idempotency-Key, record_ttl: 1h }
timeouts: { drain: 1s }
EOF
# The config is copied in (not bind-mounted): the image's gateway runs as its own user.
buildah copy --chmod 0644 "$container" "$work/idemgate.yaml" /tmp/idemgate-check.yaml >/dev/null
run_in 120 idemgate --config /tmp/idemgate-check.yaml >"$work/idemgate.log" 2>&1 &
pids+=("$!")
line=$(wait_for_line "$work/idemgate.log" '"msg":"listening"')
gw=$(field "$line" listen)
admin=$(field "$line" admin_listen)
step "order-service at $orders, gateway at $gw (admin $admin), both from the image"

fail() {
  echo "container-check: FAILED: $*" >&2
  echo "--- idemgate log:" >&2
  cat "$work/idemgate.log" >&2
  echo "--- order-service log:" >&2
  cat "$work/order-service.log" >&2
  exit 1
}
health=$(curl -s -m 5 "http://$admin/healthz") || fail "/healthz did not answer"
echo "container-check: /healthz: $health"

body='{"items":[{"sku":"book","qty":2,"price_cents":1250}]}'
post() { # $1: output prefix
  curl -s -m 10 -D "$1.headers" -o "$1.body" -w '%{http_code}' -X POST "http://$gw/api/v1/orders" \
    -H 'Content-Type: application/json' -H 'Idempotency-Key: container-check-1' -d "$body"
}
status1=$(post "$work/first") || fail "first POST failed"
status2=$(post "$work/second") || fail "second POST failed"
echo "container-check: executed: $status1 $(cat "$work/first.body")"
echo "container-check: replayed: $status2 $(cat "$work/second.body")"
[[ "$status1" == 201 ]] || fail "first POST answered $status1, expected 201"
[[ "$status2" == "$status1" ]] || fail "replay answered $status2, first $status1"
if grep -qi '^Idempotent-Replayed:' "$work/first.headers"; then fail "first POST marked as replayed"; fi
grep -qi '^Idempotent-Replayed: true' "$work/second.headers" || fail "second POST not marked Idempotent-Replayed: true"
cmp -s "$work/first.body" "$work/second.body" || fail "replayed body differs from the executed one"
step "healthz, executed and replayed request OK"

size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "${bases[1]}")
echo "container-check: image $image: $((size / 1000000)) MB (base ${bases[1]}: $((base_size / 1000000)) MB)"
echo "container-check: OK after $((SECONDS - started)) s"
