{{/*
Helpers shared by every template of the library. All of them take the service chart's root
context (`.`), so `.Chart`, `.Release` and `.Values` are the service chart's.
*/}}

{{/* The component name: the chart name unless nameOverride is set. Used in labels. */}}
{{- define "common.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of every object of a service. Deliberately not prefixed with the release name: services are
released independently (one release per service, or all through the umbrella) and find each
other by stable DNS names (`companies:50061`). global.namePrefix prefixes all of them, for a
second copy of the platform in one namespace.
*/}}
{{- define "common.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s%s" (include "common.global" (list . "namePrefix")) (include "common.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Reads a top-level key of .Values.global, "" when global or the key is absent. */}}
{{- define "common.global" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $g := $root.Values.global | default dict -}}
{{- index $g $key | default "" -}}
{{- end -}}

{{- define "common.partOf" -}}
{{- include "common.global" (list . "partOf") | default "voiceapi" -}}
{{- end -}}

{{- define "common.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels that select the pods of one service (Deployment selector, Service, NetworkPolicy, PDB,
topology spread). Stable labels only: never the release name, chart version or image tag. A
Deployment's selector is immutable, so a service moved from the umbrella release to its own
release (docs/operations.md) must select its pods with exactly the same labels in both.
*/}}
{{- define "common.selectorLabels" -}}
app.kubernetes.io/name: {{ include "common.name" . }}
app.kubernetes.io/part-of: {{ include "common.partOf" . }}
{{- end -}}

{{- define "common.labels" -}}
helm.sh/chart: {{ include "common.chart" . }}
{{ include "common.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ regexReplaceAll "[^-A-Za-z0-9_.]" (include "common.imageTag" .) "-" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: {{ .Values.component | default (ternary "gateway" "grpc-service" (eq .Values.protocol "http")) }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Metadata block of a namespaced object: `{{ include "common.metadata" (list . "suffix") }}`. */}}
{{- define "common.metadata" -}}
{{- $root := index . 0 -}}
{{- $suffix := index . 1 -}}
name: {{ include "common.fullname" $root }}{{ $suffix }}
namespace: {{ $root.Release.Namespace }}
labels:
  {{- include "common.labels" $root | nindent 2 }}
{{- end -}}

{{- define "common.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "common.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Image tag: the service's own, else global.image.tag, else the chart's appVersion. */}}
{{- define "common.imageTag" -}}
{{- $g := (.Values.global | default dict).image | default dict -}}
{{- .Values.image.tag | default $g.tag | default .Chart.AppVersion | toString -}}
{{- end -}}

{{- define "common.image" -}}
{{- $g := (.Values.global | default dict).image | default dict -}}
{{- $registry := .Values.image.registry | default $g.registry | default "" | trimSuffix "/" -}}
{{- $repo := .Values.image.repository -}}
{{- if $registry }}{{ $repo = printf "%s/%s" $registry $repo }}{{ end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest -}}
{{- else if $g.requireDigest -}}
{{- fail (printf "%s: global.image.requireDigest is set, so image.digest (sha256:...) is required: production pins images by digest (docs/operations.md, Images)" .Chart.Name) -}}
{{- else -}}
{{- printf "%s:%s" $repo (include "common.imageTag" .) -}}
{{- end -}}
{{- end -}}

{{/* Name of the listening port: "grpc" or "http". */}}
{{- define "common.portName" -}}
{{- ternary "grpc" "http" (eq .Values.protocol "grpc") -}}
{{- end -}}

{{/*
Where each secret-backed variable comes from, as a YAML map
  ENV_NAME: {name: <Secret>, key: <key>, value: <only when the chart creates the Secret>}
Sources, per variable: an inline value (development), which this chart turns into its own Secret
`<fullname>`, else an existing Secret (production; the defaults name one). The service's
mongo.* wins over global.mongo.*.
Rendering fails with a clear message when a variable has neither, but for the object store's keys
(common.objectStoreKeys): without them the pod's identity answers.
*/}}
{{- define "common.secretRefs" -}}
{{- $fullname := include "common.fullname" . -}}
{{- $refs := dict -}}
{{- $m := .Values.mongo | default dict -}}
{{- $gm := (.Values.global | default dict).mongo | default dict -}}
{{- if $m.url -}}
{{- $_ := set $refs "MONGO_URL" (dict "name" $fullname "key" "mongo-url" "value" $m.url) -}}
{{- else if $m.existingSecret -}}
{{- $_ := set $refs "MONGO_URL" (dict "name" $m.existingSecret "key" ($m.existingSecretKey | default "mongo-url")) -}}
{{- else if $gm.url -}}
{{- $_ := set $refs "MONGO_URL" (dict "name" $fullname "key" "mongo-url" "value" $gm.url) -}}
{{- else if $gm.existingSecret -}}
{{- $_ := set $refs "MONGO_URL" (dict "name" $gm.existingSecret "key" ($gm.existingSecretKey | default "mongo-url")) -}}
{{- else -}}
{{- fail (printf "%s: MONGO_URL has no source: set global.mongo.existingSecret (a Secret holding the URL under key %q) or, for development, global.mongo.url" (include "common.name" .) "mongo-url") -}}
{{- end -}}
{{- with include "common.objectStoreKeys" . | fromYaml -}}
{{- $_ := set $refs "OBJECT_STORE_ACCESS_KEY_ID" .id -}}
{{- $_ := set $refs "OBJECT_STORE_SECRET_ACCESS_KEY" .secret -}}
{{- end -}}
{{- range $env, $s := .Values.secretEnv | default dict -}}
{{- $key := $s.key | default (lower $env | replace "_" "-") -}}
{{- if $s.value -}}
{{- $_ := set $refs $env (dict "name" $fullname "key" $key "value" $s.value) -}}
{{- else if $s.existingSecret -}}
{{- $_ := set $refs $env (dict "name" $s.existingSecret "key" $key) -}}
{{- else -}}
{{- fail (printf "%s: secretEnv.%s has no source: set secretEnv.%s.existingSecret (a Secret holding it under key %q) or, for development, secretEnv.%s.value" (include "common.name" $) $env $env $key $env) -}}
{{- end -}}
{{- end -}}
{{- toYaml $refs -}}
{{- end -}}

{{/*
The object store of a service that keeps objects (its values have objectStore.bucket), as a YAML
map of bucket, endpoint, region, forcePathStyle, createBucket: each the service's objectStore.*
when set, else global.objectStore.*. Empty for every other service: it gets no OBJECT_STORE_*.
*/}}
{{- define "common.objectStore" -}}
{{- $s := .Values.objectStore | default dict -}}
{{- if $s.bucket -}}
{{- $g := (.Values.global | default dict).objectStore | default dict -}}
{{- $o := dict "bucket" $s.bucket "endpoint" ($s.endpoint | default $g.endpoint | default "") "region" ($s.region | default $g.region | default "us-east-1") -}}
{{- range $k := list "forcePathStyle" "createBucket" -}}
{{- $v := index $s $k -}}
{{- if not (kindIs "bool" $v) }}{{ $v = index $g $k | default false }}{{ end -}}
{{- $_ := set $o $k $v -}}
{{- end -}}
{{- toYaml $o -}}
{{- end -}}
{{- end -}}

{{/*
Where the object store's keys come from, as {id: <ref>, secret: <ref>} (refs as in
common.secretRefs), or empty: no keys, so the AWS SDK's default chain answers with the pod's
identity (IRSA, EKS Pod Identity, the node's role). The service's objectStore.* wins over
global.objectStore.*; at each level inline keys (development: the chart's own Secret) before an
existing Secret.
*/}}
{{- define "common.objectStoreKeys" -}}
{{- $s := .Values.objectStore | default dict -}}
{{- if $s.bucket -}}
{{- $g := (.Values.global | default dict).objectStore | default dict -}}
{{- $fullname := include "common.fullname" . -}}
{{- $idKey := $s.accessKeyIdKey | default $g.accessKeyIdKey | default "access-key-id" -}}
{{- $secretKey := $s.secretAccessKeyKey | default $g.secretAccessKeyKey | default "secret-access-key" -}}
{{- $refs := dict -}}
{{- range $level := list (list "objectStore" $s) (list "global.objectStore" $g) -}}
{{- $at := index $level 0 -}}
{{- $v := index $level 1 -}}
{{- if $refs -}}
{{- else if or $v.accessKeyId $v.secretAccessKey -}}
{{- if not (and $v.accessKeyId $v.secretAccessKey) -}}
{{- fail (printf "%s: %s.accessKeyId and %s.secretAccessKey go together (development keys); production: %s.existingSecret, or neither for the pod's identity" (include "common.name" $) $at $at $at) -}}
{{- end -}}
{{- $_ := set $refs "id" (dict "name" $fullname "key" "object-store-access-key-id" "value" $v.accessKeyId) -}}
{{- $_ := set $refs "secret" (dict "name" $fullname "key" "object-store-secret-access-key" "value" $v.secretAccessKey) -}}
{{- else if $v.existingSecret -}}
{{- $_ := set $refs "id" (dict "name" $v.existingSecret "key" $idKey) -}}
{{- $_ := set $refs "secret" (dict "name" $v.existingSecret "key" $secretKey) -}}
{{- end -}}
{{- end -}}
{{- if $refs }}{{ toYaml $refs }}{{ end -}}
{{- end -}}
{{- end -}}

{{/* Kafka bootstrap brokers as the comma list the processes read. */}}
{{- define "common.kafkaBrokers" -}}
{{- $k := .Values.kafka | default dict -}}
{{- $gk := (.Values.global | default dict).kafka | default dict -}}
{{- $brokers := $k.brokers | default $gk.brokers -}}
{{- if not $brokers -}}
{{- fail (printf "%s: set global.kafka.brokers (list of host:port)" (include "common.name" .)) -}}
{{- end -}}
{{- if kindIs "string" $brokers }}{{ $brokers }}{{ else }}{{ join "," $brokers }}{{ end -}}
{{- end -}}

{{- define "common.otelEndpoint" -}}
{{- $o := .Values.otel | default dict -}}
{{- $go := (.Values.global | default dict).otel | default dict -}}
{{- $o.endpoint | default $go.endpoint | default "" -}}
{{- end -}}

{{/* host:port of another service of the platform, by its chart name. */}}
{{- define "common.serviceAddress" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- if $c.address -}}
{{- $c.address -}}
{{- else -}}
{{- $host := printf "%s%s" (include "common.global" (list $root "namePrefix")) $c.service -}}
{{- if $c.namespace }}{{ $host = printf "%s.%s.svc" $host $c.namespace }}{{ end -}}
{{- printf "%s:%v" $host $c.port -}}
{{- end -}}
{{- end -}}

{{/* Seconds the kubelet waits after SIGTERM: preStop pause + the process's drain + margin. */}}
{{- define "common.terminationGracePeriod" -}}
{{- if .Values.terminationGracePeriodSeconds -}}
{{- .Values.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add (int .Values.preStopSleepSeconds) (div (int .Values.shutdownGraceMs) 1000) 10 -}}
{{- end -}}
{{- end -}}
