#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian package into a fresh Debian 12 root and uses it as an operator would:
#   1. builds the package (scripts/package.sh) and checks its contents (binaries, conffiles,
#      unit, logrotate snippet, man pages, docs) and the Depends dpkg-shlibdeps computed;
#   2. a Debian 12 root: the container check's debian:bookworm-slim image where podman has it
#      (exported, no container runs), otherwise mmdebstrap --variant=minbase;
#   3. `apt-get install ./idemgate_<version>_<arch>.deb` inside it (chroot), which pulls the
#      Depends from Debian's mirror; the system user, the conffile, `idemgate --check` on the
#      installed /etc/idemgate/idemgate.yaml, the unit's ExecStart;
#   4. the installed binary, as the idemgate user, in front of the test upstream (on the host's
#      loopback): one keyed POST executes, its retry is replayed byte for byte;
#   5. upgrades (a copy of the package with a higher version, `dpkg -i` over it), with
#      a stub systemctl that records its calls (the chroot has no systemd; Debian's
#      deb-systemd-invoke calls it): a running service is try-restarted when the new binary accepts the installed
#      configuration, and left alone, with the problems printed, when it refuses it;
#   6. `apt-get purge`: binaries, configuration and user are gone.
# Before the root, lintian checks the package: no error (its warnings are printed).
# Everything it starts stops by itself (timeout) and the EXIT trap unmounts and removes the root.
# Needs root (chroot, mount); run as another user it re-runs itself through `sudo -n`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then
  if sudo -n true 2>/dev/null; then exec sudo -n --preserve-env=BUILD_DIR,JOBS bash "$0" "$@"; fi
  echo "package-check: needs root (or password-less sudo) for chroot" >&2
  exit 1
fi

started=$SECONDS
say() { echo "package-check: $* ($((SECONDS - started)) s)"; }
fail() { echo "package-check: FAILED: $*" >&2; exit 1; }

deb=$(bash scripts/package.sh | tail -n 1)
bin="${BUILD_DIR:-build}/bin"
say "built $deb ($(du -k "$deb" | cut -f1) KiB)"

# --- 1. the package's contents ---
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/idemgate ./usr/bin/idemgate-loadtest ./etc/idemgate/idemgate.yaml ./etc/logrotate.d/idemgate \
  ./lib/systemd/system/idemgate.service ./usr/share/man/man1/idemgate.1.gz \
  ./usr/share/man/man1/idemgate-loadtest.1.gz ./usr/share/doc/idemgate/copyright \
  ./usr/share/doc/idemgate/README.md ./usr/share/doc/idemgate/docs/reference/configuration.md; do
  grep -q " $f\$" <<<"$contents" || fail "$f is not in the package"
