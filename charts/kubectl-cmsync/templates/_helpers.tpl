{{/* the name of every object: <release>-controller when the release's name holds the chart's, else
<release>-kubectl-cmsync-controller (helm install kubectl-cmsync: kubectl-cmsync-controller, as deploy/controller) */}}
{{- define "cmsync.name" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- printf "%s-controller" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s-controller" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cmsync.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "cmsync.labels" -}}
{{ include "cmsync.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "cmsync.image" -}}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) -}}
{{- end -}}

{{- define "cmsync.nodeReader" -}}
{{- if eq .Values.reader.mode "node" -}}true{{- else if eq .Values.reader.mode "exec" -}}{{- else -}}
{{- fail (printf "reader.mode %q: exec or node" .Values.reader.mode) -}}
{{- end -}}
{{- end -}}

{{/* the rules on the consumers, in every namespace watched (a ClusterRole) or in the one (a Role) */}}
{{- define "cmsync.rules" }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list"]
{{- if .Values.secrets }}
# secrets (--secrets): their values are compared, digested under the key and never logged
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: ["apps"]
  resources: ["replicasets"]
  verbs: ["get", "list"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "daemonsets"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list"]
{{- if not (include "cmsync.nodeReader" .) }}
- apiGroups: [""]
  resources: ["pods/exec"]
  verbs: ["get", "create"]
{{- end }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
{{- end }}
