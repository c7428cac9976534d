#!/usr/bin/env bash
# Prints the path of the project's helm, built by go-tool.sh when missing (the pinned tag from the Go
# module proxy into the per-machine cache; a few minutes the first time on a machine). Used by the chart checks and the local
# cluster's tests. Settings: HELM_VERSION (default v3.19.5); HELM (use this binary instead).
set -euo pipefail
HELM_VERSION=${HELM_VERSION:-v3.19.5}
HELM_K8S_MINOR=${HELM_K8S_MINOR:-34} # helm 3.19 is built against k8s.io/client-go v0.34
if [[ -n ${HELM:-} ]]; then
  echo "$HELM"
  exit 0
fi
# The ldflags are those of helm's own Makefile: version, and the default Kubernetes version (that of
# the client-go helm 3.19 is built with) instead of the compiled-in v1.20.
x=helm.sh/helm/v3
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" helm "$x/cmd/helm" "$HELM_VERSION" "-X $x/internal/version.version=$HELM_VERSION \
  -X $x/pkg/chartutil.k8sVersionMajor=1 -X $x/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR \
  -X $x/pkg/lint/rules.k8sVersionMajor=1 -X $x/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR"
