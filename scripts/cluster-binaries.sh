#!/usr/bin/env bash
# Builds the Kubernetes binaries of the local cluster (issue 31) from the Go module proxy, once per
# machine, into a cache outside the checkout (as the embedded store is): kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl at the version
# deploy/cluster/go.mod pins, with that version stamped in (without it the server says
# v0.0.0-master, and kubectl and charts with a kubeVersion refuse it). Prints the bin directory.
# Measured on 2 cores with a cold Go cache: kube-scheduler first 1 min 48 s (most of it the shared
# dependencies), then kube-apiserver 76 s, kube-controller-manager 41 s, kubelet 16 s, kube-proxy 5 s.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODULE=$ROOT/deploy/cluster
VERSION=$(sed -n 's/^\(require \|\t\)k8s.io\/kubernetes \(v[0-9.]*\)$/\2/p' "$MODULE/go.mod")
[[ -n $VERSION ]] || { echo "cluster-binaries.sh: no k8s.io/kubernetes version in $MODULE/go.mod" >&2; exit 1; }
minor=${VERSION#v1.}
minor=${minor%%.*}
BIN=${VOICEAPI_CACHE:-$HOME/.cache/voiceapi}/kubernetes-$VERSION/bin
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
mkdir -p "$BIN"
cd "$MODULE"
for cmd in "${COMMANDS[@]}"; do
  if [[ -x $BIN/$cmd ]] && { "$BIN/$cmd" --version 2>/dev/null || "$BIN/$cmd" version --client 2>/dev/null; } | grep -q "$VERSION"; then continue; fi
  started=$(date +%s)
  echo "[cluster] building $cmd $VERSION (once per machine)…" >&2
  go build -trimpath -o "$BIN/$cmd.part" -ldflags "-s -w$stamp" "k8s.io/kubernetes/cmd/$cmd"
  mv "$BIN/$cmd.part" "$BIN/$cmd"
  echo "[cluster] $cmd built in $(($(date +%s) - started)) s" >&2
done
echo "$BIN"
