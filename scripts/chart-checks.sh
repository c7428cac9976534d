#!/usr/bin/env bash
# Offline checks of every Helm chart under charts/: lint, dependency build, render and validate the
# rendered objects against the Kubernetes schemas (the umbrella's PrometheusRule against the
# Prometheus operator's CRD), plus the platform's own rules (hardened pods, secrets only by
# reference, NetworkPolicies, labels), the umbrella's rules and dashboards, and that the generated
# dashboards are current. Needs no cluster and no network beyond the first run, which builds helm
# and fetches the CRD from the Go module proxy and installs the validator from PyPI into .tools/
# (repo-local, git-ignored); the dashboards check needs the npm dependencies (make install).
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
#   PROMETHEUS_OPERATOR_VERSION / PROMETHEUS_RULE_CRD   see scripts/prometheus-operator-crd.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHARTS=$ROOT/charts
TOOLS=$ROOT/.tools
KV_VERSION=${KV_VERSION:-1.37.0}
read -r -a KUBE_VERSIONS <<<"${KUBE_VERSIONS:-1.31.0 1.37.0}"
RENDER_KUBE_VERSION=${KUBE_VERSIONS[0]}
# API groups of CRD kinds (comma list) validated against no schema: reported as SKIP, never silently.
# None today: the only CRD kind rendered (the umbrella's PrometheusRule) is validated against its CRD
# (CRD_FILES below).
SKIP_API_GROUPS=${SKIP_API_GROUPS:-}
SYNC_SCHEMAS=0
for arg in "$@"; do
  case $arg in
    --sync-schemas) SYNC_SCHEMAS=1 ;;
    -h | --help) sed -n '2,19p' "${BASH_SOURCE[0]}"; exit 0 ;;
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

# The PrometheusRule CRD as the operator ships it (its Go module, through the Go module proxy).
install_crds() {
  PROMETHEUS_RULE_CRD=$(bash "$ROOT/scripts/prometheus-operator-crd.sh")
  echo "PrometheusRule CRD: $PROMETHEUS_RULE_CRD"
}

# Node.js for the dashboards generator (test/tools/dashboards.ts, through tsx).
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

# The checker itself: validates rendered manifests and asserts the platform's rules. Python from the
# validator's venv; sockets are disabled before kubernetes_validate is imported, so a schema fetched
# at run time would fail the check instead of passing quietly.
cat >"$WORK/check.py" <<'PY'
import glob, json, os, socket, sys

def _no_network(*_a, **_k):
    raise RuntimeError("network access attempted during validation")
socket.socket.connect = _no_network
socket.create_connection = _no_network

import yaml
import kubernetes_validate.utils as kv

SKIP_GROUPS = set(filter(None, os.environ["SKIP_API_GROUPS"].split(",")))
VERSIONS = os.environ["CHECK_KUBE_VERSIONS"].split()

def docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]

def ident(d):
    return f'{d["kind"]}/{d["metadata"]["name"]}'

# CRD kinds (CRD_FILES: CustomResourceDefinition YAML files, colon-separated) are validated against
# their CRD's openAPIV3Schema as the API server would (strict: unknown fields are errors, metadata as
# Kubernetes' ObjectMeta, list-map keys unique); CEL rules (x-kubernetes-validations) are not run.
CRD_FILES = list(filter(None, os.environ.get("CRD_FILES", "").split(":")))

def crd_json_schema(node):
    """A CRD's structural OpenAPI v3 schema as a JSON schema (draft 2020-12) the validator takes."""
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("properties", "patternProperties"):
            out[k] = {name: crd_json_schema(s) for name, s in v.items()}
        elif k in ("items", "additionalProperties", "not"):
            out[k] = crd_json_schema(v)
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [crd_json_schema(s) for s in v]
        elif k.startswith("x-kubernetes-") or k == "nullable":
            continue
        else:
            out[k] = v
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if "properties" in out and "additionalProperties" not in out and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out

