#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The alert rules as Prometheus reads them: `promtool check rules` (syntax, templates) and
# `promtool test rules` (each alert fires on the series that should fire it and stays silent on a
# healthy gateway's). That every metric they name is exported is checked against the running
# binary in tests/gateway/deploy_test.cpp.
#   check_prometheus.sh SOURCE_DIR
set -euo pipefail
dir="$1/deploy/prometheus"
if ! command -v promtool >/dev/null; then
  echo "check_prometheus: promtool not installed (scripts/install-deps.sh installs prometheus)"
  exit 1
fi
promtool check rules "$dir/alerts.yaml"
(cd "$dir" && promtool test rules alerts_test.yaml)
