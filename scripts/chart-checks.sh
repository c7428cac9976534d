#!/usr/bin/env bash
# Over 300 lines because it runs the chart checks in order, each a function; the Python checker is in scripts/chart_checks/.
# Offline checks of every Helm chart under charts/: lint, dependency build, render and validate the
# rendered objects against the Kubernetes schemas (the umbrella's PrometheusRule and
# AlertmanagerConfig against the Prometheus operator's CRDs), plus the platform's own rules (hardened
# pods, secrets only by reference, NetworkPolicies, labels), the umbrella's rules, dashboards and
# Alertmanager routes, and that the generated dashboards are current. Needs no cluster and no network
# beyond the first run, which builds helm and fetches the CRDs from the Go module proxy and installs
# the validator from PyPI into .tools/ (repo-local, git-ignored); the dashboards check needs the npm
# dependencies (make install).
#
#   scripts/chart-checks.sh                  run every check; exit 1 if any failed
#   scripts/chart-checks.sh --sync-schemas   first copy charts/common/schema/service-defs.json into
#                                            the `definitions` of every chart's values.schema.json
#
# Settings (environment):
#   HELM_VERSION      helm tag built by scripts/helm.sh (default v3.19.5)
#   KV_VERSION        PyPI kubernetes-validate version (default 1.37.0; ships the schemas)
#   KUBE_VERSIONS     Kubernetes versions to validate against (default "1.31.0 1.37.0")
#   HELM              use this helm binary instead of building one
#   PROMETHEUS_OPERATOR_VERSION / PROMETHEUS_RULE_CRD / ALERTMANAGER_CONFIG_CRD
#                     see scripts/prometheus-operator-crd.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHARTS=$ROOT/charts
TOOLS=$ROOT/.tools
KV_VERSION=${KV_VERSION:-1.37.0}
read -r -a KUBE_VERSIONS <<<"${KUBE_VERSIONS:-1.31.0 1.37.0}"
RENDER_KUBE_VERSION=${KUBE_VERSIONS[0]}
# API groups of CRD kinds (comma list) validated against no schema: reported as SKIP, never silently.
# None today: the only CRD kinds rendered (the umbrella's PrometheusRule and AlertmanagerConfig) are
# validated against their CRDs (CRD_FILES below).
SKIP_API_GROUPS=${SKIP_API_GROUPS:-}
SYNC_SCHEMAS=0
for arg in "$@"; do
  case $arg in
    --sync-schemas) SYNC_SCHEMAS=1 ;;
    -h | --help) sed -n '3,22p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

START=$(date +%s)
step() { printf '\n==> %s\n' "$*"; }
elapsed() { echo "$(( $(date +%s) - START ))s"; }

# ---------------------------------------------------------------------------------------- tools
install_helm() {
  HELM=$(bash "$ROOT/scripts/helm.sh")
  echo "helm: $HELM ($("$HELM" version --short))"
}

install_validator() {
  VENV=$TOOLS/venv
  PY=$VENV/bin/python
  if [[ -x $PY ]] && "$PY" -c "import sys, kubernetes_validate.version as v; sys.exit(v.__version__ != '$KV_VERSION')" 2>/dev/null; then
    echo "kubernetes-validate $KV_VERSION: $VENV"
    return
  fi
  echo "installing kubernetes-validate $KV_VERSION (schemas included) into $VENV..."
  local t0; t0=$(date +%s)
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$KV_VERSION"
  echo "installed in $(( $(date +%s) - t0 ))s"
}

# The PrometheusRule and AlertmanagerConfig CRDs as the operator ships them (its Go module, through
# the Go module proxy).
install_crds() {
  PROMETHEUS_RULE_CRD=$(bash "$ROOT/scripts/prometheus-operator-crd.sh" prometheusrules)
  echo "PrometheusRule CRD: $PROMETHEUS_RULE_CRD"
  ALERTMANAGER_CONFIG_CRD=$(bash "$ROOT/scripts/prometheus-operator-crd.sh" alertmanagerconfigs)
  echo "AlertmanagerConfig CRD: $ALERTMANAGER_CONFIG_CRD"
}

# Node.js for the dashboards generator (tools/dashboards.ts, through tsx).
install_node() {
  PATH=$(bash "$ROOT/scripts/node-lts.sh"):$PATH
  echo "node: $(command -v node) ($(node --version))"
}

step "tools"
install_helm
install_validator
install_crds
install_node

# Helm runs with empty, private config/cache dirs (no repositories, no plugins) and a dead proxy:
# everything below must work offline, and anything that tries the network fails loudly.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chart-checks.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export HELM_CONFIG_HOME=$WORK/helm/config HELM_CACHE_HOME=$WORK/helm/cache HELM_DATA_HOME=$WORK/helm/data
export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY='' https_proxy=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 no_proxy=''
export KUBECONFIG=$WORK/kubeconfig-none

# The AlertmanagerConfig CRD lists matchType's values with a bare `=`, which YAML 1.1 (PyYAML, the
# checker's parser) takes for its "value" type and refuses to load; the checker reads a copy with
# that value quoted, nothing else changed (Kubernetes reads both alike).
ALERTMANAGER_CONFIG_CRD_COPY=$WORK/monitoring.coreos.com_alertmanagerconfigs.yaml
sed -E "s/^( *- )=$/\1'='/" "$ALERTMANAGER_CONFIG_CRD" >"$ALERTMANAGER_CONFIG_CRD_COPY"

# The checker itself (scripts/chart_checks/check.py): validates rendered manifests and asserts the
# platform's rules. Python from the validator's venv; sockets are disabled before kubernetes_validate
# is imported, so a schema fetched at run time would fail the check instead of passing quietly.
export SKIP_API_GROUPS CHECK_KUBE_VERSIONS="${KUBE_VERSIONS[*]}" CRD_FILES=$PROMETHEUS_RULE_CRD:$ALERTMANAGER_CONFIG_CRD_COPY
check_py() { "$PY" "$ROOT/scripts/chart_checks/check.py" "$@"; }

