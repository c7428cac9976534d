{{/*
The chart's test (`helm test <release>`): a pod from the service's own image, as hardened as the
service's pods, that asks the service through its Service name whether it answers: grpc.health.v1
Check for gRPC services, GET readinessPath for HTTP ones (the kit's probe.js, in every image). Its
name label is "<name>-test", never the service's own, so no Deployment, Service or PDB selects it;
the service's NetworkPolicy admits it on the service port.
*/}}
{{- define "common.test" -}}
{{- if .Values.tests.enabled -}}
{{- $fullname := include "common.fullname" . -}}
apiVersion: v1
kind: Pod
metadata:
  name: {{ $fullname }}-test
  namespace: {{ .Release.Namespace }}
  labels:
    helm.sh/chart: {{ include "common.chart" . }}
    app.kubernetes.io/name: {{ include "common.name" . }}-test
    app.kubernetes.io/part-of: {{ include "common.partOf" . }}
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/version: {{ regexReplaceAll "[^-A-Za-z0-9_.]" (include "common.imageTag" .) "-" | trunc 63 | trimSuffix "-" | quote }}
    app.kubernetes.io/component: test
    app.kubernetes.io/managed-by: {{ .Release.Service }}
  annotations:
    helm.sh/hook: test
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: probe
      image: {{ include "common.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      securityContext:
        {{- toYaml .Values.containerSecurityContext | nindent 8 }}
      {{- if eq .Values.protocol "grpc" }}
      command: ["node", "/app/node_modules/@voiceapi/kit/dist/probe.js", "grpc", "{{ $fullname }}:{{ .Values.port }}"]
      {{- else }}
      command: ["node", "/app/node_modules/@voiceapi/kit/dist/probe.js", "http", "http://{{ $fullname }}:{{ .Values.port }}{{ .Values.probes.readinessPath }}"]
      {{- end }}
      resources:
        {{- toYaml .Values.tests.resources | nindent 8 }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
{{- end -}}
