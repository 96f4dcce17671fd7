#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes manifests as kustomize renders them (`kubectl kustomize`, Debian's
kubernetes-client):
- the ConfigMap is generated from deploy/kubernetes/idemgate.yaml under a name carrying its hash,
  the Deployment mounts that name, and an edit of the file changes both (so the pods roll);
- the replicas spread over zones and nodes (the constraints select the Deployment's own pods);
- deploy/kubernetes/monitoring: the ServiceMonitor scrapes the admin port of the same pods through
  the metrics Service, and the PrometheusRule carries exactly deploy/prometheus/alerts.yaml's groups.
The gateway's own checks of the configuration (ports, probes, grace period, --check) are in
tests/gateway/deploy_test.cpp.
  check_kubernetes.py SOURCE_DIR      (KUBECTL names another kubectl)
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import yaml

root = pathlib.Path(sys.argv[1]).resolve()
kubectl = os.environ.get("KUBECTL", "kubectl")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def render(folder):
    out = subprocess.run([kubectl, "kustomize", str(folder)], check=True, capture_output=True, text=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def one(docs, kind, name=None, prefix=None):
    found = [d for d in docs if d["kind"] == kind and
             (name is None or d["metadata"]["name"] == name) and
             (prefix is None or d["metadata"]["name"].startswith(prefix))]
    if not check(len(found) == 1, f"one {kind} {name or prefix + '*'}: found {len(found)}"):
        sys.exit("\n".join(failures))
    return found[0]


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def config_map_and_mount(folder):
    docs = render(folder)
    cm = one(docs, "ConfigMap", prefix="idemgate-config-")
    deployment = one(docs, "Deployment", "idemgate")
    mounted = [v["configMap"]["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]
               if "configMap" in v]
    return cm, mounted, docs


if shutil.which(kubectl) is None:
    sys.exit(f"check_kubernetes: {kubectl} not found (scripts/install-deps.sh installs kubernetes-client)")

base = root / "deploy/kubernetes"
cm, mounted, docs = config_map_and_mount(base)
name = cm["metadata"]["name"]
check(len(name) > len("idemgate-config-"), f"the ConfigMap's name carries no hash: {name}")
check(mounted == [name], f"the Deployment mounts {mounted}, not the generated {name}")
check(cm["data"]["idemgate.yaml"] == (base / "idemgate.yaml").read_text(),
      "the generated ConfigMap does not hold deploy/kubernetes/idemgate.yaml as it is")

# An edit of the configuration renames the ConfigMap and the Deployment follows: the pods roll.
with tempfile.TemporaryDirectory() as tmp:
    copy = pathlib.Path(tmp) / "kubernetes"
    shutil.copytree(base, copy)
    config = copy / "idemgate.yaml"
    config.write_text(config.read_text().replace("record_ttl: 24h", "record_ttl: 12h"))
    check("record_ttl: 12h" in config.read_text(), "the edit of the copy did not apply")
    edited, edited_mounted, _ = config_map_and_mount(copy)
    check(edited["metadata"]["name"] != name, "an edited configuration keeps the ConfigMap's name")
    check(edited_mounted == [edited["metadata"]["name"]], "the Deployment does not follow the edited ConfigMap")

deployment = one(docs, "Deployment", "idemgate")
pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
spread = deployment["spec"]["template"]["spec"].get("topologySpreadConstraints", [])
keys = {c["topologyKey"] for c in spread}
check({"kubernetes.io/hostname", "topology.kubernetes.io/zone"} <= keys, f"spread over {keys}")
for c in spread:
    check(selects(c["labelSelector"]["matchLabels"], pod_labels),
          f"the spread over {c['topologyKey']} does not select the gateway's pods")

container = deployment["spec"]["template"]["spec"]["containers"][0]
named_ports = {p["name"]: p["containerPort"] for p in container["ports"] if "name" in p}

monitoring = render(base / "monitoring")
service = one(monitoring, "Service", "idemgate-metrics")
monitor = one(monitoring, "ServiceMonitor", "idemgate")
rule = one(monitoring, "PrometheusRule", "idemgate")
check(selects(service["spec"]["selector"], pod_labels), "the metrics Service does not select the gateway's pods")
check(selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"]),
      "the ServiceMonitor does not select the metrics Service")
check(not selects(monitor["spec"]["selector"]["matchLabels"], one(docs, "Service", "idemgate")["metadata"]["labels"]),
      "the ServiceMonitor also selects the clients' Service idemgate")
service_ports = {p["name"]: p for p in service["spec"]["ports"]}
for endpoint in monitor["spec"]["endpoints"]:
    check(endpoint["port"] in service_ports, f"the ServiceMonitor scrapes port {endpoint['port']}, not in the Service")
    check(endpoint.get("path") == "/metrics", "the ServiceMonitor's path is not /metrics")
    target = service_ports.get(endpoint["port"], {}).get("targetPort")
    check(target == "admin" and "admin" in named_ports, f"the metrics Service targets {target}, not the pods' admin port")

alerts = yaml.safe_load((root / "deploy/prometheus/alerts.yaml").read_text())
check(rule["spec"]["groups"] == alerts["groups"],
      "the PrometheusRule's groups differ from deploy/prometheus/alerts.yaml (python3 scripts/sync-prometheusrule.py)")

if failures:
    print("check_kubernetes: FAILED\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1)
print(f"check_kubernetes: ConfigMap {name} mounted and renamed on edit; spread over {sorted(keys)}; "
      f"ServiceMonitor -> idemgate-metrics:admin; PrometheusRule = alerts.yaml ({len(alerts['groups'])} group(s))")
