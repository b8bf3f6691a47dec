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

{{/* "true" when the agent serves metrics where the cluster reaches them: the node's IP, or a non-loopback config.metrics.host. */}}
{{- define "sef.metricsReachable" -}}
{{- if and .Values.config.metrics.enabled (or (eq .Values.metrics.listenOn "nodeIP") (not (has .Values.config.metrics.host (list "127.0.0.1" "localhost" "::1")))) -}}
true
{{- end -}}
{{- end -}}

{{/* The labels of the headless metrics Service, which the ServiceMonitor selects. */}}
{{- define "sef.metricsServiceLabels" -}}
{{ include "sef.labels" . }}
app.kubernetes.io/component: metrics
{{- end -}}
