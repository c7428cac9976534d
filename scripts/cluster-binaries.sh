#!/usr/bin/env bash
# Builds the Kubernetes binaries of the local cluster (issue 31) from the Go module proxy, once per
# machine, into a cache outside the checkout (as the embedded store is): kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl at the version
# deploy/cluster/go.mod pins, with that version stamped in (without it the server says
# v0.0.0-master, and kubectl and charts with a kubeVersion refuse it). Prints the bin directory.
# Measured on 2 cores with a cold Go cache: kube-scheduler first 1 min 48 s (most of it the shared
# dependencies), then kube-apiserver 76 s, kube-controller-manager 41 s, kubelet 16 s, kube-proxy 5 s.
# Also the cluster DNS into the same directory: coredns, a minimal CoreDNS (deploy/cluster/coredns,
# only the plugins a cluster's Corefile uses) at the version its go.mod pins; 68 s with a cold Go cache.
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
  # The output is captured, not piped into grep -q: under pipefail grep's early exit would fail the check.
  if [[ -x $BIN/$cmd && $("$BIN/$cmd" --version 2>/dev/null || "$BIN/$cmd" version --client 2>/dev/null) == *"$VERSION"* ]]; then continue; fi
  started=$(date +%s)
  echo "[cluster] building $cmd $VERSION (once per machine)…" >&2
  go build -trimpath -o "$BIN/$cmd.part" -ldflags "-s -w$stamp" "k8s.io/kubernetes/cmd/$cmd"
  mv "$BIN/$cmd.part" "$BIN/$cmd"
  echo "[cluster] $cmd built in $(($(date +%s) - started)) s" >&2
done
COREDNS=$(sed -n 's/^\(require \|\t\)github.com\/coredns\/coredns \(v[0-9.]*\)$/\2/p' "$MODULE/coredns/go.mod")
[[ -n $COREDNS ]] || { echo "cluster-binaries.sh: no github.com/coredns/coredns version in $MODULE/coredns/go.mod" >&2; exit 1; }
# Rebuilt when its sources change (the plugin list is ours), not only its version.
source_sum=$(cat "$MODULE/coredns/go.mod" "$MODULE/coredns/main.go" | sha256sum | cut -c1-16)
if [[ ! -x $BIN/coredns || $(cat "$BIN/coredns.source" 2>/dev/null) != "$source_sum" || $("$BIN/coredns" -version 2>/dev/null | head -n 1) != "CoreDNS-${COREDNS#v}" ]]; then
  started=$(date +%s)
  echo "[cluster] building coredns $COREDNS (once per machine)…" >&2
  cd "$MODULE/coredns"
  go build -trimpath -o "$BIN/coredns.part" -ldflags "-s -w" .
  mv "$BIN/coredns.part" "$BIN/coredns"
  echo "$source_sum" >"$BIN/coredns.source"
  echo "[cluster] coredns built in $(($(date +%s) - started)) s" >&2
fi
echo "$BIN"
