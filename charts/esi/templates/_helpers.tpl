{{/* Chart name. */}}
{{- define "esi.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Resource-name prefix: the release name, or "<release>-esi" when the release name does not
contain the chart name. Cluster-scoped objects use it too, so it is unique per cluster.
*/}}
{{- define "esi.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "esi.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "esi.labels" -}}
helm.sh/chart: {{ include "esi.chart" . }}
{{ include "esi.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: esi
{{- end }}

{{- define "esi.selectorLabels" -}}
app.kubernetes.io/name: {{ include "esi.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "esi.webhook.labels" -}}
{{ include "esi.labels" . }}
app.kubernetes.io/component: webhook
{{- end }}

{{- define "esi.webhook.selectorLabels" -}}
{{ include "esi.selectorLabels" . }}
app.kubernetes.io/component: webhook
{{- end }}

{{/* Names of the webhook's objects. */}}
{{- define "esi.webhook.name" -}}
{{- printf "%s-webhook" (include "esi.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The MutatingWebhookConfiguration (cluster-scoped), also passed to --webhook-config-name. */}}
{{- define "esi.webhook.configName" -}}
{{- include "esi.fullname" . }}
{{- end }}

{{- define "esi.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "esi.webhook.name" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Secret holding the webhook's serving certificate (created by the webhook or by cert-manager). */}}
{{- define "esi.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
{{- printf "%s-cert" (include "esi.webhook.name" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- default (printf "%s-tls" (include "esi.webhook.name" .) | trunc 63 | trimSuffix "-") .Values.certificates.self.secretName }}
{{- end }}
{{- end }}

{{/*
repository[:tag][@digest]. With registry (global.imageRegistry) the repository's registry
host is replaced by it: a first path segment with a "." or ":", or "localhost", is a
registry (Docker's rule); a repository without one gets the registry prefixed.
*/}}
{{- define "esi.imageRef" -}}
{{- $ref := .repository }}
{{- with .registry }}
{{- $parts := splitList "/" $ref }}
{{- $first := first $parts }}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) }}
{{- $ref = printf "%s/%s" (trimSuffix "/" .) (rest $parts | join "/") }}
{{- else }}
{{- $ref = printf "%s/%s" (trimSuffix "/" .) $ref }}
{{- end }}
{{- end }}
{{- if .digest }}
{{- $ref = printf "%s@%s" $ref .digest }}
{{- else }}
{{- $ref = printf "%s:%s" $ref .tag }}
{{- end }}
{{- $ref }}
{{- end }}

{{- define "esi.image" -}}
{{- include "esi.imageRef" (dict "repository" .Values.image.repository "tag" (default .Chart.AppVersion .Values.image.tag) "digest" .Values.image.digest "registry" (.Values.global).imageRegistry) }}
{{- end }}

{{/* The agent image: defaults to the ESI image itself. */}}
{{- define "esi.agentImage" -}}
{{- $a := .Values.agent.image }}
{{- $repo := default .Values.image.repository $a.repository }}
{{- $tag := default (default .Chart.AppVersion .Values.image.tag) $a.tag }}
{{- $digest := $a.digest }}
{{- if and (not $digest) (eq $repo .Values.image.repository) (not $a.tag) }}
{{- $digest = .Values.image.digest }}
{{- end }}
{{- include "esi.imageRef" (dict "repository" $repo "tag" $tag "digest" $digest "registry" (.Values.global).imageRegistry) }}
{{- end }}

{{/* Pull secrets of the chart's pods: global.imagePullSecrets, then imagePullSecrets (YAML list, or empty). */}}
{{- define "esi.imagePullSecrets" -}}
{{- $all := concat ((.Values.global).imagePullSecrets | default list) (.Values.imagePullSecrets | default list) | uniq }}
{{- with $all }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* DNS name of the webhook Service (the serving certificate's name). */}}
{{- define "esi.webhook.serviceDNS" -}}
{{- printf "%s.%s.svc" (include "esi.webhook.name" .) .Release.Namespace }}
{{- end }}

{{/* cert-manager objects. */}}
{{- define "esi.certManager.certificateName" -}}
{{- include "esi.webhook.name" . }}
{{- end }}
{{- define "esi.certManager.caName" -}}
{{- printf "%s-ca" (include "esi.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "esi.certManager.selfSignedIssuerName" -}}
{{- printf "%s-selfsigned" (include "esi.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Whether to render one prometheus-operator kind the operator enabled (metrics.renderMode,
ESO's serviceMonitor.renderMode): "true" or "". The API list is the cluster's under `helm
install` and Flux, the destination cluster's under Argo CD, and only what --api-versions
names under a bare `helm template`; both spellings (group/version and group/version/Kind)
count. failIfMissing stops with the value to change rather than letting the apply fail
later on "no matches for kind".
Call: include "esi.monitoring.render" (dict "root" $ "kind" "ServiceMonitor" "value" "metrics.serviceMonitor.enabled")
*/ -}}
{{- define "esi.monitoring.render" -}}
{{- $mode := .root.Values.metrics.renderMode | default "failIfMissing" }}
{{- $api := .root.Capabilities.APIVersions }}
{{- $has := or ($api.Has (printf "monitoring.coreos.com/v1/%s" .kind)) ($api.Has "monitoring.coreos.com/v1") }}
{{- if or $has (eq $mode "alwaysRender") }}true
{{- else if eq $mode "failIfMissing" }}
{{- fail (printf "%s needs prometheus-operator's CRDs: the cluster serves no monitoring.coreos.com/v1 %s (metrics.renderMode=failIfMissing). Install prometheus-operator; with helm template add --api-versions monitoring.coreos.com/v1/%s; a GitOps tool rendering without the cluster: set metrics.renderMode=alwaysRender (docs/gitops.md), or skipIfMissing to leave it out" .value .kind .kind) }}
{{- end }}
{{- end }}

{{/* The controller's metrics Service and the Secret of its self-managed metrics certificate
(docs/metrics.md, "Authentication"); the certificate names the Service. */}}
{{- define "esi.controller.metricsService" -}}
{{- printf "%s-controller-metrics" (include "esi.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "esi.controller.metricsSecret" -}}
{{- printf "%s-controller-metrics-tls" (include "esi.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* How a ServiceMonitor endpoint authenticates in secure mode (metrics.secure): the
configured authorization, else the token of Prometheus' own ServiceAccount. */}}
{{- define "esi.metrics.scrapeAuth" -}}
{{- if .Values.metrics.secure }}
{{- with .Values.metrics.serviceMonitor.authorization }}
authorization:
  {{- toYaml . | nindent 2 }}
{{- else }}
# Prometheus' own ServiceAccount token; the apiserver checks it and its right to get /metrics.
bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
{{- end }}
{{- end }}
{{- end }}
