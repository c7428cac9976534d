{{/*
Ingress allow-list of a service: its own port only from the platform components named in
networkPolicy.allowedCallers (matched by app.kubernetes.io/name + part-of, so it holds whether the
caller was installed by the umbrella or released on its own), the chart's own test pod (`helm
test`), plus any extra peers (for the gateway: the ingress controller). Anything else, other pods
included, is refused.
*/}}
{{- define "common.networkPolicy" -}}
{{- if .Values.networkPolicy.enabled -}}
{{- $partOf := include "common.partOf" . -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  {{- include "common.metadata" (list . "") | nindent 2 }}
spec:
  podSelector:
    matchLabels:
      {{- include "common.selectorLabels" . | nindent 6 }}
  policyTypes:
    - Ingress
  {{- if not (or .Values.networkPolicy.allowedCallers .Values.networkPolicy.extraIngressFrom .Values.tests.enabled) }}
  ingress: []
  {{- else }}
  ingress:
    - from:
        {{- range .Values.networkPolicy.allowedCallers }}
        - podSelector:
            matchLabels:
              app.kubernetes.io/name: {{ . }}
              app.kubernetes.io/part-of: {{ $partOf }}
        {{- end }}
        {{- if .Values.tests.enabled }}
        - podSelector:
            matchLabels:
              app.kubernetes.io/name: {{ include "common.name" . }}-test
              app.kubernetes.io/part-of: {{ $partOf }}
        {{- end }}
        {{- with .Values.networkPolicy.extraIngressFrom }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - port: {{ include "common.portName" . }}
          protocol: TCP
  {{- end }}
{{- end -}}
{{- end -}}
