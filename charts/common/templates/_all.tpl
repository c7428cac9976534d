{{/*
Everything a service needs, in one include. A service chart's only template is
  {{ include "common.all" . }}
Objects that are switched off render nothing and leave no empty document behind.
*/}}
{{- define "common.all" -}}
{{- if and (include "common.global" (list . "namePrefix")) (eq (include "common.partOf" .) "voiceapi") -}}
{{- fail (printf "%s: global.namePrefix (a second copy of the platform in one namespace) needs its own global.partOf: pods are selected by app.kubernetes.io/name and app.kubernetes.io/part-of, so two copies with the same part-of would select each other's pods" (include "common.name" .)) -}}
{{- end -}}
{{- $docs := list -}}
{{- range $t := list "common.serviceAccount" "common.secret" "common.service" "common.deployment" "common.hpa" "common.pdb" "common.networkPolicy" "common.ingress" "common.test" -}}
{{- $doc := include $t $ | trim -}}
{{- if $doc }}{{ $docs = append $docs $doc }}{{ end -}}
{{- end -}}
{{ join "\n---\n" $docs }}
{{- end -}}
