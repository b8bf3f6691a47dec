{{/* Names shared by the templates. */}}
{{- define "sef.fullname" -}}
{{- printf "%s-sef" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The chart's own service account when it creates one, else the named one. Never the namespace's "default":
every pod of the namespace that names no account runs as it, and would get sef's rights. */}}
{{- define "sef.serviceAccountName" -}}
{{- $name := ternary (default (include "sef.fullname" .) .Values.serviceAccount.name) .Values.serviceAccount.name .Values.serviceAccount.create -}}
{{- if eq $name "" -}}
{{- fail "serviceAccount.create false needs serviceAccount.name: sef's rights are never given to the namespace's default service account" -}}
{{- else if eq $name "default" -}}
{{- fail "serviceAccount.name default: sef's rights are never given to the namespace's default service account (every pod that names no account runs as it)" -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* The API server's user name of the pods' service account (what the admission policies match). */}}
{{- define "sef.serviceAccountUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "sef.serviceAccountName" . }}
{{- end -}}

{{/* "true" when an EventType's policy drains (drain, drain-then-approve): only then may sef list, evict and delete
pods. An empty policy map means the agent's defaults, which drain. */}}
{{- define "sef.drains" -}}
{{- $policy := .Values.config.kubernetes.policy | default dict -}}
{{- if or (empty $policy) (has "drain" (values $policy)) (has "drain-then-approve" (values $policy)) -}}
true
{{- end -}}
{{- end -}}

{{- define "sef.labels" -}}
app.kubernetes.io/name: sef
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* "true" when the agent serves metrics where the cluster reaches them: the node's or the pod's IP, or a non-loopback
config.metrics.host. */}}
{{- define "sef.metricsReachable" -}}
{{- if and .Values.config.metrics.enabled (or (ne .Values.metrics.listenOn "config") (not (has .Values.config.metrics.host (list "127.0.0.1" "localhost" "::1")))) -}}
true
{{- end -}}
{{- end -}}

{{/* The labels of the headless metrics Service, which the ServiceMonitor selects. */}}
{{- define "sef.metricsServiceLabels" -}}
{{ include "sef.labels" . }}
app.kubernetes.io/component: metrics
{{- end -}}