done
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libhiredis0.14 libyaml-cpp0.7 libssl3; do
  [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
[[ $(dpkg-deb -I "$deb" conffiles) == $'/etc/idemgate/idemgate.yaml\n/etc/logrotate.d/idemgate' ]] || fail "conffiles"
# The man pages are the command-line reference's: an option of each page's table is in them.
man_page() { dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/share/man/man1/$1.1.gz" | zcat; }
man_page idemgate | grep -q -- '--print-config' || fail "idemgate(1) lacks --print-config"
man_page idemgate-loadtest | grep -q -- '--max-unexpected' || fail "idemgate-loadtest(1) lacks --max-unexpected"
for f in ./usr/share/doc/idemgate/changelog.gz ./usr/share/doc/idemgate/copyright; do
  grep -q " $f\$" <<<"$contents" || fail "$f is not in the package"
done
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/idemgate/copyright |
  grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
  fail "the copyright file is not machine-readable (DEP-5)"

# Debian's checker (about 25 s: it runs while the root is made; its verdict is read after the
# upgrades): errors fail the check; warnings and notes are printed for the record.
command -v lintian >/dev/null || fail "lintian is not installed (scripts/install-deps.sh installs it)"
lintian_log=$(mktemp -t idemgate-lintian-XXXXXX)
lintian --fail-on error --display-info "$deb" >"$lintian_log" 2>&1 &
lintian_pid=$!

# --- 2. a Debian 12 root ---
work=$(mktemp -d -t idemgate-package-XXXXXX)
root="$work/root"
mkdir -p "$root"
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for m in "$root/dev" "$root/proc"; do mountpoint -q "$m" && umount -l "$m"; done
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
base=docker.io/library/debian:bookworm-slim
if command -v podman >/dev/null && podman image exists "$base" 2>/dev/null; then
  cid=$(podman create -q "$base" /bin/true)
  podman export "$cid" | tar -x -C "$root"
  podman rm -f "$cid" >/dev/null
  say "root from $base"
else
  timeout 900 mmdebstrap --variant=minbase --aptopt='APT::Install-Recommends "false"' bookworm "$root" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >"$work/mmdebstrap.log" 2>&1 ||
    { cat "$work/mmdebstrap.log" >&2; fail "mmdebstrap"; }
  say "root from mmdebstrap"
fi
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/idemgate.deb"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

# --- 3. install ---
in_root apt-get update -qq >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get update"; }
in_root apt-get install -y -qq --no-install-recommends /tmp/idemgate.deb >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; fail "apt-get install"; }
say "installed: $(in_root dpkg-query -W -f='${Package} ${Version} ${Status}' idemgate)"
in_root getent passwd idemgate >/dev/null || fail "no idemgate user"
in_root dpkg-query -W -f='${Conffiles}' idemgate | grep -q /etc/idemgate/idemgate.yaml || fail "conffile not registered"
in_root /usr/bin/idemgate --version
in_root /usr/bin/idemgate --check || fail "idemgate --check on the installed configuration"
grep -q '^ExecStart=/usr/bin/idemgate --config /etc/idemgate/idemgate.yaml$' "$root/lib/systemd/system/idemgate.service" ||
  fail "the unit does not run /usr/bin/idemgate"

# --- 4. one keyed request through the installed binary ---
"$bin/idemgate-test-upstream" --port 0 >"$work/upstream.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening ' "$work/upstream.out" && break; sleep 0.05; done
upstream=$(sed -n 's/^listening //p' "$work/upstream.out" | head -n 1)
[[ -n $upstream ]] || fail "test upstream did not start"
cat >"$root/tmp/check.yaml" <<YAML
listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
store:
  type: memory
upstreams:
  orders: { address: "$upstream" }
routes:
  - path_prefix: "/api/"
    upstream: orders
    idempotency:
      methods: [POST]
YAML
chmod 0644 "$root/tmp/check.yaml"
chroot --userspec=idemgate:idemgate "$root" timeout 120 /usr/bin/idemgate -c /tmp/check.yaml >"$work/gateway.log" 2>&1 &
gateway=$!
pids+=($gateway)
for _ in $(seq 200); do grep -q '"msg":"store ready"' "$work/gateway.log" && break; sleep 0.05; done
listen=$(sed -n 's/.*"msg":"listening","listen":"\([^"]*\)".*/\1/p' "$work/gateway.log" | head -n 1)
[[ -n $listen ]] || { cat "$work/gateway.log" >&2; fail "the installed gateway did not start"; }
post() { curl -sS -D "$work/headers.$1" -o "$work/body.$1" -X POST -H 'Idempotency-Key: package-check-1' \
  -H 'Content-Type: application/json' --data '{"item":"book"}' "http://$listen/api/orders"; }
post 1
post 2
grep -qi '^Idempotent-Replayed: true' "$work/headers.2" || fail "the retry was not replayed"
cmp -s "$work/body.1" "$work/body.2" || fail "the replay's body differs"
count=$(curl -sS "http://$upstream/__count")
[[ $count == '{"executions":1}' ]] || fail "the upstream ran $count"
kill -TERM "$gateway"
rc=0
wait "$gateway" || rc=$?
((rc == 0)) || { cat "$work/gateway.log" >&2; fail "the installed gateway exited $rc on SIGTERM"; }
say "a keyed POST executed once and its retry was replayed, through the installed binary as user idemgate; SIGTERM: exit 0"

# --- 5. upgrades ---
# A newer version of the same package (the version is all that differs), and a stub systemctl
# that records each call (the root has no systemd; dpkg runs maintainer scripts with PATH
# /usr/sbin:/usr/bin:/sbin:/bin, and Debian's own deb-systemd-invoke calls it too).
# /run/systemd/system makes the scripts believe systemd runs.
version=$(dpkg-deb -f "$deb" Version)
newer() { # $1: suffix of the version
  rm -rf "$work/unpacked"
  dpkg-deb -R "$deb" "$work/unpacked"
  sed -i "s/^Version: .*/Version: $version+$1/" "$work/unpacked/DEBIAN/control"
  dpkg-deb -b --root-owner-group "$work/unpacked" "$root/tmp/idemgate-$1.deb" >/dev/null
}
[[ ! -e $root/usr/bin/systemctl ]] || fail "the root has a systemctl of its own"
mkdir -p "$root/run/systemd/system"
printf '#!/bin/sh\necho "systemctl $*" >>/tmp/service-calls\n' >"$root/usr/bin/systemctl"
chmod 0755 "$root/usr/bin/systemctl"
upgrade() { # $1: suffix of the version; the output of apt-get in $work/upgrade.log
  newer "$1"
  rm -f "$root/tmp/service-calls"
  in_root dpkg -i "/tmp/idemgate-$1.deb" >"$work/upgrade.log" 2>&1 ||
    { cat "$work/upgrade.log" >&2; fail "upgrade to $version+$1"; }
  [[ $(in_root dpkg-query -W -f='${Version} ${Status}' idemgate) == "$version+$1 install ok installed" ]] ||
    fail "after the upgrade to $version+$1: $(in_root dpkg-query -W -f='${Version} ${Status}' idemgate)"
}
upgrade up1
grep -qx 'systemctl try-restart idemgate.service' "$root/tmp/service-calls" ||
  { cat "$root/tmp/service-calls" >&2; fail "an upgrade with a valid configuration did not try-restart the service"; }
say "upgrade to $version+up1: the new binary accepted the configuration; calls: $(paste -sd';' "$root/tmp/service-calls")"
# The operator's file, which the new version refuses: the old process keeps serving, and why is printed.
cp "$root/etc/idemgate/idemgate.yaml" "$work/idemgate.yaml.good"
printf 'no_such_key: 1\n' >>"$root/etc/idemgate/idemgate.yaml"
upgrade up2
! grep -q 'try-restart\|restart' "$root/tmp/service-calls" ||
  { cat "$root/tmp/service-calls" >&2; fail "an upgrade restarted the service on a configuration the new binary refuses"; }
grep -q 'NOT' "$work/upgrade.log" && grep -q 'no_such_key' "$work/upgrade.log" ||
  { cat "$work/upgrade.log" >&2; fail "the refused upgrade does not say why"; }
say "upgrade to $version+up2 with a refused configuration: no restart, and dpkg's output says: $(grep -m1 'no_such_key' "$work/upgrade.log" | sed 's/^ *//')"
cp "$work/idemgate.yaml.good" "$root/etc/idemgate/idemgate.yaml"
rm -rf "$root/run/systemd/system" "$root/usr/bin/systemctl"

lintian_rc=0
wait "$lintian_pid" || lintian_rc=$?
lintian_out=$(grep -v 'running with root privileges' "$lintian_log" || true)
rm -f "$lintian_log"
((lintian_rc == 0)) || { echo "$lintian_out" >&2; fail "lintian found errors (exit $lintian_rc)"; }
say "lintian: $(grep -c '^E: ' <<<"$lintian_out") errors, $(grep -c '^W: ' <<<"$lintian_out") warnings, $(grep -c '^I: ' <<<"$lintian_out") notes"
[[ -z $lintian_out ]] || sed 's/^/  lintian: /' <<<"$lintian_out"

# --- 6. purge ---
in_root apt-get purge -y -qq idemgate >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get purge"; }
[[ ! -e $root/usr/bin/idemgate && ! -e $root/etc/idemgate ]] || fail "files left after purge"
! in_root getent passwd idemgate >/dev/null || fail "the idemgate user is left after purge"
say "purged: binaries, /etc/idemgate and the user are gone"