def list_map_duplicates(obj, schema, where=""):
    """Items of an x-kubernetes-list-type: map list sharing their keys (the API server refuses them)."""
    p = []
    if not isinstance(schema, dict):
        return p
    if isinstance(obj, list):
        keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
        seen = set()
        for i, item in enumerate(obj):
            if keys and isinstance(item, dict):
                k = tuple(item.get(x) for x in keys)
                if k in seen: p.append(f"{where}.{i}: duplicate {', '.join(f'{a}={b}' for a, b in zip(keys, k))} (list-map keys {keys} must be unique)")
                seen.add(k)
            p += list_map_duplicates(item, schema.get("items"), f"{where}.{i}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            sub = (schema.get("properties") or {}).get(k, schema.get("additionalProperties"))
            p += list_map_duplicates(v, sub, f"{where}.{k}" if where else k)
    return p

def crds():
    """{(apiVersion, kind): (openAPIV3Schema, source)} of every version served by the CRD_FILES."""
    out = {}
    for f in CRD_FILES:
        for crd in docs(f):
            if crd.get("kind") != "CustomResourceDefinition": continue
            for v in crd["spec"]["versions"]:
                if v.get("served"):
                    out[(f'{crd["spec"]["group"]}/{v["name"]}', crd["spec"]["names"]["kind"])] = (v["schema"]["openAPIV3Schema"], f)
    return out

def validate_crd(d, schema, version):
    """Problems of one object against its CRD's schema, with ObjectMeta from the Kubernetes version's definitions."""
    from referencing import Registry, Resource
    import jsonschema
    kv_version = [x for x in kv.all_versions() if kv.major_minor(x) <= kv.major_minor(version)][-1]
    defs = kv.schema_contents(f"kubernetes-json-schema/v{kv_version}-local-strict/_definitions.json", version)
    js = crd_json_schema(schema)
    js["properties"]["metadata"] = {"$ref": "/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    js.update({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"https://kubernetes.io/api/crd-{d['kind'].lower()}.json"})
    registry = Resource.from_contents(defs) @ (Resource.from_contents(js) @ Registry())
    errors = sorted(jsonschema.validators.Draft202012Validator(js, registry=registry).iter_errors(d), key=lambda e: list(e.path))
    return [f"{'/'.join(str(x) for x in e.path)}: {e.message[:300]}" for e in errors] + list_map_duplicates(d, schema)

def validate(path):
    """Schema-validates every object (strict: unknown fields are errors) for every version."""
    problems, n, skipped, by_crd = [], 0, [], crds()
    for d in docs(path):
        group = d["apiVersion"].split("/")[0] if "/" in d["apiVersion"] else ""
        crd = by_crd.get((d["apiVersion"], d["kind"]))
        if crd:
            n += 1
            for v in VERSIONS:
                problems += [f"{ident(d)} @ k8s {v} (CRD {os.path.basename(crd[1])}): {x}" for x in validate_crd(d, crd[0], v)]
            continue
        if group in SKIP_GROUPS:
            skipped.append(f'{ident(d)} ({d["apiVersion"]})')
            continue
        n += 1
        for v in VERSIONS:
            try:
                kv.validate(d, v, strict=True)
            except kv.ValidationError as e:
                where = "/".join(str(p) for p in e.path)
                problems.append(f"{ident(d)} @ k8s {v}: {where}: {e.message}")
            except kv.SchemaNotFoundError as e:
                problems.append(f"{ident(d)} @ k8s {v}: {e.message}")
    for s in skipped:
        print(f"    SKIP {s}: CRD kind, no schema in kubernetes-validate")
    n_crd = sum(1 for d in docs(path) if (d["apiVersion"], d["kind"]) in by_crd)
    print(f"    {n} objects valid against Kubernetes {', '.join(VERSIONS)}" + (f" ({n_crd} of them against their CRD)" if n_crd else "") if not problems else "")
    return problems

SECRET_ENV = {"MONGO_URL", "ADMIN_TOKEN", "KEY_HASH_PEPPER"}
# The callers each internal service admits (chart names, sorted), whether or not their charts exist yet.
CALLERS = {"companies": ["agents", "gateway"], "knowledge": ["agents", "gateway"], "agents": ["gateway", "telephony"], "webhooks": ["gateway", "leads"], "billing": ["gateway", "knowledge", "leads", "telephony"],
           "leads": ["gateway", "telephony"]}
REQUIRED_LABELS = ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                   "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
                   "helm.sh/chart"]

# Labels a selector may use: stable across releases (never the release name, chart version or image
# tag), so a service moved from the umbrella to its own release keeps its immutable selector.
SELECTOR_LABELS = {"app.kubernetes.io/name", "app.kubernetes.io/part-of"}

def selectors(d):
    """Every label selector of an object that picks the service's pods, as {where: labels}."""
    spec, out = d.get("spec") or {}, {}
    if d["kind"] == "Service":
        out["spec.selector"] = spec.get("selector")
    if d["kind"] in ("Deployment", "PodDisruptionBudget"):
        out["spec.selector.matchLabels"] = (spec.get("selector") or {}).get("matchLabels")
    if d["kind"] == "NetworkPolicy":
        out["spec.podSelector.matchLabels"] = (spec.get("podSelector") or {}).get("matchLabels")
    if d["kind"] == "Deployment":
        for i, t in enumerate(spec["template"]["spec"].get("topologySpreadConstraints") or []):
            out[f"topologySpreadConstraints.{i}.labelSelector"] = (t.get("labelSelector") or {}).get("matchLabels")
    return out

def same_selectors(a, b, name):
    """The objects of service `name` select their pods identically in two renders (e.g. through the
    umbrella and as the service's own release)."""
    def sel(path):
        return {f"{d['kind']}/{d['metadata']['name']} {w}": v for d in docs(path)
                if d["metadata"]["name"] == name for w, v in selectors(d).items()}
    sa, sb = sel(a), sel(b)
    p = [f"{k}: {sa.get(k)} vs {sb.get(k)}" for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)]
    if not any(k.startswith("Deployment/") for k in sa):
        p.append(f"no Deployment/{name} in {os.path.basename(a)}")
    if not p:
        print(f"    {len(sa)} selectors identical, e.g. Deployment: {next(v for k, v in sa.items() if k.startswith('Deployment/'))}")
    return p

