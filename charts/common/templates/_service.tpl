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
  {{- if and (eq .Values.protocol "grpc") (eq .Values.service.type "ClusterIP") }}
  {{- /* Headless: DNS answers with every pod, and the callers' round_robin gRPC balancing spreads
         calls over them (a ClusterIP would pin each long-lived HTTP/2 connection to one pod). */}}
  clusterIP: None
  {{- end }}
  selector:
    {{- include "common.selectorLabels" . | nindent 4 }}
  ports:
    - name: {{ include "common.portName" . }}
      port: {{ .Values.port }}
      targetPort: {{ include "common.portName" . }}
      protocol: TCP
      {{- /* h2c: cleartext HTTP/2, what gRPC speaks inside the cluster. */}}
      appProtocol: {{ ternary "kubernetes.io/h2c" "http" (eq .Values.protocol "grpc") }}
{{- end -}}
