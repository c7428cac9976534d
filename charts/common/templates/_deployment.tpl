{{/*
The container's environment. Order matters: variables referenced as $(NAME) come first.
Secrets are only ever referenced (secretKeyRef), never written into the pod spec.
*/}}
{{- define "common.env" -}}
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: K8S_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- range .Values.podNameEnv }}
- name: {{ . }}
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
{{- if eq .Values.protocol "grpc" }}
- name: GRPC_HOST
  value: "0.0.0.0"
- name: GRPC_PORT
  value: {{ .Values.port | quote }}
{{- else }}
- name: HOST
  value: "0.0.0.0"
- name: PORT
  value: {{ .Values.port | quote }}
{{- end }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: SHUTDOWN_GRACE_MS
  value: {{ .Values.shutdownGraceMs | quote }}
- name: MONGO_DB
  value: {{ .Values.mongo.database | quote }}
- name: KAFKA_BROKERS
  value: {{ include "common.kafkaBrokers" . | quote }}
{{- range $env, $c := .Values.grpcClients | default dict }}
- name: {{ $env }}
  value: {{ include "common.serviceAddress" (list $ $c) | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ include "common.name" . | quote }}
{{- with include "common.otelEndpoint" . }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: "http/protobuf"
{{- end }}
{{- $attrs := list (printf "service.namespace=%s" (include "common.partOf" .)) (printf "service.version=%s" (include "common.imageTag" .)) "k8s.namespace.name=$(K8S_NAMESPACE)" "k8s.pod.name=$(K8S_POD_NAME)" }}
{{- with include "common.global" (list . "environment") }}
{{- $attrs = append $attrs (printf "deployment.environment.name=%s" .) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $attrs | quote }}
{{- with include "common.objectStore" . | fromYaml }}
- name: OBJECT_STORE_BUCKET
  value: {{ .bucket | quote }}
- name: OBJECT_STORE_REGION
  value: {{ .region | quote }}
{{- with .endpoint }}
- name: OBJECT_STORE_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: OBJECT_STORE_FORCE_PATH_STYLE
  value: {{ .forcePathStyle | toString | quote }}
- name: OBJECT_STORE_CREATE_BUCKET
  value: {{ .createBucket | toString | quote }}
{{- end }}
{{- range $env, $v := .Values.env | default dict }}
- name: {{ $env }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- range $env, $r := include "common.secretRefs" . | fromYaml }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $r.name }}
      key: {{ $r.key }}
{{- end }}
{{- end -}}

{{/* Probe handler: native gRPC health checking for gRPC services, httpGet for HTTP ones. */}}
{{- define "common.probeHandler" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- if eq $root.Values.protocol "grpc" -}}
grpc:
  port: {{ $root.Values.port }}
{{- else -}}
httpGet:
  path: {{ $path }}
  port: http
{{- end -}}
{{- end -}}

{{- define "common.deployment" -}}
{{- $portName := include "common.portName" . -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  {{- include "common.metadata" (list . "") | nindent 2 }}
spec:
  {{- if not .Values.autoscaling.enabled }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "common.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "common.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- $secret := include "common.secret" . }}
      {{- if or $secret .Values.podAnnotations }}
      annotations:
        {{- if $secret }}
        {{- /* Rolls the pods when the chart-created Secret changes. */}}
        checksum/secret: {{ $secret | sha256sum }}
        {{- end }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "common.serviceAccountName" . }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: {{ include "common.terminationGracePeriod" . }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- if .Values.topologySpread.enabled }}
      topologySpreadConstraints:
        {{- range list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
        - topologyKey: {{ . }}
          maxSkew: 1
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "common.selectorLabels" $ | nindent 14 }}
        {{- end }}
      {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ include "common.name" . }}
          image: {{ include "common.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          securityContext:
            {{- toYaml .Values.containerSecurityContext | nindent 12 }}
          ports:
            - name: {{ $portName }}
              containerPort: {{ .Values.port }}
              protocol: TCP
          env:
            {{- include "common.env" . | nindent 12 }}
          startupProbe:
            {{- include "common.probeHandler" (list . .Values.probes.livenessPath) | nindent 12 }}
            {{- toYaml .Values.probes.startup | nindent 12 }}
          livenessProbe:
            {{- include "common.probeHandler" (list . .Values.probes.livenessPath) | nindent 12 }}
            {{- toYaml .Values.probes.liveness | nindent 12 }}
          readinessProbe:
            {{- include "common.probeHandler" (list . .Values.probes.readinessPath) | nindent 12 }}
            {{- toYaml .Values.probes.readiness | nindent 12 }}
          {{- if gt (int .Values.preStopSleepSeconds) 0 }}
          lifecycle:
            {{- /* Keeps serving while endpoints and load balancers drop the pod, then SIGTERM drains. */}}
            preStop:
              sleep:
                seconds: {{ .Values.preStopSleepSeconds }}
          {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end -}}