def rules(path):
    """The platform's own rules, on top of schema validity."""
    p = []
    objs = docs(path)
    for d in objs:
        labels = d["metadata"].get("labels") or {}
        for l in REQUIRED_LABELS:
            if not labels.get(l):
                p.append(f"{ident(d)}: label {l} missing")
        for where, sel in selectors(d).items():
            if set(sel or {}) != SELECTOR_LABELS:
                p.append(f"{ident(d)}: {where} must be exactly {sorted(SELECTOR_LABELS)} (stable across releases), got {sorted(sel or {})}")
        if d["kind"] == "Pod":
            # A chart's test pod (`helm test`): a hook, never selected by the service's own selectors,
            # as hardened as the service's pods.
            ann = d["metadata"].get("annotations") or {}
            if ann.get("helm.sh/hook") != "test": p.append(f"{ident(d)}: a Pod that is not a helm test hook")
            if not labels.get("app.kubernetes.io/name", "").endswith("-test"): p.append(f"{ident(d)}: its name label must end in -test (no Deployment, Service or PDB may select it)")
            spec = d["spec"]
            psc = spec.get("securityContext", {})
            if psc.get("runAsNonRoot") is not True or not isinstance(psc.get("runAsUser"), int) or psc["runAsUser"] < 10000: p.append(f"{ident(d)}: pod must run as a non-root uid of at least 10000")
            if spec.get("automountServiceAccountToken") is not False: p.append(f"{ident(d)}: service account token mounted")
            for c in spec["containers"]:
                sc = c.get("securityContext", {})
                if sc.get("readOnlyRootFilesystem") is not True or sc.get("allowPrivilegeEscalation") is not False or "ALL" not in (sc.get("capabilities") or {}).get("drop", []):
                    p.append(f"{ident(d)}: container not hardened (read-only root, no privilege escalation, every capability dropped)")
            continue
        if d["kind"] != "Deployment":
            continue
        spec = d["spec"]["template"]["spec"]
        psc = spec.get("securityContext", {})
        if psc.get("runAsNonRoot") is not True: p.append(f"{ident(d)}: pod runAsNonRoot is not true")
        for k in ("runAsUser", "runAsGroup", "fsGroup"):
            if not isinstance(psc.get(k), int) or psc[k] < 10000: p.append(f"{ident(d)}: pod {k} is {psc.get(k)}, must be at least 10000")
        if (psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault": p.append(f"{ident(d)}: seccomp is not RuntimeDefault")
        if spec.get("automountServiceAccountToken") is not False: p.append(f"{ident(d)}: service account token mounted")
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec["containers"]:
            sc = c.get("securityContext", {})
            if sc.get("readOnlyRootFilesystem") is not True: p.append(f"{ident(d)}: root filesystem writable")
            if sc.get("allowPrivilegeEscalation") is not False: p.append(f"{ident(d)}: privilege escalation allowed")
            if "ALL" not in (sc.get("capabilities") or {}).get("drop", []): p.append(f"{ident(d)}: capabilities not dropped")
            # registry + repository joined without a repeated path segment (registry.example.com/voiceapi
            # + voiceapi/companies once gave .../voiceapi/voiceapi/companies).
            segs = c["image"].split("@")[0].rsplit(":", 1)[0].split("/") if ":" in c["image"].split("/")[-1] else c["image"].split("@")[0].split("/")
            if any(a == b for a, b in zip(segs, segs[1:])): p.append(f"{ident(d)}: image {c['image']} repeats a path segment")
            res = c.get("resources", {})
            for kind in ("requests", "limits"):
                for r in ("cpu", "memory", "ephemeral-storage"):
                    if r not in res.get(kind, {}): p.append(f"{ident(d)}: resources.{kind}.{r} missing")
            tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
            if not tmp or "emptyDir" not in vols.get(tmp[0]["name"], {}): p.append(f"{ident(d)}: no emptyDir on /tmp")
            ports = {pt["name"] for pt in c.get("ports", [])}
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                pr = c.get(probe)
                if not pr: p.append(f"{ident(d)}: {probe} missing"); continue
                if "grpc" in ports and "grpc" not in pr: p.append(f"{ident(d)}: {probe} is not a native gRPC probe")
                if "http" in ports and "httpGet" not in pr: p.append(f"{ident(d)}: {probe} is not httpGet")
            for e in c.get("env", []):
                if e["name"] in SECRET_ENV and "secretKeyRef" not in (e.get("valueFrom") or {}):
                    p.append(f"{ident(d)}: {e['name']} is not read from a Secret")
                if e["name"] == "INSTANCE_ID" and (e.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") != "metadata.name":
                    p.append(f"{ident(d)}: INSTANCE_ID is not the pod name")
    # Each service accepts traffic only from its known callers.
    for d in objs:
        if d["kind"] != "NetworkPolicy":
            continue
        name = d["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
        peers = [f for rule in d["spec"].get("ingress") or [] for f in rule.get("from", [])]
        callers = sorted({(f.get("podSelector") or {}).get("matchLabels", {}).get("app.kubernetes.io/name")
                          for f in peers if "podSelector" in f and "namespaceSelector" not in f})
        # The chart's own test pod (`helm test`) is admitted when the chart renders one, and only then.
        has_test = any(o["kind"] == "Pod" and (o["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == f"{name}-test" for o in objs)
        if (f"{name}-test" in callers) != has_test:
            p.append(f"{ident(d)}: {name}-test (the chart's test pod) must be admitted exactly when the chart has a test, has test: {has_test}, admitted: {callers}")
        callers = [c for c in callers if c != f"{name}-test"]
        if name in CALLERS and callers != CALLERS[name]:
            p.append(f"{ident(d)}: {name} must accept only {CALLERS[name]}, got {callers}")
        if not peers and d["spec"].get("ingress") != []:
            p.append(f"{ident(d)}: ingress rule without peers would allow everyone")
    return p

def expect(path, spec):
    """spec: comma list of Kind[/name][=count] that must (or, with !, must not) be present."""
    objs = docs(path)
    p = []
    for item in filter(None, spec.split(",")):
        neg = item.startswith("!")
        item = item.lstrip("!")
        want, _, count = item.partition("=")
        kind, _, name = want.partition("/")
        found = [d for d in objs if d["kind"] == kind and (not name or d["metadata"]["name"] == name)]
        if neg and found: p.append(f"unexpected {want}")
        if not neg and not found: p.append(f"missing {want}")
        if count and len(found) != int(count): p.append(f"{want}: {len(found)} found, {count} expected")
    return p

def query(path, expr):
    """Prints a value from the rendered objects: Kind/name:dotted.path"""
    target, _, dotted = expr.partition(":")
    kind, _, name = target.partition("/")
    for d in docs(path):
        if d["kind"] == kind and d["metadata"]["name"] == name:
            v = d
            for k in dotted.split("."):
                v = v[int(k)] if isinstance(v, list) else v.get(k)
            print(json.dumps(v)); return []
    return [f"{target} not found"]

def manifest(path, manifest_path, charts_dir, umbrella):
    """services/manifest.json against the charts: every process has its chart, listed in the umbrella;
    the gateway is given every gRPC service's address; no chart lacks a process."""
    p = []
    def yml(f):
        with open(f) as fh:
            return yaml.safe_load(fh) or {}
    procs = json.load(open(manifest_path))["processes"]
    deps = {d["name"]: d for d in yml(f"{charts_dir}/{umbrella}/Chart.yaml").get("dependencies") or []}
    umbrella_values = yml(f"{charts_dir}/{umbrella}/values.yaml")
    umbrella_schema_keys = set(json.load(open(f"{charts_dir}/{umbrella}/values.schema.json")).get("properties") or {})
    http = [x for x in procs if x.get("protocol") == "http"]
    gw_chart = http[0]["chart"] if len(http) == 1 else None
    gw_values = yml(f"{charts_dir}/{gw_chart}/values.yaml") if gw_chart and os.path.exists(f"{charts_dir}/{gw_chart}/values.yaml") else {}
    clients = gw_values.get("grpcClients") or {}
    rendered = {d["metadata"]["name"]: d for d in docs(path) if d["kind"] == "Deployment"}
    gw_env = {}
    if gw_chart in rendered:
        gw_env = {e["name"]: e.get("value") for c in rendered[gw_chart]["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    for x in procs:
        name, chart = x.get("name"), x.get("chart")
        where = f"manifest process {name}"
        if not os.path.exists(f"{charts_dir}/{chart}/Chart.yaml"):
            p.append(f"{where}: no chart at charts/{chart} (copy charts/companies, see docs/decisions/0010-helm-charts.md)")
            continue
        meta, values = yml(f"{charts_dir}/{chart}/Chart.yaml"), yml(f"{charts_dir}/{chart}/values.yaml")
        if meta.get("name") != chart: p.append(f"{where}: charts/{chart}/Chart.yaml is named {meta.get('name')!r}")
        for key, want in (("protocol", x.get("protocol")), ("port", x.get("port"))):
            if values.get(key) != want: p.append(f"{where}: charts/{chart} values {key} is {values.get(key)!r}, the manifest says {want!r}")
        if (values.get("mongo") or {}).get("database") != x.get("mongoDb"):
            p.append(f"{where}: charts/{chart} values mongo.database is {(values.get('mongo') or {}).get('database')!r}, the manifest says {x.get('mongoDb')!r}")
        dep = deps.get(chart)
        if not dep:
            p.append(f"{where}: charts/{umbrella}/Chart.yaml has no dependency {chart}")
        else:
            if dep.get("repository") != f"file://../{chart}": p.append(f"{where}: umbrella dependency {chart} is not file://../{chart}")
            if dep.get("condition") != f"{chart}.enabled": p.append(f"{where}: umbrella dependency {chart} lacks condition {chart}.enabled")
        if chart not in umbrella_schema_keys:
            p.append(f"{where}: charts/{umbrella}/values.schema.json has no top-level property {chart} (it refuses unknown keys)")
        if (umbrella_values.get(chart) or {}).get("enabled") is not True:
            p.append(f"{where}: charts/{umbrella}/values.yaml does not set {chart}.enabled: true")
        if chart not in rendered:
            p.append(f"{where}: the umbrella with default values renders no Deployment/{chart}")
        addr = x.get("addressEnv")
        if x.get("protocol") == "grpc" and gw_chart:
            want = {"service": chart, "port": x.get("port")}
            got = clients.get(addr)
            if got is None:
                p.append(f"{where}: charts/{gw_chart} values grpcClients has no {addr} (the gateway reads its address there)")
            elif {k: got.get(k) for k in want} != want:
                p.append(f"{where}: charts/{gw_chart} grpcClients.{addr} is {got}, expected {want}")
            if gw_env.get(addr) != f"{chart}:{x.get('port')}":
                p.append(f"{where}: rendered Deployment/{gw_chart} sets {addr}={gw_env.get(addr)!r}, expected {chart}:{x.get('port')!r}")
    known = {x.get("chart") for x in procs}
    for chart_yaml in sorted(glob.glob(f"{charts_dir}/*/Chart.yaml")):
        c = os.path.basename(os.path.dirname(chart_yaml))
        meta = yml(chart_yaml)
        if c != umbrella and meta.get("type") != "library" and c not in known:
            p.append(f"charts/{c}: no process in {os.path.basename(manifest_path)} (add its entry, or remove the chart)")
    addrs = {x.get("addressEnv") for x in procs}
    for env in clients:
        if env not in addrs: p.append(f"charts/{gw_chart} grpcClients.{env}: no manifest process has addressEnv {env}")
    # A service that calls another (leads calls billing) is given its address the same way.
    by_addr = {x.get("addressEnv"): x for x in procs if x.get("protocol") == "grpc"}
    for x in procs:
        chart = x.get("chart")
        if chart == gw_chart or not os.path.exists(f"{charts_dir}/{chart}/values.yaml"):
            continue
        env_of = {e["name"]: e.get("value") for c in rendered[chart]["spec"]["template"]["spec"]["containers"]
                  for e in c.get("env", [])} if chart in rendered else {}
        for env, got in (yml(f"{charts_dir}/{chart}/values.yaml").get("grpcClients") or {}).items():
            callee = by_addr.get(env)
            if callee is None:
                p.append(f"charts/{chart} grpcClients.{env}: no manifest gRPC process has addressEnv {env}"); continue
            want = {"service": callee.get("chart"), "port": callee.get("port")}
            if {k: (got or {}).get(k) for k in want} != want:
                p.append(f"charts/{chart} grpcClients.{env} is {got}, expected {want}")
            if chart in rendered and env_of.get(env) != f"{want['service']}:{want['port']}":
                p.append(f"rendered Deployment/{chart} sets {env}={env_of.get(env)!r}, expected {want['service']}:{want['port']!r}")
    if not p:
        print(f"    {len(procs)} processes ({', '.join(x['name'] for x in procs)}): chart, umbrella entry and gateway address each;"
              f" the addresses the services are given match it")
    return p

def observability(path, rules_dir, dashboards_dir, label, value):
    """The umbrella's rules and dashboards as rendered: one PrometheusRule holding every group of
    rules_dir/*.rules.yaml as written there (group names unique across the files), and one ConfigMap
    per dashboards_dir/*.json, labelled label=value for Grafana's sidecar, whose JSON parses, is the
    file's, fits a ConfigMap and uses no template variable but the data source."""
    import re
    p, objs = [], docs(path)
    want = {}
    for f in sorted(glob.glob(f"{rules_dir}/*.rules.yaml")):
        for g in (yaml.safe_load(open(f)) or {}).get("groups") or []:
            if g.get("name") in want: p.append(f"group {g.get('name')} is in {want[g['name']][0]} and {os.path.basename(f)}: group names must be unique")
            want[g.get("name")] = (os.path.basename(f), g)
    if not want: p.append(f"no rule groups in {rules_dir}/*.rules.yaml")
    rules = [d for d in objs if d["kind"] == "PrometheusRule"]
    if len(rules) != 1:
        p.append(f"{len(rules)} PrometheusRule objects rendered, 1 expected")
    else:
        got = {g.get("name"): g for g in rules[0]["spec"].get("groups") or []}
        for name, (f, g) in want.items():
            if name not in got: p.append(f"group {name} of {f} is missing from {ident(rules[0])}")
            elif got[name] != g: p.append(f"group {name} of {f} is not as written there in {ident(rules[0])}")
        for name in sorted(got.keys() - want.keys()): p.append(f"{ident(rules[0])} has group {name}, which no rules file has")
    files = {os.path.basename(f): f for f in sorted(glob.glob(f"{dashboards_dir}/*.json"))}
    maps = {k: (d, v) for d in objs if d["kind"] == "ConfigMap" and (d["metadata"].get("labels") or {}).get(label) == value
            for k, v in (d.get("data") or {}).items()}
    uids = {}
    for name, f in files.items():
        if name not in maps: p.append(f"dashboard {name}: no ConfigMap labelled {label}={value} holds it"); continue
        d, text = maps[name]
        try:
            board = json.loads(text)
        except ValueError as e:
            p.append(f"{ident(d)}: {name} does not parse as JSON: {e}"); continue
        if board != json.load(open(f)): p.append(f"{ident(d)}: {name} is not the chart's file")
        size = sum(len(k) + len(v.encode()) for k, v in d["data"].items())
        if size > 1024 * 1024 - 4096: p.append(f"{ident(d)}: {size} bytes, too close to a ConfigMap's 1 MiB")
        other = sorted(set(re.findall(r"\$\{?(\w+)", text)) - {"datasource", "__rate_interval"})
        if other: p.append(f"{ident(d)}: {name} uses template variables other than the data source: {other}")
        uid = board.get("uid")
        if not uid or uid in uids: p.append(f"{ident(d)}: {name} has uid {uid!r}, {'also ' + uids[uid] + ' has it' if uid in uids else 'none'}")
        uids[uid] = name
    for name in sorted(maps.keys() - files.keys()): p.append(f"{ident(maps[name][0])} holds {name}, which the chart has no file for")
    if not p:
        print(f"    PrometheusRule with {len(want)} groups ({', '.join(sorted(want))}); {len(files)} dashboard ConfigMaps labelled {label}={value}, JSON parsed")
    return p

cmd, path, *rest = sys.argv[1:]
problems = {"validate": lambda: validate(path), "rules": lambda: rules(path),
            "expect": lambda: expect(path, rest[0]), "query": lambda: query(path, rest[0]),
            "manifest": lambda: manifest(path, *rest), "same-selectors": lambda: same_selectors(path, *rest),
            "observability": lambda: observability(path, *rest)}[cmd]()
for x in problems:
    print(f"    {x}")
sys.exit(1 if problems else 0)
PY
export SKIP_API_GROUPS CHECK_KUBE_VERSIONS="${KUBE_VERSIONS[*]}" CRD_FILES=$PROMETHEUS_RULE_CRD
check_py() { "$PY" "$WORK/check.py" "$@"; }

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
vendored_current() {
  "$PY" - "$SRC_CHARTS" "$CHARTS" <<'PY'
import glob, hashlib, os, sys, tarfile
src, built = sys.argv[1:]
def members(path):
    with tarfile.open(path) as t:
        out = {}
        for m in t.getmembers():
            if not m.isfile():
                continue
            data = t.extractfile(m).read()
            if m.name.endswith(".tgz"):  # nested dependency: compare its contents, not its bytes
                import io
                with tarfile.open(fileobj=io.BytesIO(data)) as n:
                    data = repr(sorted((x.name, hashlib.sha256(n.extractfile(x).read()).hexdigest())
                                       for x in n.getmembers() if x.isfile())).encode()
            out[m.name] = hashlib.sha256(data).hexdigest()
        return out
stale, n = [], 0
for archive in sorted(glob.glob(f"{src}/*/charts/*.tgz")):
    rel = os.path.relpath(archive, src)
    fresh = os.path.join(built, rel)
    n += 1
    if not os.path.exists(fresh) or members(archive) != members(fresh):
        stale.append(rel)
for s in stale:
    print(f"    charts/{s} is stale: run helm dependency build on its chart, or stop tracking it")
print(f"    {n} vendored archive(s) in the work tree, {n - len(stale)} current")
sys.exit(1 if stale else 0)
PY
}
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
  "Deployment=${#SERVICES[@]},Service=${#SERVICES[@]},NetworkPolicy=${#SERVICES[@]},PodDisruptionBudget=${#SERVICES[@]},!Secret,!Ingress,!HorizontalPodAutoscaler,!PrometheusRule,!ConfigMap"

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

step "umbrella: Prometheus rules and Grafana dashboards (observability.rules, observability.dashboards)"
# The PrometheusRule is validated against the operator's CRD (render's validate step), holds every
# group of files/prometheus/*.rules.yaml as written there; one ConfigMap per dashboard, its JSON
# parsed; the committed dashboards are what test/tools/dashboards.ts writes (decision 0129).
RULES_DIR=$CHARTS/$UMBRELLA/files/prometheus DASH_DIR=$CHARTS/$UMBRELLA/files/dashboards
DASHBOARDS=("$DASH_DIR"/*.json)
OBS=(--set observability.rules.enabled=true --set observability.dashboards.enabled=true --set observability.rules.labels.release=kube-prometheus-stack)
dashboards_check() { # dashboards_check DIR: the generator's --check against DIR
  [[ -e $ROOT/node_modules/tsx/package.json ]] || { echo "    no node_modules/tsx: install the npm dependencies first (make install)"; return 1; }
  (cd "$ROOT" && node --import tsx test/tools/dashboards.ts --check --dir "$1") | sed 's/^/    /'
  return "${PIPESTATUS[0]}"
}
run "dashboards: charts/platform/files/dashboards is what test/tools/dashboards.ts writes" dashboards_check "$SRC_CHARTS/$UMBRELLA/files/dashboards"
cp -R "$SRC_CHARTS/$UMBRELLA/files/dashboards" "$WORK/dashboards-edited"
sed -i 's/"title": "Heap used"/"title": "Heap used (edited by hand)"/' "$WORK/dashboards-edited/voiceapi-billing.json"
must_fail "dashboards: a dashboard edited by hand is refused (canary)" "voiceapi-billing.json: differs" dashboards_check "$WORK/dashboards-edited"
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
  <(render /dev/stdout "$CHARTS/$UMBRELLA" voiceapi --set observability.rules.enabled=true) "PrometheusRule=1,!ConfigMap"
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
sed -i 's/job=\\"voiceapi\/billing\\"/job=\\"$job\\"/' "$c/files/dashboards/voiceapi-billing.json"
render "$WORK/variable.yaml" "$c" voiceapi "${OBS[@]}"
must_fail "a dashboard query with a template variable other than the data source is refused (canary)" "template variables other than the data source: \['job'\]" \
  check_py observability "$WORK/variable.yaml" "$c/files/prometheus" "$c/files/dashboards" grafana_dashboard 1
render "$WORK/other-label.yaml" "$CHARTS/$UMBRELLA" voiceapi "${OBS[@]}" --set observability.dashboards.label=dashboards
must_fail "dashboards under another label than the sidecar's are refused (canary)" "no ConfigMap labelled grafana_dashboard=1" \
  check_py observability "$WORK/other-label.yaml" "$RULES_DIR" "$DASH_DIR" grafana_dashboard 1

step "umbrella: values-production.yaml"
rendered "platform-production" "$CHARTS/$UMBRELLA" voiceapi "${PROD[@]}"
run "platform-production shape (HPA, PDB, TLS ingress, no chart-made Secret, rules and dashboards)" check_py expect "$LAST_RENDER" \
  "HorizontalPodAutoscaler/gateway,PodDisruptionBudget/gateway,Ingress/gateway,HorizontalPodAutoscaler/companies,HorizontalPodAutoscaler/billing,HorizontalPodAutoscaler/leads,PodDisruptionBudget/leads,!Secret,PrometheusRule/voiceapi,ConfigMap=${#DASHBOARDS[@]}"
run "platform-production: rules and dashboards as the files have them" \
  check_py observability "$LAST_RENDER" "$RULES_DIR" "$DASH_DIR" grafana_dashboard 1
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

step "the image's user is the charts' runAsUser/runAsGroup/fsGroup"
dockerfile_user() { # dockerfile_user DOCKERFILE
  local user; user=$(grep -E '^USER ' "$1" | tail -n 1 | awk '{print $2}')
  for c in "${SERVICES[@]}"; do
    local want; want=$(check_py query "$WORK/render.$c-alone.yaml" "Deployment/$c:spec.template.spec.securityContext" |
      "$PY" -c 'import json,sys; s=json.load(sys.stdin); print("%s:%s %s" % (s["runAsUser"], s["runAsGroup"], s["fsGroup"]))')
    echo "    deploy/Dockerfile USER $user; $c runs as ${want% *} with fsGroup ${want#* }"
    [[ $user == "${want% *}" && $user == "${want#* }:${want#* }" ]] || { echo "    $c: differs from USER $user"; return 1; }
  done
}
run "deploy/Dockerfile USER matches every chart's pod security context" dockerfile_user "$ROOT/deploy/Dockerfile"
sed -E 's/^USER .*/USER 1000:1000/' "$ROOT/deploy/Dockerfile" >"$WORK/Dockerfile.uid1000"
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
run "deploy/Dockerfile's Node images are scripts/node-lts.sh's version, by digest" dockerfile_node "$ROOT/deploy/Dockerfile"
sed -E 's/^ARG NODE_RUNTIME_IMAGE=.*/ARG NODE_RUNTIME_IMAGE=node:26-bookworm-slim/' "$ROOT/deploy/Dockerfile" >"$WORK/Dockerfile.unpinned"
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
