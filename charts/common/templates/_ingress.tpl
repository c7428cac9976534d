{{- define "common.ingress" -}}
{{- if .Values.ingress.enabled -}}
{{- if ne .Values.protocol "http" }}{{ fail (printf "%s: ingress is for HTTP services only" (include "common.name" .)) }}{{ end -}}
{{- $fullname := include "common.fullname" . -}}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  {{- include "common.metadata" (list . "") | nindent 2 }}
  {{- with .Values.ingress.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with .Values.ingress.className }}
  ingressClassName: {{ . }}
  {{- end }}
  {{- with .Values.ingress.tls }}
  tls:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  rules:
    {{- range .Values.ingress.hosts }}
    - host: {{ .host | quote }}
      http:
        paths:
          {{- range .paths | default (list (dict "path" "/" "pathType" "Prefix")) }}
          - path: {{ .path }}
            pathType: {{ .pathType | default "Prefix" }}
            backend:
              service:
                name: {{ $fullname }}
                port:
                  name: http
          {{- end }}
    {{- end }}
{{- end -}}
{{- end -}}
