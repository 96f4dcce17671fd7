#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes deploy/kubernetes/monitoring/prometheusrule.yaml from deploy/prometheus/alerts.yaml.

The rule file is the one source: the PrometheusRule carries its `groups:` block verbatim
(comments included), so the Prometheus Operator loads exactly the rules that promtool tests.
  sync-prometheusrule.py           rewrite the PrometheusRule
  sync-prometheusrule.py --check   exit 1 if it differs from what would be written
"""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
rules = root / "deploy/prometheus/alerts.yaml"
target = root / "deploy/kubernetes/monitoring/prometheusrule.yaml"

HEAD = """\
# Made by scripts/sync-prometheusrule.py from deploy/prometheus/alerts.yaml: edit that file and
# run the script (tests/deploy/check_kubernetes.py fails while the two differ).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: idemgate
  labels:
    app.kubernetes.io/name: idemgate
    app.kubernetes.io/component: metrics
spec:
"""


def render() -> str:
    lines = rules.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("groups:"))
    body = ["  " + line if line.strip() else "" for line in lines[start:]]
    return HEAD + "\n".join(body) + "\n"


def main() -> int:
    text = render()
    if sys.argv[1:] == ["--check"]:
        if not target.exists() or target.read_text() != text:
            print(f"{target.relative_to(root)} differs from {rules.relative_to(root)}: "
                  "run python3 scripts/sync-prometheusrule.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
