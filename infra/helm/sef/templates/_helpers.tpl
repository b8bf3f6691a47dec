{{/* Names shared by the templates. */}}
{{- define "sef.fullname" -}}
{{- printf "%s-sef" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sef.serviceAccountName" -}}
{{- default (include "sef.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "sef.labels" -}}
app.kubernetes.io/name: sef
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
