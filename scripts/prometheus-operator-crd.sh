#!/usr/bin/env bash
# Prints the path of one of the Prometheus operator's CRDs as the operator ships it, from its Go
# module at the pinned version: `go mod download` through the Go module proxy into the module cache
# (checked against go.sum's database like any module; offline once cached). The chart checks
# validate the umbrella's PrometheusRule and AlertmanagerConfig against them; the cluster test
# applies the PrometheusRule CRD before installing the umbrella (decisions 0129, 0155).
#   scripts/prometheus-operator-crd.sh [NAME]   NAME: the CRD's plural, the file
#                                               example/prometheus-operator-crd/monitoring.coreos.com_NAME.yaml
#                                               (default prometheusrules; e.g. alertmanagerconfigs)
#   PROMETHEUS_OPERATOR_VERSION   module version (default v0.94.0)
#   PROMETHEUS_RULE_CRD           use this file instead, for prometheusrules
#   ALERTMANAGER_CONFIG_CRD       use this file instead, for alertmanagerconfigs
set -euo pipefail
NAME=${1:-prometheusrules}
[[ $NAME =~ ^[a-z]+$ ]] || { echo "usage: $0 [NAME] (a CRD's plural, e.g. prometheusrules, alertmanagerconfigs)" >&2; exit 2; }
case $NAME in
  prometheusrules) override=${PROMETHEUS_RULE_CRD:-} ;;
  alertmanagerconfigs) override=${ALERTMANAGER_CONFIG_CRD:-} ;;
  *) override= ;;
esac
if [[ -n $override ]]; then
  echo "$override"
  exit 0
fi
VERSION=${PROMETHEUS_OPERATOR_VERSION:-v0.94.0}
MODULE=github.com/prometheus-operator/prometheus-operator
command -v go >/dev/null || { echo "go is needed to fetch $MODULE@$VERSION (or set PROMETHEUS_RULE_CRD / ALERTMANAGER_CONFIG_CRD=/path/to/the/crd.yaml)" >&2; exit 1; }
# Outside any module (a go.mod above the caller's folder would otherwise be consulted).
json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod GO111MODULE=on go mod download -json "$MODULE@$VERSION") || {
  echo "could not download $MODULE@$VERSION from the Go module proxy:" >&2
  echo "$json" >&2
  exit 1
}
dir=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or ""); sys.exit(1 if d.get("Error") else 0)' <<<"$json") || {
  echo "go mod download $MODULE@$VERSION: $json" >&2
  exit 1
}
crd=$dir/example/prometheus-operator-crd/monitoring.coreos.com_$NAME.yaml
[[ -f $crd ]] || { echo "$MODULE@$VERSION has no $crd" >&2; exit 1; }
echo "$crd"
