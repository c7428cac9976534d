#!/usr/bin/env bash
# Prints the path of the project's helm, building it first when missing: the pinned tag from the Go
# module proxy into .tools/bin (repo-local, git-ignored; a few minutes the first time). Used by the
# chart checks and the local cluster's tests. Settings: HELM_VERSION (default v3.19.5); HELM (use
# this binary instead).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=$ROOT/.tools
HELM_VERSION=${HELM_VERSION:-v3.19.5}
HELM_K8S_MINOR=${HELM_K8S_MINOR:-34} # helm 3.19 is built against k8s.io/client-go v0.34
if [[ -n ${HELM:-} ]]; then
  echo "$HELM"
  exit 0
fi
HELM=$TOOLS/bin/helm
if [[ -x $HELM && "$(cat "$TOOLS/bin/helm.version" 2>/dev/null)" == "$HELM_VERSION" ]]; then
  echo "$HELM"
  exit 0
fi
command -v go >/dev/null || { echo "go is needed to build helm (or set HELM=/path/to/helm)" >&2; exit 1; }
echo "building helm $HELM_VERSION from the Go module proxy into $TOOLS/bin (first run: a few minutes)..." >&2
t0=$(date +%s)
mkdir -p "$TOOLS/bin"
# The ldflags are those of helm's own Makefile: version, and the default Kubernetes version (that of
# the client-go helm 3.19 is built with) instead of the compiled-in v1.20.
x=helm.sh/helm/v3
GOBIN=$TOOLS/bin CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w \
  -X $x/internal/version.version=$HELM_VERSION \
  -X $x/pkg/chartutil.k8sVersionMajor=1 -X $x/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR \
  -X $x/pkg/lint/rules.k8sVersionMajor=1 -X $x/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR" \
  "$x/cmd/helm@$HELM_VERSION" >&2
echo "$HELM_VERSION" >"$TOOLS/bin/helm.version"
echo "built $("$HELM" version --short) in $(($(date +%s) - t0))s" >&2
echo "$HELM"
