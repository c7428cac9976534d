{{/*
Everything a service needs, in one include. A service chart's only template is
  {{ include "common.all" . }}
Objects that are switched off render nothing and leave no empty document behind.
*/}}
{{- define "common.all" -}}
{{- $docs := list -}}
{{- range $t := list "common.serviceAccount" "common.secret" "common.service" "common.deployment" "common.hpa" "common.pdb" "common.networkPolicy" "common.ingress" "common.serviceMonitor" -}}
{{- $doc := include $t $ | trim -}}
{{- if $doc }}{{ $docs = append $docs $doc }}{{ end -}}
{{- end -}}
{{ join "\n---\n" $docs }}
{{- end -}}