# ---------------------------------------------------------------------------------------- checks
PASSED=() FAILED=()
# run NAME CMD...: runs one check, shows its output indented, records the result, never aborts.
run() {
  local name=$1; shift
  local log=$WORK/log.$(( ${#PASSED[@]} + ${#FAILED[@]} ))
  if "$@" >"$log" 2>&1; then
    PASSED+=("$name"); printf '  PASS  %s\n' "$name"
    grep -E '^    ' "$log" || true   # details worth seeing on success are indented
  else
    FAILED+=("$name"); printf '  FAIL  %s\n' "$name"
    sed 's/^/        /' "$log" | tail -n 40
  fi
}
# expect_failure PATTERN CMD...: CMD must fail, saying PATTERN (the negative tests).
expect_failure() {
  local pattern=$1 out; shift
  if out=$("$@" 2>&1); then echo "unexpectedly accepted"; return 1; fi
  if grep -qE "$pattern" <<<"$out"; then
    echo "    refused: $(grep -oE ".{0,70}($pattern).{0,50}" <<<"$out" | head -n 1)"
  else
    echo "failed, but without /$pattern/:"; tail -n 5 <<<"$out"; return 1
  fi
}
must_fail() { local name=$1; shift; run "$name" expect_failure "$@"; }
# absent PATTERN FILE: FILE must not contain PATTERN.
absent() {
  if grep -nE "$1" "$2"; then echo "found /$1/ above"; return 1; fi
  echo "    no match for /$1/ in $(grep -c . "$2") lines"
}
# value_is FILE Kind/name:path EXPECTED_JSON
value_is() {
  local got; got=$(check_py query "$1" "$2") || return 1
  echo "    $2 = $got"; [[ $got == "$3" ]]
}
render() { # render OUT CHART RELEASE [helm args...]
  local out=$1 chart=$2 release=$3; shift 3
  "$HELM" template "$release" "$chart" --namespace voiceapi --kube-version "$RENDER_KUBE_VERSION" "$@" >"$out"
}
rendered() { # rendered NAME CHART RELEASE [helm args...] -- renders, then validates and checks rules
  local name=$1 chart=$2 release=$3; shift 3
  local out=$WORK/render.$name.yaml
  LAST_RENDER=$out
  run "render $name" render "$out" "$chart" "$release" "$@"
  [[ -s $out ]] || return 0
  run "validate $name (kubernetes-validate, strict)" check_py validate "$out"
  run "platform rules $name" check_py rules "$out"
}

# Chart inventory: the library, the service charts (depend on common), the umbrella (last).
LIBRARIES=() SERVICES=() UMBRELLA=platform
for chart_yaml in "$CHARTS"/*/Chart.yaml; do
  dir=$(dirname "$chart_yaml"); name=$(basename "$dir")
  if grep -qE '^type:\s*library' "$chart_yaml"; then LIBRARIES+=("$name")
  elif [[ $name != "$UMBRELLA" ]]; then SERVICES+=("$name"); fi
done
echo "charts: library ${LIBRARIES[*]}; services ${SERVICES[*]}; umbrella $UMBRELLA"

# A chart's version is its service's (package.json), set by `make release`; between releases a chart
# changes freely, and `make contracts-check` keeps its values compatible with the released ones.

step "values schemas (definitions from charts/common/schema/service-defs.json)"
DEFS=$CHARTS/common/schema/service-defs.json
sync_schemas() { # sync_schemas write|check
  "$PY" - "$1" "$DEFS" "${SERVICES[@]/#/$CHARTS/}" "$CHARTS/$UMBRELLA" <<'PY'
import json, sys
mode, defs_path, *charts = sys.argv[1:]
defs = json.load(open(defs_path))["definitions"]
stale = []
for c in charts:
    path = f"{c}/values.schema.json"
    schema = json.load(open(path))
    if schema.get("definitions") != defs:
        if mode == "write":
            schema["definitions"] = defs
            with open(path, "w") as f:
                json.dump(schema, f, indent=2); f.write("\n")
            print(f"    updated {path}")
        else:
            stale.append(path)
for s in stale:
    print(f"    {s}: definitions differ from {defs_path}; run scripts/chart-checks.sh --sync-schemas")
sys.exit(1 if stale else 0)
PY
}
if [[ $SYNC_SCHEMAS == 1 ]]; then sync_schemas write; fi
run "every chart's values.schema.json matches the common definitions" sync_schemas check

# Everything from here works on a copy, so the checks never rewrite files in the work tree.
cp -R "$CHARTS" "$WORK/charts"
SRC_CHARTS=$CHARTS CHARTS=$WORK/charts

step "helm dependency build (file:// dependencies, offline; on a copy of charts/)"
for c in "${SERVICES[@]}" "$UMBRELLA"; do
  run "dependency build $c" "$HELM" dependency build "$CHARTS/$c"
done
# Archives under charts/*/charts/ in the work tree, if any are kept there, must hold exactly what
# the dependency build makes from the sources (an install from the checkout would use them).
vendored_current() { "$PY" "$ROOT/scripts/chart_checks/vendored_archives.py" "$SRC_CHARTS" "$CHARTS"; }
run "vendored dependency archives (if any) match their sources" vendored_current

step "helm lint --strict"
for c in "${LIBRARIES[@]}" "${SERVICES[@]}"; do
  run "lint $c" "$HELM" lint --strict "$CHARTS/$c" --kube-version "$RENDER_KUBE_VERSION"
done
run "lint $UMBRELLA (default values)" "$HELM" lint --strict "$CHARTS/$UMBRELLA" --kube-version "$RENDER_KUBE_VERSION"
# Production pins every image by digest; a release passes them in a values file like this one
# (made-up digests: the checks need only their form).
for c in "${SERVICES[@]}"; do
  printf '%s:\n  image:\n    digest: sha256:%s\n' "$c" "$(printf '%s' "$c" | sha256sum | cut -c1-64)"
done >"$WORK/release-images.yaml"
PROD=(-f "$CHARTS/$UMBRELLA/values-production.yaml" -f "$WORK/release-images.yaml")
run "lint $UMBRELLA (values-production.yaml with the release's image digests)" "$HELM" lint --strict "$CHARTS/$UMBRELLA" \
  --kube-version "$RENDER_KUBE_VERSION" "${PROD[@]}"

step "umbrella: default values"
rendered "platform-default" "$CHARTS/$UMBRELLA" voiceapi
run "platform-default has every service" check_py expect "$LAST_RENDER" \
  "Deployment=${#SERVICES[@]},Service=${#SERVICES[@]},NetworkPolicy=${#SERVICES[@]},PodDisruptionBudget=${#SERVICES[@]},!Secret,!Ingress,!HorizontalPodAutoscaler,!PrometheusRule,!AlertmanagerConfig,!ConfigMap"

step "service manifest: every process has a chart, an umbrella entry and (gRPC) its address in the gateway and in its callers"
# services/manifest.json is also read by make run, the test harness and the image build: adding a
# service is one entry there plus its chart; these checks say which chart piece is missing.
MANIFEST=$ROOT/services/manifest.json
PLATFORM_DEFAULT=$LAST_RENDER
run "services/manifest.json matches the charts" check_py manifest "$PLATFORM_DEFAULT" "$MANIFEST" "$CHARTS" "$UMBRELLA"
# Canaries: a manifest entry without a chart, and an address setting the gateway chart does not give.
"$PY" - "$MANIFEST" "$WORK" <<'PY'
import copy, json, sys
src, work = sys.argv[1:]
m = json.load(open(src))
grpc = next(x for x in m["processes"] if x["protocol"] == "grpc")
# A made-up process (not a planned service, which would one day have its chart).
chartless = dict(grpc, name="ledgerless", package="@voiceapi/ledgerless", workspace="services/ledgerless",
                 entry="services/ledgerless/dist/main.js", addressEnv="LEDGERLESS_GRPC_ADDR", mongoDb="ledgerless",
                 chart="ledgerless")
json.dump(dict(m, processes=[chartless] + m["processes"]), open(f"{work}/manifest-chartless.json", "w"))
renamed = copy.deepcopy(m)
next(x for x in renamed["processes"] if x["protocol"] == "grpc")["addressEnv"] = "RENAMED_GRPC_ADDR"
json.dump(renamed, open(f"{work}/manifest-renamed-address.json", "w"))
PY
must_fail "manifest: a process without a chart is refused (canary)" "ledgerless: no chart at charts/ledgerless" \
  check_py manifest "$PLATFORM_DEFAULT" "$WORK/manifest-chartless.json" "$CHARTS" "$UMBRELLA"
must_fail "manifest: an address the gateway chart does not set is refused (canary)" "grpcClients has no RENAMED_GRPC_ADDR" \
  check_py manifest "$PLATFORM_DEFAULT" "$WORK/manifest-renamed-address.json" "$CHARTS" "$UMBRELLA"
render "$WORK/wrong-callee-port.yaml" "$CHARTS/$UMBRELLA" voiceapi --set leads.grpcClients.BILLING_GRPC_ADDR.port=50099
must_fail "manifest: a service given another service's address on the wrong port is refused (canary)" "Deployment/leads sets BILLING_GRPC_ADDR='billing:50099'" \
  check_py manifest "$WORK/wrong-callee-port.yaml" "$MANIFEST" "$CHARTS" "$UMBRELLA"

step "umbrella: Prometheus rules, Grafana dashboards and Alertmanager routes (observability.rules, .dashboards, .alerting)"
# The PrometheusRule is validated against the operator's CRD (render's validate step), holds every
# group of files/prometheus/*.rules.yaml as written there; one ConfigMap per dashboard, its JSON
# parsed; the committed dashboards are what tools/dashboards.ts writes (decision 0129).
RULES_DIR=$CHARTS/$UMBRELLA/files/prometheus DASH_DIR=$CHARTS/$UMBRELLA/files/dashboards
DASHBOARDS=("$DASH_DIR"/*.json)
OBS=(--set observability.rules.enabled=true --set observability.dashboards.enabled=true --set observability.rules.labels.release=kube-prometheus-stack)
dashboards_check() { # dashboards_check DIR: the generator's --check against DIR
  [[ -e $ROOT/node_modules/tsx/package.json ]] || { echo "    no node_modules/tsx: install the npm dependencies first (make install)"; return 1; }
  (cd "$ROOT" && node --import tsx tools/dashboards.ts --check --dir "$1") | sed 's/^/    /'
  return "${PIPESTATUS[0]}"
}
run "dashboards: charts/platform/files/dashboards is what tools/dashboards.ts writes" dashboards_check "$SRC_CHARTS/$UMBRELLA/files/dashboards"
cp -R "$SRC_CHARTS/$UMBRELLA/files/dashboards" "$WORK/dashboards-edited"
sed -i 's/"title": "Heap used"/"title": "Heap used (edited by hand)"/' "$WORK/dashboards-edited/voiceapi-billing.json"
must_fail "dashboards: a dashboard edited by hand is refused (canary)" "voiceapi-billing.json: differs" dashboards_check "$WORK/dashboards-edited"
cp -R "$SRC_CHARTS/$UMBRELLA/files/dashboards" "$WORK/dashboards-padded"
sed -i '0,/"expr": "\(.*\)"/s//"expr": "\1 or on() vector(0)"/' "$WORK/dashboards-padded/voiceapi-webhooks.json"
must_fail "dashboards: a query padded so it cannot come back empty is refused (canary)" "voiceapi-webhooks.json: pads a query" dashboards_check "$WORK/dashboards-padded"
run "lint $UMBRELLA (rules and dashboards on)" "$HELM" lint --strict "$CHARTS/$UMBRELLA" --kube-version "$RENDER_KUBE_VERSION" "${OBS[@]}"
rendered "platform-observability" "$CHARTS/$UMBRELLA" voiceapi "${OBS[@]}" --set observability.dashboards.folder=voiceapi
PLATFORM_OBS=$LAST_RENDER
run "platform-observability has one PrometheusRule and one ConfigMap per dashboard" check_py expect "$LAST_RENDER" \
  "PrometheusRule/voiceapi=1,ConfigMap=${#DASHBOARDS[@]},Deployment=${#SERVICES[@]}"
run "platform-observability: the PrometheusRule carries observability.rules.labels (the operator's ruleSelector)" \
  value_is "$LAST_RENDER" PrometheusRule/voiceapi:metadata.labels.release '"kube-prometheus-stack"'
run "platform-observability: dashboards in the folder observability.dashboards.folder names" \
  value_is "$LAST_RENDER" ConfigMap/dashboard-voiceapi-overview:metadata.annotations.grafana_folder '"voiceapi"'
run "platform-observability: every rule group of files/prometheus, every dashboard's JSON" \
  check_py observability "$LAST_RENDER" "$RULES_DIR" "$DASH_DIR" grafana_dashboard 1
run "platform-observability: only one switched on renders only it (rules)" check_py expect \
  <(render /dev/stdout "$CHARTS/$UMBRELLA" voiceapi --set observability.rules.enabled=true) "PrometheusRule=1,!ConfigMap,!AlertmanagerConfig"
runbooks_absolute() { # runbooks_absolute RENDER BASE: every alert's runbook_url is under BASE
  local all abs
  all=$(grep -c 'runbook_url:' "$1") abs=$(grep -c "runbook_url: $2/docs/operations.md#" "$1")
  echo "    $abs of $all runbook links under $2"
  [[ $all -gt 0 && $all == "$abs" ]]
}
RUNBOOKS=https://git.example.com/voiceapi/blob/main
run "render platform-runbooks" render "$WORK/render.runbooks.yaml" "$CHARTS/$UMBRELLA" voiceapi --set observability.rules.enabled=true --set "observability.rules.runbookBaseUrl=$RUNBOOKS"
run "platform-runbooks: observability.rules.runbookBaseUrl makes every runbook link absolute" runbooks_absolute "$WORK/render.runbooks.yaml" "$RUNBOOKS"
must_fail "platform-runbooks: a link left relative is refused (canary)" "0 of [0-9]+ runbook links" runbooks_absolute "$PLATFORM_OBS" "$RUNBOOKS"
# Canaries: each way the checks above must refuse.
broken_rule() { # broken_rule NAME: a PrometheusRule with one flaw, written to $WORK/rule-NAME.yaml
  local groups='[{name: a, rules: [{record: "a:b:c", expr: up}]}]' meta='{name: broken, namespace: voiceapi}'
  case $1 in
    unknown-field) groups='[{name: a, rules: [{record: "a:b:c", expr: up, severity: page}]}]' ;;
    bad-interval) groups='[{name: a, interval: 5 minutes, rules: [{record: "a:b:c", expr: up}]}]' ;;
    duplicate-group) groups='[{name: a, rules: [{record: "a:b:c", expr: up}]}, {name: a, rules: [{alert: A, expr: up}]}]' ;;
    bad-metadata) meta='{name: broken, namespace: voiceapi, label: {a: b}}' ;;
  esac
  printf 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: %s\nspec:\n  groups: %s\n' "$meta" "$groups" >"$WORK/rule-$1.yaml"
  echo "$WORK/rule-$1.yaml"
}
run "a well-formed PrometheusRule passes the CRD's schema (control)" check_py validate "$(broken_rule none)"
must_fail "a rule with a field the CRD does not have is refused (canary)" "Additional properties are not allowed \('severity'" check_py validate "$(broken_rule unknown-field)"
must_fail "a group interval that is not a Prometheus duration is refused (canary)" "interval: '5 minutes' does not match" check_py validate "$(broken_rule bad-interval)"
must_fail "two groups of one name are refused (canary: list-map key)" "duplicate name=a" check_py validate "$(broken_rule duplicate-group)"
must_fail "metadata is checked as Kubernetes' ObjectMeta (canary)" "Additional properties are not allowed \('label'" check_py validate "$(broken_rule bad-metadata)"
canary_umbrella() { # canary_umbrella NAME: a copy of the umbrella chart to break, its path printed
  rm -rf "$WORK/canary-$1"; cp -R "$CHARTS/$UMBRELLA" "$WORK/canary-$1"; echo "$WORK/canary-$1"
}
c=$(canary_umbrella missing-group)
printf 'groups:\n  - name: voiceapi-canary\n    rules: [{record: "voiceapi:canary:one", expr: vector(1)}]\n' >"$c/files/prometheus/canary.rules.yaml"
must_fail "a rule group of the files missing from the PrometheusRule is refused (canary)" "group voiceapi-canary of canary.rules.yaml is missing" \
  check_py observability "$PLATFORM_OBS" "$c/files/prometheus" "$DASH_DIR" grafana_dashboard 1
printf 'groups:\n  - name: voiceapi-causes\n    rules: [{record: "voiceapi:canary:one", expr: vector(1)}]\n' >"$c/files/prometheus/canary.rules.yaml"
must_fail "a group name used by two rule files is refused (canary)" "group voiceapi-causes is in|group names must be unique" \
  check_py observability "$PLATFORM_OBS" "$c/files/prometheus" "$DASH_DIR" grafana_dashboard 1
c=$(canary_umbrella no-groups)
printf '# not a rule file\nrules: []\n' >"$c/files/prometheus/empty.rules.yaml"
must_fail "a rules file without groups is refused at render (canary)" "empty.rules.yaml has no list of groups" render /dev/null "$c" voiceapi "${OBS[@]}"
c=$(canary_umbrella no-rules)
rm -f "$c"/files/prometheus/*.rules.yaml
must_fail "rules switched on without a rules file are refused at render (canary)" "no rule groups" render /dev/null "$c" voiceapi "${OBS[@]}"
c=$(canary_umbrella bad-json)
head -c 2000 "$DASH_DIR/voiceapi-overview.json" >"$c/files/dashboards/voiceapi-overview.json"
render "$WORK/bad-json.yaml" "$c" voiceapi "${OBS[@]}"
must_fail "a dashboard whose JSON does not parse is refused (canary)" "voiceapi-overview.json does not parse as JSON" \
  check_py observability "$WORK/bad-json.yaml" "$c/files/prometheus" "$c/files/dashboards" grafana_dashboard 1
c=$(canary_umbrella variable)
# shellcheck disable=SC2016  # $job is Grafana's template variable, written literally
sed -i 's/job=\\"voiceapi\/billing\\"/job=\\"$job\\"/' "$c/files/dashboards/voiceapi-billing.json"
render "$WORK/variable.yaml" "$c" voiceapi "${OBS[@]}"
must_fail "a dashboard query with a template variable other than the data source is refused (canary)" "template variables other than the data source: \['job'\]" \
  check_py observability "$WORK/variable.yaml" "$c/files/prometheus" "$c/files/dashboards" grafana_dashboard 1
render "$WORK/other-label.yaml" "$CHARTS/$UMBRELLA" voiceapi "${OBS[@]}" --set observability.dashboards.label=dashboards
must_fail "dashboards under another label than the sidecar's are refused (canary)" "no ConfigMap labelled grafana_dashboard=1" \
  check_py observability "$WORK/other-label.yaml" "$RULES_DIR" "$DASH_DIR" grafana_dashboard 1

# The Alertmanager routes (observability.alerting): one AlertmanagerConfig, validated against the
# operator's CRD (render's validate step), holding the route, receivers and inhibition rules of
# files/alertmanager/alertmanager.yaml (read back and compared: the CRD leaves child routes
# unchecked), every URL from the Secret by reference; every alert of the PrometheusRule labelled with
# the release namespace, the matcher the operator adds to the config's route and inhibition rules.
AM_FILE=$CHARTS/$UMBRELLA/files/alertmanager/alertmanager.yaml
ALERTING=("${OBS[@]}" --set observability.alerting.enabled=true --set observability.alerting.receiversSecret=alert-receivers
  --set observability.alerting.watchdogUrlKey=watchdog-url --set observability.alerting.labels.release=kube-prometheus-stack)
expected_rules() { # expected_rules DIR RUNBOOK_BASE NAMESPACE: files/prometheus/*.rules.yaml as the chart renders them
  # with those values (each relative runbook_url under RUNBOOK_BASE; each alert labelled
  # namespace=NAMESPACE; empty: left as written), for check.py observability to compare with
  mkdir -p "$1"
  "$PY" - "$RULES_DIR" "$@" <<'PY'
import glob, os, re, sys, yaml
src, out, base, ns = sys.argv[1:]
for f in sorted(glob.glob(f"{src}/*.rules.yaml")):
    doc = yaml.safe_load(open(f))
    for r in (r for g in doc.get("groups") or [] for r in g.get("rules") or [] if "alert" in r):
        a = r.get("annotations") or {}
        if base and a.get("runbook_url") and not re.match(r"^[a-z]+://", a["runbook_url"]):
            a["runbook_url"] = f"{base.rstrip('/')}/{a['runbook_url']}"
        if ns: r["labels"] = {**(r.get("labels") or {}), "namespace": ns}
    yaml.safe_dump(doc, open(f"{out}/{os.path.basename(f)}", "w"))
PY
}
alerts_labelled() { # alerts_labelled RENDER NAMESPACE: every alerting rule of the PrometheusRule has namespace=NAMESPACE
  "$PY" - "$@" <<'PY'
import sys, yaml
render, ns = sys.argv[1:]
rules = [r for d in yaml.safe_load_all(open(render)) if d and d["kind"] == "PrometheusRule"
         for g in d["spec"]["groups"] for r in g["rules"] if "alert" in r]
bad = [r["alert"] for r in rules if (r.get("labels") or {}).get("namespace") != ns]
print(f"    {len(rules) - len(bad)} of {len(rules)} alerts labelled namespace={ns}" + (f"; not: {', '.join(bad[:5])}" if bad else ""))
sys.exit(1 if bad or not rules else 0)
PY
}
alerting_is_source() { # alerting_is_source RENDER FILE SECRET WEBHOOK_KEY WATCHDOG_KEY: the AlertmanagerConfig, read
  # back, is FILE's route, receivers and inhibition rules; page and ticket post to SECRET's
  # WEBHOOK_KEY, the watchdog to its WATCHDOG_KEY (empty: no webhook); no URL in the manifest
  "$PY" - "$@" <<'PY'
import json, re, sys, yaml
render, src, secret, hook_key, dog_key = sys.argv[1:]
amc = [d for d in yaml.safe_load_all(open(render)) if d and d["kind"] == "AlertmanagerConfig"]
if len(amc) != 1: print(f"    {len(amc)} AlertmanagerConfig objects rendered, 1 expected"); sys.exit(1)
spec, am, p = amc[0]["spec"], yaml.safe_load(open(src)), []
M = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$')
def parsed(ms):  # Alertmanager's string form, as [name, matchType, value]
    return [[x[1], x[2], json.loads(f'"{x[3]}"')] if x else ["unparsed", m] for m, x in ((m, M.match(m)) for m in ms or [])]
def crd(ms): return [[m.get("name"), m.get("matchType"), m.get("value")] for m in ms or []]
KEYS = {"receiver": "receiver", "group_by": "groupBy", "group_wait": "groupWait", "group_interval": "groupInterval",
        "repeat_interval": "repeatInterval", "continue": "continue"}
def route_src(r):
    return {k: v for k, v in [(k, r.get(k)) for k in KEYS] + [("matchers", parsed(r.get("matchers"))),
            ("routes", [route_src(c) for c in r.get("routes") or []])] if v not in (None, [])}
def route_amc(r, where):
    back = {v: k for k, v in KEYS.items()}
    p.extend(f"{where}.{k}: not a field of the CRD's Route" for k in sorted(r.keys() - back.keys() - {"matchers", "routes"}))
    return {k: v for k, v in [(back[k], r[k]) for k in back if k in r] + [("matchers", crd(r.get("matchers"))),
            ("routes", [route_amc(c, f"{where}.routes.{i}") for i, c in enumerate(r.get("routes") or [])])] if v not in (None, [])}
url_key = {"page": hook_key, "ticket": hook_key, "watchdog": dog_key}
def receiver_src(r):
    hooks = [{"urlSecret": {"name": secret, "key": url_key[r["name"]]}, "sendResolved": w.get("send_resolved")}
             for w in r.get("webhook_configs") or []] if url_key.get(r["name"]) else []
    return dict(name=r["name"], **({"webhookConfigs": hooks} if hooks else {}))
def receiver_amc(r):
    hooks = [{"urlSecret": w.get("urlSecret"), "sendResolved": w.get("sendResolved"),
              **({"url": "<written in the manifest>"} if "url" in w else {})} for w in r.get("webhookConfigs") or []]
    return dict(name=r.get("name"), **({"webhookConfigs": hooks} if hooks else {}))
def inhibit_src(r): return {"sourceMatch": parsed(r.get("source_matchers")), "targetMatch": parsed(r.get("target_matchers")), "equal": r.get("equal") or []}
def inhibit_amc(r): return {"sourceMatch": crd(r.get("sourceMatch")), "targetMatch": crd(r.get("targetMatch")), "equal": r.get("equal") or []}
def diff(want, got, where):
    if want == got: return []
    if isinstance(want, dict) and isinstance(got, dict):
        return [x for k in sorted(want.keys() | got.keys()) for x in diff(want.get(k), got.get(k), f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [x for i, (a, b) in enumerate(zip(want, got)) for x in diff(a, b, f"{where}.{i}")]
    return [f"{where}: the file has {json.dumps(want)}, the AlertmanagerConfig {json.dumps(got)}"]
p += diff(route_src(am["route"]), route_amc(spec.get("route") or {}, "route"), "route")
p += diff([receiver_src(r) for r in am["receivers"]], [receiver_amc(r) for r in spec.get("receivers") or []], "receivers")
p += diff([inhibit_src(r) for r in am.get("inhibit_rules") or []], [inhibit_amc(r) for r in spec.get("inhibitRules") or []], "inhibit_rules")
for x in p: print(f"    {x}")
if not p:
    print(f"    route ({len(am['route'].get('routes') or [])} child routes), {len(am['receivers'])} receivers and"
          f" {len(am.get('inhibit_rules') or [])} inhibition rules as in {src.rsplit('/', 1)[-1]}; URLs from Secret {secret}"
          f" ({hook_key}{', ' + dog_key if dog_key else ''})")
sys.exit(1 if p else 0)
PY
}
rendered "platform-alerting" "$CHARTS/$UMBRELLA" voiceapi "${ALERTING[@]}"
PLATFORM_ALERTING=$LAST_RENDER
run "platform-alerting has one AlertmanagerConfig, and no Secret (the receivers' URLs are the user's)" check_py expect "$LAST_RENDER" \
  "AlertmanagerConfig/voiceapi=1,PrometheusRule/voiceapi=1,!Secret"
run "platform-alerting: the AlertmanagerConfig carries observability.alerting.labels (the operator's alertmanagerConfigSelector)" \
  value_is "$LAST_RENDER" AlertmanagerConfig/voiceapi:metadata.labels.release '"kube-prometheus-stack"'
run "platform-alerting: pages post to the URL under receiversSecret's webhookUrlKey" \
  value_is "$LAST_RENDER" AlertmanagerConfig/voiceapi:spec.receivers.1 '{"name": "page", "webhookConfigs": [{"sendResolved": true, "urlSecret": {"key": "webhook-url", "name": "alert-receivers"}}]}'
run "platform-alerting: route, receivers and inhibition rules are those of files/alertmanager/alertmanager.yaml" \
  alerting_is_source "$LAST_RENDER" "$AM_FILE" alert-receivers webhook-url watchdog-url
run "platform-alerting: every alert carries namespace=voiceapi (the operator's matcher)" alerts_labelled "$LAST_RENDER" voiceapi
expected_rules "$WORK/rules-alerting" "" voiceapi
run "platform-alerting: rules and dashboards as the files have them, alerts labelled namespace=voiceapi" \
  check_py observability "$LAST_RENDER" "$WORK/rules-alerting" "$DASH_DIR" grafana_dashboard 1
must_fail "platform-observability: without alerting, alerts carry no namespace label (canary)" "0 of [0-9]+ alerts labelled" \
  alerts_labelled "$PLATFORM_OBS" voiceapi
sed 's/severity="ticket"/severity="tickets"/' "$AM_FILE" >"$WORK/alertmanager-edited.yaml"
must_fail "an AlertmanagerConfig that is not the file's routes is refused (canary: a matcher changed in the file)" 'route\.routes\.2\.matchers\.0\.2: the file has "tickets"' \
  alerting_is_source "$PLATFORM_ALERTING" "$WORK/alertmanager-edited.yaml" alert-receivers webhook-url watchdog-url
must_fail "alerting switched on without receiversSecret is refused at render (canary)" "needs observability.alerting.receiversSecret" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi "${OBS[@]}" --set observability.alerting.enabled=true
c=$(canary_umbrella alerting-match)
sed -i 's/^  group_wait: 30s$/  group_wait: 30s\n  match: {team: voiceapi}/' "$c/files/alertmanager/alertmanager.yaml"
must_fail "a key of alertmanager.yaml the chart does not convert is refused at render (canary)" "route.match is not converted" \
  render /dev/null "$c" voiceapi "${ALERTING[@]}"

step "umbrella: values-production.yaml"
rendered "platform-production" "$CHARTS/$UMBRELLA" voiceapi "${PROD[@]}"
run "platform-production shape (HPA, PDB, TLS ingress, no chart-made Secret, rules, dashboards and Alertmanager routes)" check_py expect "$LAST_RENDER" \
  "HorizontalPodAutoscaler/gateway,PodDisruptionBudget/gateway,Ingress/gateway,HorizontalPodAutoscaler/companies,HorizontalPodAutoscaler/billing,HorizontalPodAutoscaler/leads,PodDisruptionBudget/leads,!Secret,PrometheusRule/voiceapi,AlertmanagerConfig/voiceapi,ConfigMap=${#DASHBOARDS[@]}"
expected_rules "$WORK/rules-production" "$RUNBOOKS" voiceapi
run "platform-production: rules (runbook links absolute, alerts labelled namespace=voiceapi) and dashboards as the files have them" \
  check_py observability "$LAST_RENDER" "$WORK/rules-production" "$DASH_DIR" grafana_dashboard 1
run "platform-production: every runbook link opens from an alert (observability.rules.runbookBaseUrl)" \
  runbooks_absolute "$LAST_RENDER" "$RUNBOOKS"
run "platform-production: Alertmanager routes as alertmanager.yaml has them, URLs from Secret voiceapi-alert-receivers (the Watchdog: none)" \
  alerting_is_source "$LAST_RENDER" "$AM_FILE" voiceapi-alert-receivers webhook-url ""
run "platform-production gateway scales from 3 replicas" \
  value_is "$LAST_RENDER" HorizontalPodAutoscaler/gateway:spec.minReplicas 3
run "platform-production images are registry.example.com/voiceapi/<service>@<digest> (no doubled segment)" \
  value_is "$LAST_RENDER" Deployment/companies:spec.template.spec.containers.0.image \
  "\"registry.example.com/voiceapi/companies@sha256:$(printf companies | sha256sum | cut -c1-64)\""
must_fail "production without a service's image digest is refused" "companies: global.image.requireDigest is set" \
  render "$WORK/undigested.yaml" "$CHARTS/$UMBRELLA" voiceapi "${PROD[@]}" --set companies.image.digest=
render "$WORK/doubled-image.yaml" "$CHARTS/$UMBRELLA" voiceapi "${PROD[@]}" --set global.image.registry=registry.example.com/voiceapi
must_fail "an image path with a repeated segment is refused (canary)" "repeats a path segment" \
  check_py rules "$WORK/doubled-image.yaml"
run "platform-production ingress serves TLS" \
  value_is "$LAST_RENDER" Ingress/gateway:spec.tls.0.hosts.0 '"api.voiceapi.example.com"'

step "umbrella: one service switched off (<service>.enabled=false)"
for c in "${SERVICES[@]}"; do
  rendered "platform-without-$c" "$CHARTS/$UMBRELLA" voiceapi --set "$c.enabled=false"
  run "platform-without-$c has no $c" check_py expect "$LAST_RENDER" "!Deployment/$c,Deployment=$(( ${#SERVICES[@]} - 1 ))"
done

step "each service chart on its own (independent release)"
for c in "${SERVICES[@]}"; do
  rendered "$c-alone" "$CHARTS/$c" "$c"
  run "$c-alone renders only $c" check_py expect "$LAST_RENDER" "Deployment/$c=1,Service/$c,NetworkPolicy/$c,ServiceAccount/$c"
  # What a service team releases: the packaged chart (common vendored inside), on its own.
  run "$c: helm package" "$HELM" package "$CHARTS/$c" --destination "$WORK/packages"
  pkgs=("$WORK/packages/$c"-[0-9]*.tgz)
  rendered "$c-packaged" "${pkgs[0]}" "$c"
done
step "independent release: a service keeps its selectors when it leaves the umbrella"
# Deployment selectors are immutable: the hand-over in docs/operations.md (umbrella release
# "platform" -> own release "companies") works only if both select the pods with the same labels.
for c in "${SERVICES[@]}"; do
  render "$WORK/handover.$c.umbrella.yaml" "$CHARTS/$UMBRELLA" platform
  render "$WORK/handover.$c.alone.yaml" "$CHARTS/$c" "$c"
  run "$c: same selectors in the umbrella (release platform) and alone (release $c)" \
    check_py same-selectors "$WORK/handover.$c.umbrella.yaml" "$WORK/handover.$c.alone.yaml" "$c"
done
render "$WORK/handover.other-part-of.yaml" "$CHARTS/companies" companies --set global.partOf=other
must_fail "selectors that differ are refused (canary: another part-of)" "Deployment/companies spec.selector.matchLabels" \
  check_py same-selectors "$WORK/handover.companies.umbrella.yaml" "$WORK/handover.other-part-of.yaml" companies
sed 's|app.kubernetes.io/part-of: voiceapi|app.kubernetes.io/instance: companies|' \
  "$WORK/handover.companies.alone.yaml" >"$WORK/handover.instance-selector.yaml"
must_fail "a selector on the release name is refused (canary)" "must be exactly" \
  check_py rules "$WORK/handover.instance-selector.yaml"
render "$WORK/extra-caller.yaml" "$CHARTS/billing" billing --set 'networkPolicy.allowedCallers={gateway,telephony,leads,knowledge,webhooks}'
must_fail "a NetworkPolicy admitting a caller not on its list is refused (canary)" "billing must accept only" \
  check_py rules "$WORK/extra-caller.yaml"
render "$WORK/extra-caller-leads.yaml" "$CHARTS/leads" leads --set 'networkPolicy.allowedCallers={gateway,telephony,billing}'
must_fail "leads: a NetworkPolicy admitting a caller other than gateway and telephony is refused (canary)" "leads must accept only" \
  check_py rules "$WORK/extra-caller-leads.yaml"
render "$WORK/no-tests.yaml" "$CHARTS/companies" companies --set tests.enabled=false
run "a chart with its test switched off renders no test pod and admits none" check_py rules "$WORK/no-tests.yaml"
sed 's|app.kubernetes.io/name: companies-test|app.kubernetes.io/name: companies|' "$WORK/handover.companies.alone.yaml" >"$WORK/test-pod-selected.yaml"
must_fail "a test pod the service's own selectors would pick is refused (canary)" "must end in -test" \
  check_py rules "$WORK/test-pod-selected.yaml"
must_fail "a second copy (namePrefix) with the same part-of is refused" "needs its own global.partOf" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set global.namePrefix=copy-
rendered "platform-second-copy" "$CHARTS/$UMBRELLA" voiceapi --set global.namePrefix=copy- --set global.partOf=voiceapi-copy

step "development values: inline secrets become a chart-made Secret, referenced, never inlined"
DEV=(--set global.mongo.url=mongodb://app:dev-password@mongo:27017/
     --set gateway.secretEnv.ADMIN_TOKEN.value=dev-admin-token-0123456789
     --set gateway.secretEnv.KEY_HASH_PEPPER.value=dev-pepper-0123456789abcdef
     --set telephony.secretEnv.RECORDING_URL_SECRET.value=dev-recording-secret-0123456789abcdef)
rendered "platform-dev-secrets" "$CHARTS/$UMBRELLA" voiceapi "${DEV[@]}"
run "platform-dev-secrets has one Secret per service" check_py expect "$LAST_RENDER" "Secret=${#SERVICES[@]}"
# Secret data is base64: a plaintext hit anywhere means a value was written into a manifest.
run "platform-dev-secrets: no plaintext secret in any manifest" \
  absent "dev-password|dev-admin-token|dev-pepper|dev-recording-secret" "$LAST_RENDER"

step "object store: only telephony and knowledge, their keys from a Secret or the pod's identity"
# Telephony's recordings and knowledge's documents are in object storage (decision 0136): those two
# get OBJECT_STORE_* (their buckets, global.objectStore's settings), no other service does, and the
# keys reach a pod only by secretKeyRef; without keys the AWS SDK takes the pod's identity.
os_keys() { # os_keys SECRET/ID_KEY/SECRET_KEY: the two keys' secretKeyRefs, as JSON fields
  local name id secret; IFS=/ read -r name id secret <<<"$1"
  printf ', "OBJECT_STORE_ACCESS_KEY_ID": "secret:%s/%s", "OBJECT_STORE_SECRET_ACCESS_KEY": "secret:%s/%s"' "$name" "$id" "$name" "$secret"
}
os_expect() { # os_expect SETTINGS [TELEPHONY_KEYS KNOWLEDGE_KEYS]: both services' OBJECT_STORE_*, as check.py object-store wants
  local t="" k=""
  if [[ -n ${2:-} ]]; then t=$(os_keys "$2"); k=$(os_keys "$3"); fi
  printf '{"telephony": {"OBJECT_STORE_BUCKET": "voiceapi-recordings", %s%s}, "knowledge": {"OBJECT_STORE_BUCKET": "voiceapi-knowledge", %s%s}}' "$1" "$t" "$1" "$k"
}
AWS_S3='"OBJECT_STORE_REGION": "us-east-1", "OBJECT_STORE_FORCE_PATH_STYLE": "false", "OBJECT_STORE_CREATE_BUCKET": "false"'
run "platform-default: AWS S3 by the pods' identity, telephony and knowledge only" \
  check_py object-store "$PLATFORM_DEFAULT" "$(os_expect "$AWS_S3")"
run "platform-production: AWS S3 by the pods' identity (no key anywhere)" \
  check_py object-store "$WORK/render.platform-production.yaml" "$(os_expect "$AWS_S3")"
for c in telephony knowledge; do
  run "$c-alone: its bucket, AWS S3 by the pod's identity" check_py object-store "$WORK/render.$c-alone.yaml" \
    "$(os_expect "$AWS_S3" | "$PY" -c "import json,sys; print(json.dumps({'$c': json.load(sys.stdin)['$c']}))")"
done
# Development: a local S3 server, its keys inline (each chart makes its own Secret of them).
OBJ_DEV=(--set-string global.objectStore.endpoint=http://10.244.0.1:7070 --set global.objectStore.forcePathStyle=true
         --set global.objectStore.createBucket=true --set-string global.objectStore.accessKeyId=dev-object-key-id
         --set-string global.objectStore.secretAccessKey=dev-object-secret-0123456789)
rendered "platform-object-store-dev" "$CHARTS/$UMBRELLA" voiceapi "${OBJ_DEV[@]}"
run "platform-object-store-dev: a chart-made Secret for telephony and for knowledge" check_py expect "$LAST_RENDER" \
  "Secret=2,Secret/telephony,Secret/knowledge"
run "platform-object-store-dev: the endpoint, path-style, bucket creation, keys by secretKeyRef" \
  check_py object-store "$LAST_RENDER" "$(os_expect '"OBJECT_STORE_REGION": "us-east-1", "OBJECT_STORE_ENDPOINT": "http://10.244.0.1:7070", "OBJECT_STORE_FORCE_PATH_STYLE": "true", "OBJECT_STORE_CREATE_BUCKET": "true"' \
    telephony/object-store-access-key-id/object-store-secret-access-key knowledge/object-store-access-key-id/object-store-secret-access-key)"
run "platform-object-store-dev: no plaintext key in any manifest" absent "dev-object-key-id|dev-object-secret" "$LAST_RENDER"
# Production off AWS: a Secret you manage; a service may have its own (keys that reach only its bucket).
rendered "platform-object-store-secret" "$CHARTS/$UMBRELLA" voiceapi --set global.objectStore.existingSecret=voiceapi-object-store \
  --set knowledge.objectStore.existingSecret=voiceapi-knowledge-objects --set knowledge.objectStore.secretAccessKeyKey=secret
run "platform-object-store-secret: no chart-made Secret" check_py expect "$LAST_RENDER" "!Secret"
run "platform-object-store-secret: the global Secret, knowledge's own" check_py object-store "$LAST_RENDER" \
  "$(os_expect "$AWS_S3" voiceapi-object-store/access-key-id/secret-access-key voiceapi-knowledge-objects/access-key-id/secret)"
render "$WORK/os-companies.yaml" "$CHARTS/$UMBRELLA" voiceapi --set-string companies.env.OBJECT_STORE_BUCKET=x
must_fail "object store settings on a service that keeps no objects are refused (canary)" "Deployment/companies: OBJECT_STORE_\* is" \
  check_py object-store "$WORK/os-companies.yaml" "$(os_expect "$AWS_S3")"
render "$WORK/os-inline-key.yaml" "$CHARTS/telephony" telephony --set-string env.OBJECT_STORE_SECRET_ACCESS_KEY=plain
must_fail "an object store key written into the pod spec is refused (canary)" "OBJECT_STORE_SECRET_ACCESS_KEY is not read from a Secret" \
  check_py rules "$WORK/os-inline-key.yaml"
printf 'global:\n  objectStore:\n    forcePathStyle: "yes"\n' >"$WORK/os-wrong-type.yaml"
must_fail "object store: a values file with a string for a boolean is refused" "forcePathStyle.*want boolean|forcePathStyle.*boolean" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi -f "$WORK/os-wrong-type.yaml"
printf 'telephony:\n  objectStore: voiceapi-recordings\n' >"$WORK/os-not-an-object.yaml"
must_fail "object store: telephony.objectStore that is not an object is refused" "objectStore.*want object|objectStore.*object" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi -f "$WORK/os-not-an-object.yaml"
must_fail "object store: an empty region is refused" "region.*minLength|region" \
  render /dev/null "$CHARTS/telephony" telephony --set-string global.objectStore.region=
must_fail "object store: an endpoint that is not a URL is refused" "endpoint.*pattern|endpoint.*match" \
  render /dev/null "$CHARTS/knowledge" knowledge --set-string global.objectStore.endpoint=minio:9000
must_fail "object store: a bucket name S3 refuses is refused" "bucket.*pattern|bucket.*match" \
  render /dev/null "$CHARTS/telephony" telephony --set-string objectStore.bucket=Recordings_1
must_fail "object store: telephony without its bucket is refused" "bucket" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set telephony.objectStore.bucket=null
must_fail "object store: one development key without the other is refused" "accessKeyId|secretAccessKey" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set-string global.objectStore.accessKeyId=dev-object-key-id
must_fail "object store: a misspelled setting is refused (global.objectStore.bukket)" "bukket|additional properties|additionalProperties" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set-string global.objectStore.bukket=x
must_fail "object store: a service that keeps no objects refuses objectStore" "/objectStore.*not|objectStore" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set-string companies.objectStore.bucket=voiceapi-companies

step "outbound proxy: OUTBOUND_PROXY on webhooks and agents when set, on no pod when not"
# Deliveries and custom-API calls go through an egress proxy only when the operator names one
# (decision 0157): the variable is rendered only when set, on the pods it is set for.
EGRESS_PROXY=http://smokescreen.egress:4750
run "platform-default: no OUTBOUND_PROXY on any pod (direct)" check_py env "$PLATFORM_DEFAULT" OUTBOUND_PROXY '{}'
run "platform-production: no OUTBOUND_PROXY on any pod (direct)" check_py env "$WORK/render.platform-production.yaml" OUTBOUND_PROXY '{}'
rendered "platform-outbound-proxy" "$CHARTS/$UMBRELLA" voiceapi \
  --set-string "webhooks.env.OUTBOUND_PROXY=$EGRESS_PROXY" --set-string "agents.env.OUTBOUND_PROXY=$EGRESS_PROXY"
run "platform-outbound-proxy: webhooks and agents get it, no other pod" check_py env "$LAST_RENDER" OUTBOUND_PROXY \
  "{\"webhooks\": \"$EGRESS_PROXY\", \"agents\": \"$EGRESS_PROXY\"}"
must_fail "an OUTBOUND_PROXY expected absent and set is refused (canary)" "Deployment/webhooks: OUTBOUND_PROXY is set" \
  check_py env "$LAST_RENDER" OUTBOUND_PROXY '{}'
must_fail "an OUTBOUND_PROXY expected and absent is refused (canary)" "Deployment/webhooks: OUTBOUND_PROXY is absent" \
  check_py env "$PLATFORM_DEFAULT" OUTBOUND_PROXY "{\"webhooks\": \"$EGRESS_PROXY\"}"
run "render webhooks-outbound-proxy" render "$WORK/webhooks-outbound-proxy.yaml" "$CHARTS/webhooks" webhooks --set-string "env.OUTBOUND_PROXY=$EGRESS_PROXY"
run "webhooks-alone with env.OUTBOUND_PROXY: its pod gets it" check_py env "$WORK/webhooks-outbound-proxy.yaml" OUTBOUND_PROXY \
  "{\"webhooks\": \"$EGRESS_PROXY\"}"
for p in https://smokescreen.egress:4750 smokescreen.egress:4750 http://user:secret@smokescreen.egress:4750 http://smokescreen.egress:4750/egress; do
  must_fail "OUTBOUND_PROXY '$p' is refused (not http://host:port)" "OUTBOUND_PROXY.*does not match pattern" \
    render /dev/null "$CHARTS/agents" agents --set-string "env.OUTBOUND_PROXY=$p"
done

step "the image's user is the charts' runAsUser/runAsGroup/fsGroup"
dockerfile_user() { # dockerfile_user DOCKERFILE
  local user; user=$(grep -E '^USER ' "$1" | tail -n 1 | awk '{print $2}')
  for c in "${SERVICES[@]}"; do
    local want; want=$(check_py query "$WORK/render.$c-alone.yaml" "Deployment/$c:spec.template.spec.securityContext" |
      "$PY" -c 'import json,sys; s=json.load(sys.stdin); print("%s:%s %s" % (s["runAsUser"], s["runAsGroup"], s["fsGroup"]))')
    echo "    deploy/images/Dockerfile USER $user; $c runs as ${want% *} with fsGroup ${want#* }"
    [[ $user == "${want% *}" && $user == "${want#* }:${want#* }" ]] || { echo "    $c: differs from USER $user"; return 1; }
  done
}
run "deploy/images/Dockerfile USER matches every chart's pod security context" dockerfile_user "$ROOT/deploy/images/Dockerfile"
sed -E 's/^USER .*/USER 1000:1000/' "$ROOT/deploy/images/Dockerfile" >"$WORK/Dockerfile.uid1000"
must_fail "a Dockerfile user other than the charts' is refused (canary)" "differs from USER 1000:1000" \
  dockerfile_user "$WORK/Dockerfile.uid1000"

step "the image's Node.js is the one CI and make run use, pinned by digest"
dockerfile_node() { # dockerfile_node DOCKERFILE
  local want; want=$(sed -nE 's/^NODE_VERSION=([0-9.]+)$/\1/p' "$ROOT/scripts/node-lts.sh")
  [[ -n $want ]] || { echo "    no NODE_VERSION in scripts/node-lts.sh"; return 1; }
  for arg in NODE_BUILD_IMAGE NODE_RUNTIME_IMAGE; do
    local img; img=$(sed -nE "s/^ARG $arg=//p" "$1")
    echo "    $arg=$img (scripts/node-lts.sh: $want)"
    [[ $img =~ ^node:${want//./\\.}-[a-z-]+@sha256:[0-9a-f]{64}$ ]] || { echo "    $arg is not node:$want-<variant>@sha256:<digest>"; return 1; }
  done
}
run "deploy/images/Dockerfile's Node images are scripts/node-lts.sh's version, by digest" dockerfile_node "$ROOT/deploy/images/Dockerfile"
sed -E 's/^ARG NODE_RUNTIME_IMAGE=.*/ARG NODE_RUNTIME_IMAGE=node:26-bookworm-slim/' "$ROOT/deploy/images/Dockerfile" >"$WORK/Dockerfile.unpinned"
must_fail "a base image by tag alone is refused (canary)" "NODE_RUNTIME_IMAGE is not node:" dockerfile_node "$WORK/Dockerfile.unpinned"

step "what the charts must refuse"
must_fail "gateway: ADMIN_TOKEN shorter than 16 characters" "ADMIN_TOKEN|minLength|at least 16|length must be" \
  render /dev/null "$CHARTS/gateway" gateway --set secretEnv.ADMIN_TOKEN.value=short
must_fail "service: writable root filesystem" "readOnlyRootFilesystem" \
  render /dev/null "$CHARTS/companies" companies --set containerSecurityContext.readOnlyRootFilesystem=false
must_fail "service: no resource limits" "limits" \
  render /dev/null "$CHARTS/companies" companies --set resources.limits=null
must_fail "service: runAsUser below 10000" "runAsUser|minimum|must be >= 10000" \
  render /dev/null "$CHARTS/companies" companies --set podSecurityContext.runAsUser=1000
must_fail "service: fsGroup below 10000" "fsGroup|minimum|must be >= 10000" \
  render /dev/null "$CHARTS/gateway" gateway --set podSecurityContext.fsGroup=1000
must_fail "service: no ephemeral-storage limit" "ephemeral-storage" \
  render /dev/null "$CHARTS/companies" companies --set resources.limits.ephemeral-storage=null
must_fail "service: MongoDB URL without a source" "MONGO_URL has no source" \
  render /dev/null "$CHARTS/companies" companies --set global.mongo.existingSecret=
# Billing refuses to start on a negative or missing rate; the chart refuses to render one.
must_fail "billing: a negative rate" "RATE_OUTBOUND_PER_MINUTE|does not match pattern" \
  render /dev/null "$CHARTS/billing" billing --set-string env.RATE_OUTBOUND_PER_MINUTE=-1
must_fail "billing: a missing rate" "RATE_INBOUND_PER_MINUTE" \
  render /dev/null "$CHARTS/billing" billing --set env.RATE_INBOUND_PER_MINUTE=null
# Leads calls billing (a live call lead's wallet must cover one call's hold): no address, no chart.
must_fail "leads: no BILLING_GRPC_ADDR" "BILLING_GRPC_ADDR" \
  render /dev/null "$CHARTS/leads" leads --set grpcClients.BILLING_GRPC_ADDR=null
# The default calling window is HH:MM-HH:MM (the end may be 24:00) or always, nothing else. An
# overnight window has the form and is refused by the service at start (start before end).
for w in always 00:00-23:59 08:00-24:00; do
  run "leads: calling window $w is accepted" render /dev/null "$CHARTS/leads" leads --set-string env.CALLING_WINDOW_DEFAULT=$w
done
for w in 8:00-21:00 24:00-08:00 08:60-21:00 08:00 08:00-21:00-22:00 Always never ""; do
  must_fail "leads: calling window '$w' is refused" "CALLING_WINDOW_DEFAULT|does not match pattern" \
    render /dev/null "$CHARTS/leads" leads --set-string "env.CALLING_WINDOW_DEFAULT=$w"
done
must_fail "leads: a message adapter other than record (messages are never sent live)" "MESSAGE_ADAPTER|must be one of|value must be" \
  render /dev/null "$CHARTS/leads" leads --set env.MESSAGE_ADAPTER=sms
must_fail "leads: a scheduler interval of 0" "SCHEDULER_INTERVAL_MS|does not match pattern" \
  render /dev/null "$CHARTS/leads" leads --set-string env.SCHEDULER_INTERVAL_MS=0
# No process serves Prometheus metrics (they push OTLP), so the charts have no metrics port and no
# ServiceMonitor, and refuse the options rather than ignore them.
must_fail "service: serviceMonitor.enabled is refused (no process serves Prometheus)" "additional properties|not allowed|additionalProperties" \
  render /dev/null "$CHARTS/companies" companies --set serviceMonitor.enabled=true
must_fail "service: metrics.enabled is refused" "additional properties|not allowed|additionalProperties" \
  render /dev/null "$CHARTS/gateway" gateway --set metrics.enabled=true
must_fail "umbrella: <service>.serviceMonitor.enabled is refused" "additional properties|not allowed|additionalProperties" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set companies.serviceMonitor.enabled=true
must_fail "umbrella: a misspelled service key is refused (compnies.enabled)" "compnies|additional properties|not allowed|additionalProperties" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set compnies.enabled=true
must_fail "umbrella: unknown global setting" "additional properties|not allowed|additionalProperties" \
  render /dev/null "$CHARTS/$UMBRELLA" voiceapi --set global.mongoUrl=x
cat >"$WORK/broken.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  replicas: "three"
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: broken}}
    spec:
      containers: [{name: c, image: x, imagePullPolicy: Sometimes, notAField: 1}]
EOF
must_fail "validator rejects a broken Deployment (canary)" "is not of type|Additional properties|not valid|is not one of" \
  check_py validate "$WORK/broken.yaml"

# ---------------------------------------------------------------------------------------- summary
printf '\n==> summary (%s, helm %s, kubernetes-validate %s, Kubernetes %s)\n' \
  "$(elapsed)" "$("$HELM" version --short)" "$KV_VERSION" "${KUBE_VERSIONS[*]}"
printf '%d passed, %d failed\n' "${#PASSED[@]}" "${#FAILED[@]}"
if (( ${#FAILED[@]} )); then
  printf '  failed: %s\n' "${FAILED[@]}"
  exit 1
fi
