#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Failover under partitions: real redis-server (one primary, one or two replicas), three
sentinels, the real idemgate binary and the counting test upstream, each group in its own network
namespace on a bridge; faults by iptables DROP rules, SIGKILL, SIGSTOP and CLIENT PAUSE WRITE.

Every key is retried until it gets a 2xx and once more after it; the upstream reports which
executions each key got (GET /__keys). Per run: keys run twice, keys whose answers came from more
than one execution, the longest stretch without a 2xx, the mean latency of a first execution
before the fault, and (where the gateway can hear the switch but still reach the old primary) the
time from the gateway's "sentinels name the primary" log line to its last connection leaving the
old primary.

Needs root with CAP_NET_ADMIN, iptables and redis-server; otherwise it prints why and skips
(exit 77). Default (CI): consistency strict, one replica, under SIGKILL, split-brain and CLIENT
PAUSE WRITE, two replicas under CLIENT PAUSE WRITE (a replica promoted while the old primary's
other replica still acknowledges it), plus the switch-following check, asserting no key runs twice, no retry answered by
another execution, and connections off the old primary within 0.5 s. PARTITION_LONG=1 (or --long)
runs every fault for async, min_replicas_ack and strict with one and two replicas and prints the
table for the docs (asserting only what strict mode and switch following promise).
PARTITION_PLAN="strict:2:sigkill strict:2:pause" runs only those cells (setting:replicas:fault;
strictall: strict with min_replicas_ack equal to the number of replicas).

