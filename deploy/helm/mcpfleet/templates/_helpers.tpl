{{/*
Names. The prefix is cut to 40 characters so that every name derived from it
(the longest is "<prefix>-example-<ordinal>" and its controller-revision-hash)
stays a DNS label of at most 63.
*/}}
{{- define "mcpfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "mcpfleet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "mcpfleet.exampleName" -}}{{ include "mcpfleet.fullname" . }}-example{{- end -}}
{{- define "mcpfleet.redisName" -}}{{ include "mcpfleet.fullname" . }}-redis{{- end -}}
{{- define "mcpfleet.metricsName" -}}{{ include "mcpfleet.fullname" . }}-metrics{{- end -}}

{{/* Labels of every object; "component" is gateway, example-server or redis. */}}
{{- define "mcpfleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{ include "mcpfleet.selectorLabels" . }}
{{- end -}}

{{/* The labels selectors match: one component's pods and no other's. */}}
{{- define "mcpfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpfleet.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "mcpfleet.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The container's security context, for every container of the chart. */}}
{{- define "mcpfleet.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
{{- end -}}

{{/* Whether the gateways have a shared store. */}}
{{- define "mcpfleet.hasRedis" -}}
{{- $r := .Values.redis -}}
{{- if or $r.enabled $r.external.url $r.external.existingSecret -}}true{{- end -}}
{{- end -}}

{{- define "mcpfleet.redisURL" -}}
{{- if .Values.redis.enabled -}}
{{- printf "redis://%s.%s.svc.%s:6379/0" (include "mcpfleet.redisName" .) .Release.Namespace .Values.clusterDomain -}}
{{- else -}}
{{- .Values.redis.external.url -}}
{{- end -}}
{{- end -}}

{{- define "mcpfleet.secretName" -}}
{{- if .Values.secret.create -}}{{ include "mcpfleet.fullname" . }}-secret{{- else -}}{{ .Values.secret.existingSecret }}{{- end -}}
{{- end -}}

{{/* Where the image reads its files (its CMD names the config's path). */}}
{{- define "mcpfleet.configDir" -}}/etc/mcpfleet{{- end -}}
{{- define "mcpfleet.secretDir" -}}/etc/mcpfleet/secret{{- end -}}
{{- define "mcpfleet.redisDir" -}}/etc/mcpfleet/redis{{- end -}}
{{- define "mcpfleet.adminDir" -}}/etc/mcpfleet/admin{{- end -}}

{{/* The Secret of the admin token: the operator's, else the one the chart makes. */}}
{{- define "mcpfleet.adminTokenName" -}}
{{- .Values.adminToken.existingSecret | default (printf "%s-admin" (include "mcpfleet.fullname" .)) -}}
{{- end -}}

{{/*
terminationGracePeriodSeconds: the preStop sleep, the drain delay and the
grace, plus a margin, so that the kubelet's SIGKILL comes after serve has
exited on its own.
*/}}
{{- define "mcpfleet.terminationGrace" -}}
{{- $g := .Values.gateway -}}
{{- add $g.preStopSleepSeconds $g.drainDelaySeconds $g.graceSeconds $g.terminationMarginSeconds -}}
{{- end -}}

{{/* The example server's: its drain delay, its 15 s for calls in flight, a margin. */}}
{{- define "mcpfleet.exampleTerminationGrace" -}}
{{- add .Values.exampleServer.drainDelaySeconds 15 5 -}}
{{- end -}}
