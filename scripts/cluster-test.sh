#!/usr/bin/env bash
# `make cluster-test`: the platform on a live one-node Kubernetes cluster (issue 31). Builds every
# image (make images), starts the cluster (scripts/cluster.sh), loads the images into its containerd,
# runs test/cluster/ (helm install, a tenant's flow through the gateway's Service, one service
# released alone under load, pods lost under load, disruption budgets, helm test, uninstall) and
# always stops the cluster, leaving nothing running. Needs root (the kubelet and containerd).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TAG=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/platform/Chart.yaml)
ROLLOUT_TAG=$TAG-rollout
export CONTAINERS_CONF=$ROOT/deploy/images/containers.conf
started=$SECONDS
say() { echo "[cluster-test] $*" >&2; }

bash scripts/images.sh
say "images ready after $((SECONDS - started)) s"
HELM=$(bash scripts/helm.sh)
bash scripts/cluster.sh up
trap 'bash scripts/cluster.sh down' EXIT
say "cluster up after $((SECONDS - started)) s"

# Every process's image, and leads' again under a new tag: the release of leads alone rolls to it.
names=$(node -e 'console.log(require("./services/manifest.json").processes.map((p) => p.name).join(" "))')
images=()
for name in $names; do images+=("docker.io/voiceapi/$name:$TAG"); done
podman tag "docker.io/voiceapi/leads:$TAG" "docker.io/voiceapi/leads:$ROLLOUT_TAG"
images+=("docker.io/voiceapi/leads:$ROLLOUT_TAG")
loaded=$SECONDS
bash scripts/cluster.sh load "${images[@]}"
say "${#images[@]} images loaded into the cluster in $((SECONDS - loaded)) s"

eval "$(bash scripts/cluster.sh env)"
export HELM CLUSTER_ROLLOUT_TAG=$ROLLOUT_TAG
npx --no-install jest --selectProjects cluster --runInBand
say "passed in $((SECONDS - started)) s"
