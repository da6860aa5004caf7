{{/* A Deployment of Celery workers: (dict "root" $ "component" "worker" "values" .Values.worker "args" (list …)) */}}
{{- define "argoml.celeryDeployment" -}}
{{- $root := .root -}}
{{- $fullname := include "argoml.fullname" $root -}}
{{- $keys := list "SECRET_KEY" "DATABASE_URL" "REDIS_URL" -}}
{{- if $root.Values.metrics.token.enabled }}{{ $keys = append $keys "METRICS_TOKEN" }}{{ end -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "argoml.componentLabels" (dict "root" $root "component" .component) | nindent 4 }}
spec:
  {{- if not (and .values.autoscaling .values.autoscaling.enabled) }}
  replicas: {{ .values.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "argoml.selectorLabels" (dict "root" $root "component" .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "argoml.selectorLabels" (dict "root" $root "component" .component) | nindent 8 }}
        app.kubernetes.io/metrics: worker
      annotations:
        checksum/config: {{ include "argoml.configChecksum" $root }}
        {{- include "argoml.metricsAnnotations" (dict "root" $root "port" $root.Values.metrics.workerPort "scheme" "http") | nindent 8 }}
        {{- with .values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ $fullname }}-{{ .component }}
      automountServiceAccountToken: true
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      # Celery's warm shutdown finishes the running tasks; a task cut off is redelivered (acks_late).
      terminationGracePeriodSeconds: {{ .values.terminationGracePeriodSeconds }}
      {{- include "argoml.topologySpread" (dict "root" $root "component" .component "values" .values) | nindent 6 }}
      {{- include "argoml.scheduling" (dict "values" .values) | nindent 6 }}
      initContainers:
        {{- include "argoml.waitForMigrations" (dict "root" $root "keys" $keys) | nindent 8 }}
      containers:
        - name: {{ .component }}
          image: {{ include "argoml.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          ports:
            - name: metrics
              containerPort: {{ $root.Values.metrics.workerPort }}
              protocol: TCP
          {{- include "argoml.env" (dict "root" $root "keys" $keys "extraEnv" (merge (dict "CELERY_CONCURRENCY" .values.concurrency) .values.extraEnv)) | nindent 10 }}
          # The metrics server starts in the worker's main process once Celery has booted; it answering
          # means the process is up. Celery has no other endpoint to probe.
          startupProbe:
            httpGet:
              path: /healthz
              port: metrics
            periodSeconds: 2
            failureThreshold: 90
          livenessProbe:
            httpGet:
              path: /healthz
              port: metrics
            periodSeconds: 20
            timeoutSeconds: 5
            failureThreshold: 3
          readinessProbe:
            httpGet:
              path: /healthz
              port: metrics
            periodSeconds: 10
            timeoutSeconds: 5
          resources:
            {{- toYaml .values.resources | nindent 12 }}
          {{- include "argoml.containerSecurityContext" $root | nindent 10 }}
          volumeMounts:
            {{- include "argoml.scratchMounts" $root | nindent 12 }}
            {{- include "argoml.secretsMount" $root | nindent 12 }}
            {{- if $root.Values.trainer.progress.enabled }}
            - name: trainer-status-ca
              mountPath: /var/run/argoml/trainer-status-ca
              readOnly: true
            {{- end }}
      volumes:
        {{- include "argoml.scratchVolumes" $root | nindent 8 }}
        {{- include "argoml.secretsVolume" (dict "root" $root "keys" $keys) | nindent 8 }}
        {{- if $root.Values.trainer.progress.enabled }}
        # The CA a TrainJob's pods trust the listener by, copied into each TrainJob's <name>-tls-config
        # ConfigMap; only ca.crt is projected, and as a directory a renewed CA arrives without a restart.
        - name: trainer-status-ca
          secret:
            secretName: {{ include "argoml.webhookSecret" $root }}
            items:
              - key: ca.crt
                path: ca.crt
            defaultMode: 0444
        {{- end }}
{{- end -}}
