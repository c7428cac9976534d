{{- define "common.service" -}}
apiVersion: v1
kind: Service
metadata:
  {{- include "common.metadata" (list . "") | nindent 2 }}
  {{- with .Values.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .Values.service.type }}
  selector:
    {{- include "common.selectorLabels" . | nindent 4 }}
  ports:
    - name: {{ include "common.portName" . }}
      port: {{ .Values.port }}
      targetPort: {{ include "common.portName" . }}
      protocol: TCP
      {{- /* h2c: cleartext HTTP/2, what gRPC speaks inside the cluster. */}}
      appProtocol: {{ ternary "kubernetes.io/h2c" "http" (eq .Values.protocol "grpc") }}
    {{- if .Values.metrics.enabled }}
    - name: metrics
      port: {{ .Values.metrics.port }}
      targetPort: metrics
      protocol: TCP
      appProtocol: http
    {{- end }}
{{- end -}}
