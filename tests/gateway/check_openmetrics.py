#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Parses an OpenMetrics exposition with the format's reference parser, the Prometheus Python
client's (prometheus_client.openmetrics.parser, Debian's python3-prometheus-client), which
refuses what the specification forbids (a counter family named with _total, a missing # EOF,
inconsistent histograms, exemplars on other samples). Prints one JSON line per exemplar, then
the number of families.

  check_openmetrics.py FILE
Exit 0 when the file parses, 1 with the parser's message otherwise.
"""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as e:
        print("not OpenMetrics: %s" % e)
        return 1
    for family in families:
        for s in family.samples:
            if s.exemplar:
                print(json.dumps({"family": family.name, "type": family.type, "sample": s.name,
                                  "labels": s.labels, "exemplar": s.exemplar.labels,
                                  "value": s.exemplar.value,
                                  "timestamp": float(s.exemplar.timestamp) if s.exemplar.timestamp else None}))
    print("families %d" % len(families))
    return 0


if __name__ == "__main__":
    sys.exit(main())
