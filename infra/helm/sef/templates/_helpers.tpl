{{/* Names shared by the templates. */}}
{{- define "sef.fullname" -}}
{{- printf "%s-sef" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The chart's own service account when it creates one, else the named one (or the namespace's "default"). */}}
{{- define "sef.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sef.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "sef.labels" -}}
app.kubernetes.io/name: sef
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
