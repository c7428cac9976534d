{{/*
The chart's own Secret, only for values given inline (development, CI). Production points every
secret at an existing Secret (existingSecret), managed outside the chart (sealed-secrets, external
secrets, vault...), and then this renders nothing.
*/}}
{{- define "common.secret" -}}
{{- $data := dict -}}
{{- range $env, $r := include "common.secretRefs" . | fromYaml -}}
{{- if hasKey $r "value" }}{{ $_ := set $data $r.key $r.value }}{{ end -}}
{{- end -}}
{{- if $data -}}
apiVersion: v1
kind: Secret
metadata:
  {{- include "common.metadata" (list . "") | nindent 2 }}
type: Opaque
data:
  {{- range $k, $v := $data }}
  {{ $k }}: {{ $v | toString | b64enc | quote }}
  {{- end }}
{{- end -}}
{{- end -}}
