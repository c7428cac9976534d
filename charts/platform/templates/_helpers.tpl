{{/*
Helpers of the umbrella's own objects (the PrometheusRule and the dashboards' ConfigMaps): the
services' objects come from their charts, on the common library.
*/}}

{{/* Labels of an umbrella object: `include "platform.labels" (list . "dashboards")`. */}}
{{- define "platform.labels" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ printf "%s%s" ($root.Values.global.namePrefix | default "") $name | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/component: observability
app.kubernetes.io/part-of: {{ $root.Values.global.partOf | default "voiceapi" }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- end -}}
