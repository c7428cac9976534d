{{- define "common.pdb" -}}
{{- if .Values.pdb.enabled -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  {{- include "common.metadata" (list . "") | nindent 2 }}
spec:
  selector:
    matchLabels:
      {{- include "common.selectorLabels" . | nindent 6 }}
  {{- if not (kindIs "invalid" .Values.pdb.minAvailable) }}
  minAvailable: {{ .Values.pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .Values.pdb.maxUnavailable | default 1 }}
  {{- end }}
  {{- /* A crash-looping pod must not block node drains. */}}
  unhealthyPodEvictionPolicy: AlwaysAllow
{{- end -}}
{{- end -}}
