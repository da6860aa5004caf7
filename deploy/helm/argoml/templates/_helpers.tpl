{{/* Names, labels and the pieces every pod of the chart shares. */}}

{{- define "argoml.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "argoml.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "argoml.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "argoml.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "argoml.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "argoml.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: argoml
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "web") */}}
{{- define "argoml.selectorLabels" -}}
app.kubernetes.io/name: {{ include "argoml.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "argoml.componentLabels" -}}
{{ include "argoml.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "argoml.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "argoml.secretsName" -}}
{{- default (printf "%s-secrets" (include "argoml.fullname" .)) .Values.secrets.name -}}
{{- end -}}
{{- define "argoml.webhookService" -}}{{ include "argoml.fullname" . }}-webhooks{{- end -}}
{{- define "argoml.webhookSecret" -}}{{ include "argoml.fullname" . }}-webhook-tls{{- end -}}
{{- define "argoml.leaseName" -}}
{{- default (printf "%s-controllers" (include "argoml.fullname" .)) .Values.controllers.leaseName -}}
{{- end -}}
{{/* jobs.gangScheduler, checked: none, volcano or scheduler-plugins (docs/jobs.md#gang-scheduling). */}}
{{- define "argoml.gangScheduler" -}}
{{- $scheduler := default "none" .Values.jobs.gangScheduler -}}
{{- if not (has $scheduler (list "none" "volcano" "scheduler-plugins")) -}}
{{- fail (printf "jobs.gangScheduler=%q must be one of: none, volcano, scheduler-plugins" $scheduler) -}}
{{- end -}}
{{- $scheduler -}}
{{- end -}}
{{/* The ServiceAccount of a process that never calls the Kubernetes API (beat, migrations). */}}
{{- define "argoml.noApiServiceAccount" -}}{{ include "argoml.fullname" . }}{{- end -}}

{{- define "argoml.configChecksum" -}}
{{- include (print .Template.BasePath "/configmap.yaml") . | sha256sum -}}
{{- end -}}

{{/* The secret files a process reads, as a projected volume: (dict "root" $ "keys" (list "SECRET_KEY")) */}}
{{- define "argoml.secretsVolume" -}}
- name: secrets
  projected:
    defaultMode: 0440
    sources:
      {{- $root := .root }}
      {{- range $key := .keys }}
      {{- $from := get $root.Values.secrets.fromSecrets $key }}
      - secret:
          name: {{ if $from }}{{ required (printf "secrets.fromSecrets.%s.secretName is required" $key) $from.secretName }}{{ else }}{{ include "argoml.secretsName" $root }}{{ end }}
          items:
            - key: {{ if $from }}{{ required (printf "secrets.fromSecrets.%s.key is required" $key) $from.key }}{{ else }}{{ $key }}{{ end }}
              path: {{ $key }}
      {{- end }}
{{- end -}}

{{- define "argoml.secretsEnv" -}}
{{- range $key := .keys }}
- name: {{ $key }}_FILE
  value: /etc/argoml/secrets/{{ $key }}
{{- end }}
{{- end -}}

{{/* The env of every Django process: the ConfigMap, the secret files, and extra variables. */}}
{{- define "argoml.env" -}}
env:
  {{- include "argoml.secretsEnv" (dict "keys" .keys) | nindent 2 }}
  {{- range $name, $value := .extraEnv }}
  - name: {{ $name }}
    value: {{ $value | toString | quote }}
  {{- end }}
envFrom:
  - configMapRef:
      name: {{ include "argoml.fullname" .root }}-config
{{- end -}}

{{- define "argoml.containerSecurityContext" -}}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end -}}

{{/* Writable places with a read-only root: /tmp and, for processes that export metrics, the metrics dir. */}}
{{- define "argoml.scratchVolumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
- name: metrics
  emptyDir:
    medium: Memory
    sizeLimit: 64Mi
{{- end -}}

{{- define "argoml.scratchMounts" -}}
- name: tmp
  mountPath: /tmp
- name: metrics
  mountPath: /var/run/argoml/metrics
{{- end -}}

{{- define "argoml.secretsMount" -}}
- name: secrets
  mountPath: /etc/argoml/secrets
  readOnly: true
{{- end -}}

{{/* The init container that holds a pod until the migration Job has run: (dict "root" $ "keys" …) */}}
{{- define "argoml.waitForMigrations" -}}
- name: wait-for-migrations
  image: {{ include "argoml.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  args: [wait-for-migrations]
  {{- include "argoml.env" (dict "root" .root "keys" .keys "extraEnv" (dict "MIGRATIONS_WAIT_SECONDS" .root.Values.migrations.waitSeconds)) | nindent 2 }}
  resources:
    requests: {cpu: 20m, memory: 128Mi}
    limits: {cpu: 500m, memory: 256Mi}
  {{- include "argoml.containerSecurityContext" .root | nindent 2 }}
  volumeMounts:
    {{- include "argoml.scratchMounts" . | nindent 4 }}
    {{- include "argoml.secretsMount" . | nindent 4 }}
{{- end -}}

{{/* Soft spreading over nodes, unless the values give constraints: (dict "root" $ "component" … "values" …) */}}
{{- define "argoml.topologySpread" -}}
{{- if .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml .values.topologySpreadConstraints | nindent 2 }}
{{- else }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "argoml.selectorLabels" (dict "root" .root "component" .component) | nindent 8 }}
{{- end }}
{{- end -}}

{{/* Scheduling knobs shared by the Deployments: (dict "values" .Values.web) */}}
{{- define "argoml.scheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{- define "argoml.metricsAnnotations" -}}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
prometheus.io/scheme: {{ .scheme }}
{{- end }}
{{- end -}}

{{/* The ServiceMonitor's bearer token: the METRICS_TOKEN the pods read (nothing when metrics.token is off). */}}
{{- define "argoml.metricsBearer" -}}
{{- if .Values.metrics.token.enabled -}}
{{- $from := get .Values.secrets.fromSecrets "METRICS_TOKEN" -}}
bearerTokenSecret:
  name: {{ if $from }}{{ $from.secretName }}{{ else }}{{ include "argoml.secretsName" . }}{{ end }}
  key: {{ if $from }}{{ $from.key }}{{ else }}METRICS_TOKEN{{ end }}
{{- end -}}
{{- end -}}
