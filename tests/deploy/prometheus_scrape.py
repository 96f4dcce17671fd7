#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus scraping two real gateways (one over the memory store, one over Redis) while
traffic runs, then:
  - every exported metric family is used by some Grafana dashboard query;
  - every dashboard query, evaluated by Prometheus with the dashboard's variables filled in,
    returns at least one series (queries of families that have no series in this setup, such as
    a Redis Cluster's per-node gauges, are listed and skipped);
  - every alert rule (deploy/prometheus/alerts.yaml, loaded by Prometheus as a rule file) is
    healthy when evaluated, and names only metrics Prometheus holds series of.

  - every exported family has a row in docs/reference/metrics.md, and every row is exported;
  - Prometheus (--enable-feature=exemplar-storage) scrapes OpenMetrics and keeps the trace IDs
    of sampled requests as exemplars of the latency buckets (/api/v1/query_exemplars).

  prometheus_scrape.py --bin BUILD/bin --source SOURCE_DIR [--print-reference]
Exit 0 on success, 1 on a failed check, 77 when prometheus is not installed.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SCRAPE_SECONDS = 1
RATE_WINDOW = "30s"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_line(path, pattern, timeout):
    """Waits for a line of the file `path` (a process's output) matching `pattern`."""
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        with open(path) as f:
            text = f.read()
        m = pattern.search(text)
        if m:
            return m
        time.sleep(0.05)
    raise RuntimeError("no line matching %r within %ss in %s:\n%s" % (pattern.pattern, timeout, path, text[-3000:]))


def http(method, url, body=None, headers=None, timeout=5):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def gateway_yaml(upstream_port, store, cert, key):
    # nowhere presents a client certificate (never sent: nobody listens there), so that
    # idemgate_tls_certificate_expiry_timestamp_seconds has a series; spans go to a port
    # nobody listens on either (the exemplars need only the sampling).
    return """listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
threads: 2
tracing: { otlp_endpoint: "http://127.0.0.1:%d/v1/traces", sample_ratio: 0.0 }
%s
upstreams:
  orders: { address: "127.0.0.1:%d" }
  nowhere:
    address: "127.0.0.1:%d"
    tls: { enabled: true, ca_file: "%s", cert_file: "%s", key_file: "%s" }
routes:
  - path_prefix: /down/
    upstream: nowhere
    idempotency: { methods: [POST] }
  - path_prefix: /
    upstream: orders
    idempotency: { methods: [POST] }
""" % (free_port(), store, upstream_port, free_port(), cert, cert, key)


class scrape_test:
    def __init__(self, args):
        self.bin = os.path.abspath(args.bin)
        self.source = os.path.abspath(args.source)
        self.tmp = tempfile.mkdtemp(prefix="idemgate-prom-")
        self.procs = []
        self.failures = []
        self.print_reference = args.print_reference
        self.traces = set()  # the trace IDs of the sampled requests sent

    def start(self, name, argv):
        """Starts argv with its output in a file (read by wait_line), so no pipe ever fills."""
        out = os.path.join(self.tmp, name + ".log")
        with open(out, "w") as f:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return out

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fail(self, what):
        self.failures.append(what)
        print("FAIL: " + what)

    def run(self):
        redis_port = free_port()
        self.start("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--maxmemory-policy", "noeviction"])
        upstream = self.start("upstream", [os.path.join(self.bin, "idemgate-test-upstream"), "--port", "0"])
        m = wait_line(upstream, re.compile(r"listening 127\.0\.0\.1:(\d+)"), 10)
        upstream_port = int(m.group(1))

        cert, key = os.path.join(self.tmp, "client.pem"), os.path.join(self.tmp, "client.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=idemgate scrape"],
                       check=True, capture_output=True)
        admins = []
        listens = []
        stores = {
            "memory": "store:\n  type: memory\n  local_tier: { max_bytes: 1MiB, max_age: 30s }",
            "redis": 'store:\n  type: redis\n  redis: { address: "127.0.0.1:%d" }\n'
                     '  local_tier: { max_bytes: 1MiB, max_age: 30s }' % redis_port,
        }
        for name, store in stores.items():
            path = os.path.join(self.tmp, name + ".yaml")
            with open(path, "w") as f:
                f.write(gateway_yaml(upstream_port, store, cert, key))
            gw = self.start(name, [os.path.join(self.bin, "idemgate"), "-c", path])
            m = wait_line(gw, re.compile(r'"listen":"([^"]+)","admin_listen":"([^"]+)"'), 15)
            listens.append(m.group(1))
            admins.append(m.group(2))

        prom_port = free_port()
        rules = os.path.join(self.source, "deploy", "prometheus", "alerts.yaml")
        prom_cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(prom_cfg, "w") as f:
            f.write("""global:
  scrape_interval: %ds
  evaluation_interval: %ds
rule_files: ["%s"]
scrape_configs:
  - job_name: idemgate
    static_configs:
      - targets: [%s]
""" % (SCRAPE_SECONDS, SCRAPE_SECONDS, rules, ", ".join('"%s"' % a for a in admins)))
        self.start("prometheus", ["prometheus", "--enable-feature=exemplar-storage", "--config.file", prom_cfg,
                                  "--storage.tsdb.path",
                           os.path.join(self.tmp, "tsdb"), "--web.listen-address",
                           "127.0.0.1:%d" % prom_port])
        self.prom = "http://127.0.0.1:%d" % prom_port

        # Traffic for a few scrapes: first executions, replays (from the store and the local
        # tier), a mismatch, an unguarded request, a failed upstream exchange.
        self.started = time.time()
        deadline = time.time() + 8
        i = 0
        while time.time() < deadline:
            for listen in listens:
                key = "prom-%d-%d" % (os.getpid(), i)
                for _ in range(2):
                    trace = os.urandom(16).hex()
                    self.traces.add(trace)
                    http("POST", "http://%s/api/orders" % listen, b"{}",
                         {"Idempotency-Key": key, "traceparent": "00-%s-00f067aa0ba902b7-01" % trace})
                http("POST", "http://%s/api/orders" % listen, b'{"other":1}', {"Idempotency-Key": key})
                http("GET", "http://%s/api/orders" % listen)
                if i % 20 == 0:
                    http("POST", "http://%s/down/x" % listen, b"{}", {"Idempotency-Key": key})
            i += 1
            time.sleep(0.02)

        if self.print_reference:
            self.exported(admins)
            sys.stdout.write(self.reference())
            return 0
        self.wait_ready(len(admins))
        families, with_samples = self.exported(admins)
        self.check_reference(families)
        queries = self.dashboard_queries()
        self.check_coverage(families, queries)
        self.check_queries(queries, with_samples)
        self.check_rules()
        self.check_exemplars()
        print("%d families exported (%d with samples), %d dashboard queries, %d failures" %
              (len(families), len(with_samples), len(queries), len(self.failures)))
        return 0 if not self.failures else 1

    def api(self, path, params=None):
        url = self.prom + path + ("?" + urllib.parse.urlencode(params) if params else "")
        status, body = http("GET", url, timeout=10)
        data = json.loads(body)
        if status != 200 or data.get("status") != "success":
            raise RuntimeError("%s: %s %s" % (path, status, body[:300]))
        return data["data"]

    def wait_ready(self, targets):
        """Until both targets were scraped several times and the rules evaluated."""
        deadline = time.time() + 60
        last = "nothing asked yet"
        while time.time() < deadline:
            try:
                samples = self.api("/api/v1/query", {"query": "count_over_time(up[1m])"})
                counts = [int(float(r["value"][1])) for r in samples["result"]]
                groups = self.api("/api/v1/rules")["groups"]
                evaluated = groups and all(r.get("lastEvaluation", "").startswith("20")
                                           for g in groups for r in g["rules"])
                if len(counts) == targets and min(counts) >= 4 and evaluated:
                    return
                last = "scrapes per target %s, rules evaluated: %s" % (counts, bool(evaluated))
            except (OSError, RuntimeError, ValueError) as e:
                last = repr(e)
            time.sleep(0.5)
        raise RuntimeError("prometheus did not scrape both gateways 4 times within 60 s (%s)" % last)

    def exported(self, admins):
        """The families the gateways declare, and those with at least one sample. Also keeps each
        family's type, help and label names in self.described, for the reference."""
        families, with_samples = set(), set()
        self.described = {}
        for admin in admins:
            status, body = http("GET", "http://%s/metrics" % admin)
            current = None
            for line in body.decode().splitlines():
                if line.startswith("# HELP "):
                    name, _, help_text = line[7:].partition(" ")
                    self.described.setdefault(name, {"help": help_text, "type": "", "labels": set()})
                elif line.startswith("# TYPE "):
                    current = line.split()[2]
                    families.add(current)
                    self.described.setdefault(current, {"help": "", "type": "", "labels": set()})
                    self.described[current]["type"] = line.split()[3]
                elif line and not line.startswith("#") and current:
                    with_samples.add(current)
                    labels = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', line.partition("{")[2].rpartition("}")[0])
                    self.described[current]["labels"].update(l for l in labels if l != "le")
        self.families = families
        return families, with_samples

    def reference(self):
        """docs/reference/metrics.md's table, from what the gateways export."""
        rows = ["| Family | Type | Labels | What it counts |", "|---|---|---|---|"]
        for name in sorted(self.described):
            d = self.described[name]
            labels = ", ".join("`%s`" % l for l in sorted(d["labels"])) or "–"
            rows.append("| `%s` | %s | %s | %s |" % (name, d["type"], labels, d["help"].replace("|", "\\|")))
        return "\n".join(rows) + "\n"

    def check_reference(self, families):
        path = os.path.join(self.source, "docs", "reference", "metrics.md")
        with open(path) as f:
            text = f.read()
        documented = set(re.findall(r"^\| `([a-z0-9_:]+)` \|", text, re.M))
        for f in sorted(families - documented):
            self.fail("metric family %s is not in docs/reference/metrics.md (tests/deploy/prometheus_scrape.py "
                      "--print-reference prints the table)" % f)
        for f in sorted(documented - families):
            self.fail("docs/reference/metrics.md documents %s, which no gateway exports" % f)

    def dashboard_queries(self):
        with open(os.path.join(self.source, "deploy", "grafana", "idemgate.json")) as f:
            dashboard = json.load(f)
        out = []

        def walk(node):
            if isinstance(node, dict):
                if isinstance(node.get("expr"), str):
                    out.append(node["expr"])
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
        walk(dashboard.get("panels", []))
        return out

    @staticmethod
    def names_in(expr):
        return set(re.findall(r"\b((?:idemgate|process)_[a-z0-9_]+)", expr))

    @staticmethod
    def family_of(name, families):
        if name in families:
            return name
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        return base if base in families else None

    def check_coverage(self, families, queries):
        used = set()
        for q in queries:
            for n in self.names_in(q):
                f = self.family_of(n, families)
                if f:
                    used.add(f)
                else:
                    self.fail("dashboard query names %s, which no gateway exports: %s" % (n, q))
        for f in sorted(families - used):
            self.fail("metric family %s has no panel in deploy/grafana/idemgate.json" % f)

    def check_queries(self, queries, with_samples):
        skipped = []
        for q in queries:
            expr = (q.replace("$__rate_interval", RATE_WINDOW).replace("$job", "idemgate")
                    .replace("$instance", ".*"))
            used = {self.family_of(n, self.families) for n in self.names_in(q)} - {None}
            if used and not used & with_samples:
                skipped.append(q)
                continue
            try:
                result = self.api("/api/v1/query", {"query": expr})["result"]
            except RuntimeError as e:
                self.fail("dashboard query does not evaluate: %s (%s)" % (q, e))
                continue
            if not result:
                self.fail("dashboard query returns no series: %s" % q)
        for q in skipped:
            print("skipped (no series of its metrics in this setup): %s" % q)

    def check_rules(self):
        have = set(self.api("/api/v1/label/__name__/values"))
        rules = [r for g in self.api("/api/v1/rules")["groups"] for r in g["rules"]]
        if not rules:
            self.fail("prometheus loaded no alert rule from deploy/prometheus/alerts.yaml")
        for r in rules:
            if r.get("health") != "ok":
                self.fail("alert %s is %s: %s" % (r.get("name"), r.get("health"), r.get("lastError")))
            for n in self.names_in(r["query"]):
                if n not in have:
                    self.fail("alert %s names %s, of which prometheus holds no series" % (r.get("name"), n))
        print("%d alert rules evaluated" % len(rules))


    def check_exemplars(self):
        """Each latency histogram has exemplars in Prometheus, trace IDs of requests sent here."""
        for family in ("idemgate_route_request_duration_seconds", "idemgate_request_duration_seconds"):
            found, deadline = set(), time.time() + 20
            while time.time() < deadline:
                data = self.api("/api/v1/query_exemplars", {"query": family + "_bucket",
                                                            "start": "%.3f" % (self.started - 60),
                                                            "end": "%.3f" % (time.time() + 60)})
                found = {e["labels"].get("trace_id") for s in data for e in s["exemplars"]}
                if found & self.traces:
                    break
                time.sleep(0.5)
            if not found & self.traces:
                self.fail("prometheus holds no exemplar of %s with a trace ID sent (found %s)" %
                          (family, sorted(found)[:5]))
            else:
                print("%s: %d exemplars with a trace ID sent" % (family, len(found & self.traces)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--print-reference", action="store_true",
                    help="print docs/reference/metrics.md's table from the gateways' /metrics and exit")
    args = ap.parse_args()
    if not shutil.which("prometheus"):
        print("prometheus is not installed (scripts/install-deps.sh installs it)")
        return 77
    t = scrape_test(args)
    try:
        return t.run()
    finally:
        t.stop_all()


if __name__ == "__main__":
    sys.exit(main())