usage: partition_test.py --bin DIR [--long]   (DIR holds idemgate and idemgate-test-upstream)
"""
import argparse, fcntl, json, os, shutil, signal, subprocess, sys, tempfile, threading, time

BR = "igpart0"
NET = "10.77.0"
HOSTS = {"r1": 1, "r2": 2, "r3": 3, "s1": 11, "s2": 12, "s3": 13, "gw": 20}
MYIDS = {"s1": "a" * 40, "s2": "b" * 40, "s3": "c" * 40}
SKIP = 77


def ip(name):
    return f"{NET}.{HOSTS[name]}"


def nsn(name):
    return "igp-" + name


def ns(name, args):
    return ["ip", "netns", "exec", nsn(name)] + list(args)


def run(args, check=True, timeout=30):
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=timeout)


def cli(node, *args, timeout=5):
    host = ip(node) if node in HOSTS else node
    where = node if node in HOSTS else "gw"
    port = "26379" if where.startswith("s") else "6379"
    try:
        return run(ns(where, ["redis-cli", "-h", "127.0.0.1", "-p", port] + list(args)), check=False,
                   timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return ""


def can_run():
    if os.geteuid() != 0:
        return "needs root (network namespaces, iptables)"
    for tool in ("ip", "iptables", "redis-server", "redis-cli"):
        if not shutil.which(tool):
            return f"needs {tool}"
    probe = "igpartprobe0"
    r = subprocess.run(["ip", "link", "add", probe, "type", "bridge"], capture_output=True, text=True)
    if r.returncode != 0:
        return "needs CAP_NET_ADMIN: " + r.stderr.strip()
    subprocess.run(["ip", "link", "del", probe], capture_output=True)
    return None


def net_down():
    for name in HOSTS:
        pids = subprocess.run(["ip", "netns", "pids", nsn(name)], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", nsn(name)], capture_output=True)
    subprocess.run(["ip", "link", "del", BR], capture_output=True)


def net_up():
    net_down()
    run(["ip", "link", "add", BR, "type", "bridge"])
    run(["ip", "link", "set", BR, "up"])
    for name in HOSTS:
        run(["ip", "netns", "add", nsn(name)])
        run(["ip", "link", "add", "vp" + name, "type", "veth", "peer", "name", "eth0", "netns", nsn(name)])
        run(["ip", "link", "set", "vp" + name, "master", BR])
        run(["ip", "link", "set", "vp" + name, "up"])
        run(["ip", "-n", nsn(name), "addr", "add", ip(name) + "/24", "dev", "eth0"])
        run(["ip", "-n", nsn(name), "link", "set", "eth0", "up"])
        run(["ip", "-n", nsn(name), "link", "set", "lo", "up"])


def cut(a_side, b_side, one_way=False):
    """DROP between every node of a_side and every node of b_side (one_way: a_side's input only)."""
    for a in a_side:
        for b in b_side:
            run(ns(a, ["iptables", "-w", "-I", "INPUT", "-s", ip(b), "-j", "DROP"]))
            if not one_way:
                run(ns(a, ["iptables", "-w", "-I", "OUTPUT", "-d", ip(b), "-j", "DROP"]))


def heal():
    for name in HOSTS:
        run(ns(name, ["iptables", "-w", "-F", "INPUT"]), check=False)
        run(ns(name, ["iptables", "-w", "-F", "OUTPUT"]), check=False)


class cluster:
    """One primary (r1), `replicas` replicas, three sentinels, the upstream and the gateway."""

    def __init__(self, bindir, setting, replicas, work):
        self.work = work
        self.procs = {}
        self.args = {}
        os.makedirs(work, exist_ok=True)
        self.replicas = ["r2", "r3"][:replicas]
        for node in ["r1"] + self.replicas:
            d = os.path.join(work, node)
            os.makedirs(d, exist_ok=True)
            args = ["redis-server", "--bind", ip(node), "127.0.0.1", "--port", "6379", "--save", "",
                    "--appendonly", "no", "--protected-mode", "no", "--dir", d, "--repl-timeout", "5"]
            if node != "r1":
                args += ["--replicaof", ip("r1"), "6379"]
            self.start(node, node, args)
            self.args[node] = args
        wait(lambda: all("master_link_status:up" in cli(r, "INFO", "replication") for r in self.replicas),
             "replicas attached")
        for s in ("s1", "s2", "s3"):
            conf = os.path.join(work, s + ".conf")
            lines = [f"port 26379", f"bind {ip(s)} 127.0.0.1", "protected-mode no", f"dir {work}",
                     f"sentinel myid {MYIDS[s]}", f"sentinel monitor mymaster {ip('r1')} 6379 2",
                     "sentinel down-after-milliseconds mymaster 1000", "sentinel failover-timeout mymaster 4000"]
            for o in ("s1", "s2", "s3"):
                if o != s:
                    lines.append(f"sentinel known-sentinel mymaster {ip(o)} 26379 {MYIDS[o]}")
            for r in self.replicas:
                lines.append(f"sentinel known-replica mymaster {ip(r)} 6379")
            with open(conf, "w") as f:
                f.write("\n".join(lines) + "\n")
            self.start(s, s, ["redis-server", conf, "--sentinel"])

        def sentinels_ready():
            for s in ("s1", "s2", "s3"):
                info = cli(s, "SENTINEL", "MASTER", "mymaster").split("\n")
                kv = dict(zip(info[0::2], info[1::2]))
                if kv.get("num-slaves") != str(len(self.replicas)) or kv.get("num-other-sentinels") != "2":
                    return False
            return True

        wait(sentinels_ready, "sentinels see each other and the replicas")
        self.start("upstream", "gw", [os.path.join(bindir, "idemgate-test-upstream"), "--port", "18090"])
        consistency = ""
        if setting in ("ack", "strict"):
            consistency += "    min_replicas_ack: 1\n"
        if setting == "strictall":  # strict, every replica acknowledging
            consistency += f"    min_replicas_ack: {len(self.replicas)}\n"
        if setting in ("strict", "strictall"):
            consistency += "    consistency: strict\n    wait_timeout: 50ms\n"
        yaml = (
            "listen: \"127.0.0.1:18080\"\nadmin_listen: \"127.0.0.1:18081\"\nthreads: 2\naccess_log: false\n"
            "store:\n  type: redis\n  on_failure: reject\n  redis:\n    mode: sentinel\n    nodes:\n"
            + "".join(f"      - \"{ip(s)}:26379\"\n" for s in ("s1", "s2", "s3"))
            + "    sentinel:\n      master_name: mymaster\n    command_timeout: 250ms\n"
            "    connect_timeout: 500ms\n    reconnect_backoff_max: 200ms\n" + consistency
            + "upstreams:\n  orders:\n    address: \"127.0.0.1:18090\"\n"
            "routes:\n  - path_prefix: \"/api/\"\n    upstream: orders\n    idempotency:\n"
            "      methods: [POST]\n      key_header: Idempotency-Key\n      lock_ttl: 4s\n      record_ttl: 1h\n")
        conf = os.path.join(work, "gateway.yaml")
        with open(conf, "w") as f:
            f.write(yaml)
        self.start("gateway", "gw", [os.path.join(bindir, "idemgate"), "--config", conf])
        wait(lambda: "200" in curl("/readyz", admin=True)[0], "gateway ready")

    def start(self, label, where, args):
        log = open(os.path.join(self.work, label + ".log"), "w")
        self.procs[label] = subprocess.Popen(ns(where, args), stdout=log, stderr=subprocess.STDOUT)

    def restart_old_primary(self):
        self.procs["r1"].wait()
        self.start("r1-restarted", "r1", self.args["r1"])

    def signal(self, label, sig):
        # ip netns exec execs the server itself, so the Popen pid is the server's.
        os.kill(self.procs[label].pid, sig)

    def log_lines(self, label):
        with open(os.path.join(self.work, label + ".log")) as f:
            return f.read().splitlines()

    def stop(self):
        for p in self.procs.values():
            try:
                p.send_signal(signal.SIGCONT)
                p.kill()
            except ProcessLookupError:
                pass
        for p in self.procs.values():
            p.wait()


def curl(path, admin=False, method="GET"):
    port = "18081" if admin else "18090"
    r = run(ns("gw", ["curl", "-s", "-m", "2", "-X", method, "-o", "-", "-w", "\n%{http_code}",
                      f"http://127.0.0.1:{port}{path}"]), check=False)
    body, _, code = r.stdout.rpartition("\n")
    return code, body


def wait(pred, what, timeout=30):
    deadline = time.time() + timeout
    while not pred():
        if time.time() > deadline:
            raise RuntimeError(f"set-up: {what} not within {timeout} s")
        time.sleep(0.1)


# --- one run ------------------------------------------------------------------------------------

FAULTS = ["sigkill", "split", "isolate_gateway", "lagging_replica", "partial", "pause"]


def apply_fault(c, fault, events):
    """Runs the fault (blocking while it lasts); appends (time, what) to events."""
    others = ["r2", "r3"][:len(c.replicas)]
    if fault == "sigkill":
        events.append((time.time(), "primary SIGKILLed"))
        c.signal("r1", signal.SIGKILL)
        time.sleep(6)
        c.restart_old_primary()  # it rejoins as a replica of the new primary
        events.append((time.time(), "old primary restarted"))
    elif fault == "split":
        events.append((time.time(), "split: {r1, gw, s1} | {replicas, s2, s3}"))
        cut(["r1", "gw", "s1"], others + ["s2", "s3"])
        time.sleep(7)
        heal()
    elif fault == "isolate_gateway":
        events.append((time.time(), "gateway cut from every redis and sentinel"))
        cut(["gw"], ["r1", "s1", "s2", "s3"] + others)
        time.sleep(4)
        heal()
    elif fault == "lagging_replica":
        events.append((time.time(), "replication cut 3 s, then the primary killed"))
        cut(["r1"], others)
        time.sleep(3)
        c.signal("r1", signal.SIGKILL)
        heal()
        time.sleep(6)
        c.restart_old_primary()
    elif fault == "partial":
        events.append((time.time(), "primary cut from sentinels and replicas, not from the gateway"))
        cut(["r1"], others + ["s1", "s2", "s3"])
        time.sleep(7)
        heal()
    elif fault == "pause":
        events.append((time.time(), "CLIENT PAUSE 4000 WRITE on the primary"))
        cli("r1", "CLIENT", "PAUSE", "4000", "WRITE")
        time.sleep(4)


def watch_old_primary(c, stop, samples):
    """Every 20 ms: how many of the gateway's connections the old primary holds."""
    while not stop.is_set():
        out = cli("r1", "CLIENT", "LIST", timeout=1)
        n = out.count(f"addr={ip('gw')}:") if out else -1
        samples.append((time.time(), n))
        time.sleep(0.02)


def one_run(bindir, setting, replicas, fault, work, seconds=18, warmup=4):
    c = cluster(bindir, setting, replicas, work)
    result = {"setting": setting, "replicas": replicas, "fault": fault}
    try:
        tag = f"{setting}-{replicas}-{fault}"
        load = os.path.join(os.path.dirname(os.path.abspath(__file__)), "partition_load.py")
        client = subprocess.Popen(ns("gw", [sys.executable, load, str(seconds), "8", tag]),
                                  stdout=subprocess.PIPE, text=True)
        stop = threading.Event()
        samples = []
        watcher = threading.Thread(target=watch_old_primary, args=(c, stop, samples), daemon=True)
        watcher.start()
        time.sleep(warmup)
        events = []
        fault_at = time.time()
        apply_fault(c, fault, events)
        out, _ = client.communicate(timeout=seconds + 120)
        stop.set()
        watcher.join()
        answers = json.loads(out)
        _, keys_body = curl("/__keys")
        executions = json.loads(keys_body)
        result.update(measure(answers, executions, fault_at, c, samples))
        result.update(accounted(curl("/metrics", admin=True)[1]))
    finally:
        c.stop()
    return result


def measure(answers, executions, fault_at, c, samples):
    twice = [k for k, v in executions.items() if len(v) > 1]
    wrong = 0  # keys with a 2xx answer from an execution other than the key's only one
    by_key = {}
    for t, key, status, execution, *_ in answers:
        if 200 <= status < 300:
            by_key.setdefault(key, set()).add(execution)
    answers = [a for a in answers if len(a) == 6]  # the load itself, without the final sweep
    for key, seen in by_key.items():
        ran = {str(e) for e in executions.get(key, [])}
        if len(seen) > 1 or not seen <= ran:
            wrong += 1
    ok_times = sorted(t for t, key, status, *_ in answers if 200 <= status < 300)
    start = min(t for t, *_ in answers)
    end = max(t for t, *_ in answers)
    gaps = [b - a for a, b in zip([start] + ok_times, ok_times + [end])]
    first_lat = [lat for t, key, status, execution, lat, first in answers
                 if first and 200 <= status < 300 and t < fault_at]
    # Switch following: the gateway's log line naming a new primary, then its connections.
    switch_at = None
    for line in c.log_lines("gateway"):
        if "sentinels name the primary" in line and '"previous":"none"' not in line:
            try:
                switch_at = json.loads(line)["ts"] / 1000.0
            except (ValueError, KeyError):
                pass
            break
    left = None
    if switch_at is not None:
        after = [(t, n) for t, n in samples if t >= switch_at]
        present = [t for t, n in after if n > 0]
        polled = [t for t, n in after if n >= 0]
        if polled:
            left = (max(present) - switch_at + 0.02) if present else 0.0
    return {"keys": len(executions), "twice": len(twice), "twice_keys": twice[:10], "wrong_answers": wrong,
            "longest_without_2xx": max(gaps) if gaps else None,
            "first_execution_ms": 1000 * sum(first_lat) / len(first_lat) if first_lat else None,
            "switch_logged": switch_at is not None, "left_old_primary_s": left}


def accounted(metrics_text):
    """What the gateway itself counted of a fault's cost: completes that failed (the answer went
    out, no record kept) and records fewer replicas acknowledged than min_replicas_ack. A key that
    ran twice must be one of these, or the operator's figures fall short of what happened."""
    def total(name):
        return sum(float(line.rsplit(" ", 1)[1]) for line in metrics_text.splitlines()
                   if line.startswith(name + " ") or line.startswith(name + "{"))
    lost = total("idemgate_records_lost_total")
    unreplicated = total("idemgate_records_unreplicated_total")
    return {"failed_completes": int(lost), "unreplicated_records": int(unreplicated)}


def fmt(v, unit=""):
    if v is None:
        return "–"
    return f"{v:.1f}{unit}" if isinstance(v, float) else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--long", action="store_true")
    args = ap.parse_args()
    why = can_run()
    if why:
        print(f"partition_test: SKIPPED: {why}")
        return SKIP
    # The namespaces, bridge and addresses have fixed names, and net_up() clears whatever holds
    # them: a second run on the machine (another checkout's ctest) would kill this one's servers
    # and be answered by its gateway. Runs take turns instead.
    lock = open(os.path.join(tempfile.gettempdir(), "idemgate-partition.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("partition_test: another partition run holds the namespaces; waiting for it", flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    long_mode = args.long or os.environ.get("PARTITION_LONG") == "1"
    chosen = os.environ.get("PARTITION_PLAN", "").split()
    if chosen:
        # e.g. PARTITION_PLAN="strict:2:sigkill strict:2:pause": some cells of the long table.
        plan = []
        for item in chosen:
            setting, replicas, fault = item.split(":")
            if setting not in ("async", "ack", "strict", "strictall") or replicas not in ("1", "2") or fault not in FAULTS:
                print(f"partition_test: PARTITION_PLAN item {item!r} is not setting:replicas:fault "
                      f"(settings async, ack, strict, strictall; replicas 1, 2; faults {', '.join(FAULTS)})")
                return 2
            plan.append((setting, int(replicas), fault))
    elif long_mode:
        plan = [(s, r, f) for r in (1, 2) for s in ("async", "ack", "strict") for f in FAULTS]
    else:
        plan = [("strict", 1, "sigkill"), ("strict", 1, "split"), ("strict", 1, "pause"), ("strict", 2, "pause"),
                ("async", 1, "partial")]
    work = tempfile.mkdtemp(prefix="idemgate-partition-")
    failures = []
    rows = []
    started = time.time()
    try:
        net_up()
        for setting, replicas, fault in plan:
            heal()
            r = one_run(args.bin, setting, replicas, fault, os.path.join(work, f"{setting}-{replicas}-{fault}"))
            rows.append(r)
            print(json.dumps(r), flush=True)
            name = f"{setting}/{replicas} replica(s)/{fault}"
            if setting.startswith("strict") and r["twice"]:
                failures.append(f"{name}: {r['twice']} keys ran twice, e.g. {r['twice_keys']}")
            # With min_replicas_ack (ack, strict) the gateway learns which records no replica took;
            # async asks no replica, so a failover's cost there is not counted (docs/operations/
            # failover.md): its figures are reported, not checked.
            if setting != "async" and r["twice"] > r["failed_completes"] + r["unreplicated_records"]:
                failures.append(f"{name}: {r['twice']} keys ran twice, more than the gateway counted: "
                                f"{r['failed_completes']} failed completes + {r['unreplicated_records']} "
                                "unreplicated records")
            if setting.startswith("strict") and r["wrong_answers"]:
                failures.append(f"{name}: {r['wrong_answers']} keys answered by another execution")
            if fault == "partial":
                if not r["switch_logged"]:
                    failures.append(f"{name}: the gateway never logged the switch")
                elif r["left_old_primary_s"] is None or r["left_old_primary_s"] > 0.5:
                    failures.append(f"{name}: connections left the old primary after {r['left_old_primary_s']} s")
    finally:
        net_down()
    print("\n| setting | replicas | fault | keys | run twice | answered by another execution | longest without a 2xx | "
          "first execution (mean, before the fault) | left the old primary after the switch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['replicas']} | {r['fault']} | {r['keys']} | {r['twice']} | {r['wrong_answers']} | "
              f"{fmt(r['longest_without_2xx'], ' s')} | {fmt(r['first_execution_ms'], ' ms')} | "
              f"{fmt(r['left_old_primary_s'], ' s')} |")
    print(f"\npartition_test: {len(rows)} runs in {time.time() - started:.0f} s; work dir {work}")
    for f in failures:
        print("FAILED: " + f)
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
