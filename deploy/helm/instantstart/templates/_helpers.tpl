{{/* The release's full name, cut to the 63 characters of a label value and a DNS label. */}}
{{- define "instantstart.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "instantstart.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "instantstart.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "instantstart.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "instantstart.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "web"). */}}
{{- define "instantstart.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every pod of the release, whatever its component (NetworkPolicies). */}}
{{- define "instantstart.releaseSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "instantstart.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .ref.name }}
      key: {{ .ref.key }}
{{- end -}}

{{/*
The environment of every InstantStart container. DATABASE_URL and REDIS_URL are assembled by the kubelet from the
values and the passwords' Secrets: $(NAME) expands a variable defined earlier in the same list.
*/}}
{{- define "instantstart.env" -}}
{{- $v := .Values -}}
{{- $origins := list -}}
{{- range $v.portal.hosts -}}
{{- $origins = append $origins (printf "%s://%s" (ternary "https" "http" $v.portal.https) .) -}}
{{- end -}}
- name: INSTANTSTART_SANDBOX
  value: "0"
- name: INSTANTSTART_ALLOWED_HOSTS
  value: {{ join "," $v.portal.hosts | quote }}
- name: INSTANTSTART_CSRF_TRUSTED_ORIGINS
  value: {{ join "," $origins | quote }}
- name: INSTANTSTART_HTTPS
  value: {{ ternary "1" "0" $v.portal.https | quote }}
- name: INSTANTSTART_TRUSTED_PROXIES
  value: {{ $v.portal.trustedProxies | quote }}
- name: FORWARDED_ALLOW_IPS
  value: {{ default "127.0.0.1" $v.portal.trustedProxies | quote }}
- name: INSTANTSTART_LOG_LEVEL
  value: {{ $v.portal.logLevel | quote }}
- name: INSTANTSTART_DB_CONN_MAX_AGE
  value: "60"
- name: AWS_REGION
  value: {{ $v.aws.region | quote }}
{{- with $v.aws.sharedBucket }}
- name: INSTANTSTART_SHARED_BUCKET
  value: {{ . | quote }}
{{- end }}
- name: PROMETHEUS_MULTIPROC_DIR
  value: /metrics
{{ include "instantstart.secretEnv" (dict "env" "INSTANTSTART_SECRET_KEY" "ref" $v.secrets.secretKey) }}
{{- if $v.secrets.metricsToken.name }}
{{ include "instantstart.secretEnv" (dict "env" "INSTANTSTART_METRICS_TOKEN" "ref" $v.secrets.metricsToken) }}
{{- end }}
{{ include "instantstart.secretEnv" (dict "env" "POSTGRES_PASSWORD" "ref" $v.postgresql.passwordSecret) }}
- name: DATABASE_URL
  value: {{ printf "postgres://%s:$(POSTGRES_PASSWORD)@%s:%d/%s?sslmode=%s" $v.postgresql.user $v.postgresql.host (int $v.postgresql.port) $v.postgresql.database $v.postgresql.sslmode | quote }}
{{- if $v.redis.passwordSecret.name }}
{{ include "instantstart.secretEnv" (dict "env" "REDIS_PASSWORD" "ref" $v.redis.passwordSecret) }}
{{- end }}
- name: REDIS_URL
  value: {{ printf "%s://%s%s:%d/%d" (ternary "rediss" "redis" $v.redis.tls) (ternary ":$(REDIS_PASSWORD)@" "" (ne $v.redis.passwordSecret.name "")) $v.redis.host (int $v.redis.port) (int $v.redis.db) | quote }}
{{- range $name, $value := $v.portal.extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* Writable directories under a read-only root file system: /tmp and the metrics directory, per pod. */}}
{{- define "instantstart.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: metrics
  mountPath: /metrics
{{- end -}}

{{- define "instantstart.volumes" -}}
- name: tmp
  emptyDir: {}
- name: metrics
  emptyDir:
    medium: Memory
    sizeLimit: 64Mi
{{- end -}}

{{/* What every pod spec shares: (dict "root" $ "component" "web"). */}}
{{- define "instantstart.podCommon" -}}
{{- $v := .root.Values -}}
serviceAccountName: {{ include "instantstart.serviceAccountName" .root }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "instantstart.volumes" .root | nindent 2 }}
{{- end -}}

{{/* Pod template metadata: (dict "root" $ "component" "web" "scrapePort" 3099); scrapePort 0: no annotations. */}}
{{- define "instantstart.podMetadata" -}}
{{- $v := .root.Values -}}
labels:
  {{- include "instantstart.selectorLabels" . | nindent 2 }}
  {{- with $v.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $scrape := and $v.metrics.podAnnotations $v.secrets.metricsToken.name .scrapePort }}
{{- if or $scrape $v.podAnnotations }}
annotations:
  {{- if $scrape }}
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .scrapePort | quote }}
  prometheus.io/path: /metrics
  {{- end }}
  {{- with $v.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}
