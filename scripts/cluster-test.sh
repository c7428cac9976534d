#!/usr/bin/env bash
# `make cluster-test`: the platform on a live two-node Kubernetes cluster (issue 31). Builds every
# image (make images), starts the cluster (scripts/cluster.sh), loads the images into its nodes,
# runs test/cluster/ (the PrometheusRule CRD applied, helm install with the rules and dashboards, a
# tenant's flow through the gateway's Service with a call's recording, leads rolled from its previous
# release to this checkout and back under load, pods lost under load, disruption budgets and drains,
# helm test, uninstall) and always stops the cluster, leaving nothing running. Needs root (kubelets,
# containerd).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export CONTAINERS_CONF=$ROOT/deploy/images/containers.conf
started=$SECONDS
say() { echo "[cluster-test] $*" >&2; }

if bash scripts/cluster.sh status | grep -q ': running'; then say "a cluster is running already: stop it with 'scripts/cluster.sh down' (this test starts its own)"; exit 1; fi
built=$(bash scripts/images.sh) # (a process substitution would hide its failure)
mapfile -t images <<<"$built"
read -r PREVIOUS_LEADS_VERSION PREVIOUS_LEADS_COMMIT <<<"$(node -p 'const h = require("./releases/record.json").history.filter((r) => r.released.leads); h.length > 1 ? h.at(-2).released.leads + " " + h.at(-2).commit : ""')"
[[ -n ${PREVIOUS_LEADS_COMMIT:-} ]] || { say "FAIL: releases/record.json holds no release of leads before its last"; exit 1; }
PREVIOUS_LEADS_TREE=${VOICEAPI_CACHE:-$HOME/.cache/voiceapi}/release-trees/$PREVIOUS_LEADS_COMMIT
if [[ ! -d $PREVIOUS_LEADS_TREE ]]; then
  mkdir -p "$PREVIOUS_LEADS_TREE.part"
  git archive "$PREVIOUS_LEADS_COMMIT" | tar -x -C "$PREVIOUS_LEADS_TREE.part"
  mv "$PREVIOUS_LEADS_TREE.part" "$PREVIOUS_LEADS_TREE"
fi
images+=("$(CONTEXT=$PREVIOUS_LEADS_TREE IMAGES=leads bash scripts/images.sh)")
say "images ready after $((SECONDS - started)) s (leads $PREVIOUS_LEADS_VERSION too)"
HELM=$(bash scripts/helm.sh)
# The object store the suite starts on the host beside the store and Kafka (versitygw, built once per
# machine from the Go module proxy): built before the cluster starts, so that a failed build stops here.
node -e 'require("./deploy/local/dist/index.js").objectStoreBinary()' >/dev/null
# The Prometheus operator's PrometheusRule and AlertmanagerConfig CRDs (its Go module, through the Go
# module proxy): the suite applies them before installing the umbrella, whose rules are a
# PrometheusRule and whose Alertmanager routes an AlertmanagerConfig.
PROMETHEUS_RULE_CRD=$(bash scripts/prometheus-operator-crd.sh)
ALERTMANAGER_CONFIG_CRD=$(bash scripts/prometheus-operator-crd.sh alertmanagerconfigs)

# A cluster that cannot start says why in one line and leaves nothing behind: its apiserver's port
# taken by another process.
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",6443)); s.listen(); time.sleep(120)' &
blocker=$!
sleep 0.5
if out=$(bash scripts/cluster.sh up 2>&1); then kill "$blocker"; bash scripts/cluster.sh down; say "FAIL: the cluster started with its port taken"; exit 1; fi
kill "$blocker"; wait "$blocker" 2>/dev/null || true
grep -q "cannot start: port 6443 is taken" <<<"$out" || { echo "$out" >&2; say "FAIL: no one-line reason for a taken port"; exit 1; }
bash scripts/cluster.sh down >/dev/null || { say "FAIL: a failed start left something behind (line above)"; exit 1; }
say "a taken port stops the start with: ${out##*\[cluster\] }"

bash scripts/cluster.sh up
trap 'bash scripts/cluster.sh down || { say "FAIL: stopping the cluster left something behind (line above)"; exit 1; }' EXIT
say "cluster up after $((SECONDS - started)) s"

# Every process's image, and leads' previous release (the release before the one this checkout
# carries, releases/record.json): its image and chart from its release commit's tree, for the rolling
# update from it to this checkout and the rollback (issue 48).
loaded=$SECONDS
bash scripts/cluster.sh load "${images[@]}"
say "${#images[@]} images loaded into the cluster in $((SECONDS - loaded)) s"

eval "$(bash scripts/cluster.sh env)"
export HELM PROMETHEUS_RULE_CRD ALERTMANAGER_CONFIG_CRD CLUSTER_PREVIOUS_LEADS_VERSION=$PREVIOUS_LEADS_VERSION CLUSTER_PREVIOUS_LEADS_TREE=$PREVIOUS_LEADS_TREE
npx --no-install jest --selectProjects cluster --runInBand
say "passed in $((SECONDS - started)) s"
