# Over 300 lines because its checks share the manifests the charts render to, parsed once.
"""The chart checks' checker (scripts/chart-checks.sh): validates rendered manifests against the
Kubernetes schemas (and CRD kinds against their CRD) and asserts the platform's own rules.

Usage: check.py COMMAND RENDERED_YAML [ARGS...], one of
  validate PATH                                   every object, strict, for every CHECK_KUBE_VERSIONS
  rules PATH                                      hardened pods, secrets by reference, labels, selectors, NetworkPolicies
  expect PATH SPEC                                SPEC: comma list of [!]Kind[/name][=count]
  query PATH Kind/name:dotted.path                prints the value as JSON
  manifest PATH MANIFEST_JSON CHARTS_DIR UMBRELLA services/manifest.json against the charts
  same-selectors PATH OTHER_PATH SERVICE          one service's selectors identical in two renders
  observability PATH RULES_DIR DASHBOARDS_DIR LABEL VALUE   the umbrella's rules and dashboards
  object-store PATH EXPECTED_JSON                 every Deployment's OBJECT_STORE_* env, exactly as expected
  env PATH NAME EXPECTED_JSON                     every Deployment's variable NAME as expected, absent elsewhere
Prints problems indented by four spaces; exit 1 when there are any.

Environment: SKIP_API_GROUPS (comma list), CHECK_KUBE_VERSIONS (space list), CRD_FILES (colon list).
Run with the Python of the validator's venv (.tools/venv: PyYAML, kubernetes-validate); sockets are
disabled before kubernetes_validate is imported, so a schema fetched at run time fails the check.
"""
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

SECRET_ENV = {"MONGO_URL", "ADMIN_TOKEN", "KEY_HASH_PEPPER", "OBJECT_STORE_ACCESS_KEY_ID", "OBJECT_STORE_SECRET_ACCESS_KEY"}
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
            keys = {e["name"] for e in c.get("env", [])} & {"OBJECT_STORE_ACCESS_KEY_ID", "OBJECT_STORE_SECRET_ACCESS_KEY"}
            if len(keys) == 1: p.append(f"{ident(d)}: {keys.pop()} alone: the object store's keys go together, or neither (the pod's identity)")
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

def object_store(path, expected_json):
    """Every Deployment's OBJECT_STORE_* variables are exactly EXPECTED_JSON's for it ({} for a
    Deployment it does not name): {deployment: {NAME: value, or "secret:<Secret>/<key>" for a
    secretKeyRef}}. Only the services that keep objects get them; keys come from a Secret or not at all."""
    want, p, seen = json.loads(expected_json), [], {}
    for d in docs(path):
        if d["kind"] != "Deployment":
            continue
        name = d["metadata"]["name"]
        got = {}
        for e in d["spec"]["template"]["spec"]["containers"][0].get("env", []):
            if not e["name"].startswith("OBJECT_STORE_"):
                continue
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            got[e["name"]] = f"secret:{ref['name']}/{ref['key']}" if ref else e.get("value")
        seen[name] = got
        if got != want.get(name, {}):
            p.append(f"{ident(d)}: OBJECT_STORE_* is {json.dumps(got, sort_keys=True)}, expected {json.dumps(want.get(name, {}), sort_keys=True)}")
    p += [f"Deployment/{n} not rendered" for n in sorted(want.keys() - seen.keys())]
    if not p:
        for n in sorted(want):
            keys = want[n].get("OBJECT_STORE_ACCESS_KEY_ID")
            source = f"from {keys}" if keys else "none (the pod's identity)"
            print(f"    {n}: bucket {want[n].get('OBJECT_STORE_BUCKET')}, keys {source}")
        if seen.keys() - want.keys(): print(f"    no OBJECT_STORE_* on {', '.join(sorted(seen.keys() - want.keys()))}")
    return p

def env(path, name, expected_json):
    """Every Deployment's plain variable NAME is EXPECTED_JSON's value for it ({deployment: value}),
    and absent from every Deployment it does not name."""
    want, p, seen = json.loads(expected_json), [], set()
    for d in docs(path):
        if d["kind"] != "Deployment":
            continue
        dep = d["metadata"]["name"]
        seen.add(dep)
        got = [e.get("value") for e in d["spec"]["template"]["spec"]["containers"][0].get("env", []) if e["name"] == name]
        if dep in want and got != [want[dep]]:
            p.append(f"{ident(d)}: {name} is {json.dumps(got[0]) if got else 'absent'}, expected {json.dumps(want[dep])}")
        elif dep not in want and got:
            p.append(f"{ident(d)}: {name} is set ({json.dumps(got[0])}), expected absent")
    p += [f"Deployment/{n} not rendered" for n in sorted(want.keys() - seen)]
    if not p:
        print(f"    {name}: " + (", ".join(f"{n} {json.dumps(want[n])}" for n in sorted(want)) or "on none")
              + (f"; absent from {', '.join(sorted(seen - want.keys()))}" if seen - want.keys() else ""))
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
            "observability": lambda: observability(path, *rest), "object-store": lambda: object_store(path, *rest),
            "env": lambda: env(path, *rest)}[cmd]()
for x in problems:
    print(f"    {x}")
sys.exit(1 if problems else 0)
