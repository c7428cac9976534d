{{/*
Prometheus Operator ServiceMonitor. Rendered only when asked for (serviceMonitor.enabled), when
the process serves Prometheus metrics (metrics.enabled) and when the cluster has the CRD
(monitoring.coreos.com/v1 ServiceMonitor), so the chart installs cleanly on clusters without it.
The processes push OTLP to the collector by default; this is for scraping instead.
*/}}
{{- define "common.serviceMonitor" -}}
{{- if .Values.serviceMonitor.enabled -}}
{{- if not .Values.metrics.enabled }}{{ fail (printf "%s: serviceMonitor.enabled needs metrics.enabled (a Prometheus endpoint to scrape)" (include "common.name" .)) }}{{ end -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "common.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
    {{- with .Values.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "common.selectorLabels" . | nindent 6 }}
  endpoints:
    - port: metrics
      path: {{ .Values.metrics.path }}
      interval: {{ .Values.serviceMonitor.interval }}
      scrapeTimeout: {{ .Values.serviceMonitor.scrapeTimeout }}
{{- end -}}
{{- end -}}
{{- end -}}
