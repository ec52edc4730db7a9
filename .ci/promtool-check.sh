#!/usr/bin/env bash
# Checks the operations kit in deploy/ with promtool
# (docs/operations/observability.md "Operations kit"):
# - the alert rules load (`promtool check rules`) and their unit tests pass
#   (`promtool test rules`: each alert firing, and staying quiet, on made-up series);
# - the example Prometheus configuration loads, with the rules it names (`promtool check config`);
# - every query of the Grafana dashboard parses as PromQL: they are written, with Grafana's
#   variables replaced, into a throwaway rules file under target/ that `promtool check rules`
#   must accept.
# Which metrics and labels those queries may use is checked by `cargo test --test deploy`.
#
# Installs promtool when it is missing, from Debian's `prometheus` package. That package's
# postinst starts a Prometheus server (its init script, on port 9090) unless the policy layer
# says no: without a /usr/sbin/policy-rc.d, one that refuses is put in place for the install
# only, so nothing is left running or listening.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

if ! command -v promtool >/dev/null 2>&1; then
  log "promtool: installing Debian's prometheus package"
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# Installed by .ci/promtool-check.sh for one install: start no service.\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version | head -n 1

log "promtool: alert rules"
promtool check rules deploy/prometheus/alerts.yml
promtool test rules deploy/prometheus/alerts.test.yml

log "promtool: example configuration"
promtool check config deploy/prometheus/prometheus.yml

log "promtool: the dashboard's queries"
mkdir -p target
queries=target/dashboard-queries.rules.yml
python3 - deploy/grafana/order-service.json "$queries" <<'PY'
import json, sys

# What Grafana puts in place of its variables before a query reaches Prometheus.
VARIABLES = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h",
             "$job": "order-service", "$instance": ".*"}

def panels(items):
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))

dashboard = json.load(open(sys.argv[1]))
rules = []
for panel in panels(dashboard["panels"]):
    for target in panel.get("targets", []):
        expr = target["expr"]
        for name, value in VARIABLES.items():
            expr = expr.replace(name, value)
        if "$" in expr:
            sys.exit(f"panel {panel['title']!r}: a Grafana variable this check does not know: {expr}")
        rules.append({"record": f"dashboard:panel_{panel['id']}:{target['refId']}", "expr": expr})
if not rules:
    sys.exit("the dashboard has no queries")
# JSON is YAML: promtool reads this file as it is.
json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(sys.argv[2], "w"), indent=1)
print(f"{len(rules)} queries")
PY
promtool check rules "$queries"
