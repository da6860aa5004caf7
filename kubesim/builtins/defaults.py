"""The API server's defaults for built-in kinds, from its defaulting functions (kubernetes
pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go, pkg/apis/batch/v1/defaults.go): pure, in place,
idempotent, run on every write as the server runs them on every decode.

Pod-only admission defaults (the ServiceAccount plugin's `serviceAccountName`) are the store's (kinds.py);
`enableServiceLinks` is defaulted on Pods only, as upstream (SetDefaults_Pod, not SetDefaults_PodSpec).
"""

from __future__ import annotations

from typing import Any

_FILE_MODE = 420  # 0644, the default mode of secret, configMap, downwardAPI and projected volumes
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
_VOLUME_SOURCES_KEYS = frozenset({"name"})


def image_pull_policy(image: str) -> str:
    """Always for `:latest` or no tag, else IfNotPresent (a digest counts as a tag)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _probe(probe: dict[str, Any]) -> None:
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("path", "/")
        probe["httpGet"].setdefault("scheme", "HTTP")


def _env(container: dict[str, Any]) -> None:
    for variable in container.get("env") or []:
        field_ref = ((variable or {}).get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def container(spec: dict[str, Any]) -> None:
    """SetDefaults_Container and the defaults of what a container holds (ports, probes, env)."""
    if isinstance(spec.get("image"), str) and spec["image"]:
        spec.setdefault("imagePullPolicy", image_pull_policy(spec["image"]))
    spec.setdefault("terminationMessagePath", "/dev/termination-log")
    spec.setdefault("terminationMessagePolicy", "File")
    spec.setdefault("resources", {})
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for probe in _PROBES:
        if isinstance(spec.get(probe), dict):
            _probe(spec[probe])
    _env(spec)


def _volume(volume: dict[str, Any]) -> None:
    if set(volume) <= _VOLUME_SOURCES_KEYS:
        volume["emptyDir"] = {}  # SetDefaults_Volume: a volume without a source is an emptyDir
    for source in _MODE_SOURCES:
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", _FILE_MODE)


def pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec, its containers and volumes, and the v1 `serviceAccount` mirror."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]  # the deprecated alias, kept equal on read
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for each in spec.get(key) or []:
            if isinstance(each, dict):
                container(each)
                if spec.get("hostNetwork"):
                    for port in each.get("ports") or []:
                        if isinstance(port, dict) and "containerPort" in port:
                            port.setdefault("hostPort", port["containerPort"])
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _volume(volume)


def pod(obj: dict[str, Any]) -> None:
    """SetDefaults_Pod: the spec's defaults, `enableServiceLinks`, requests from limits."""
    spec = obj.setdefault("spec", {})
    pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    for each in spec.get("containers") or []:
        resources = each.get("resources") if isinstance(each, dict) else None
        if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
            requests = resources.setdefault("requests", {})
            for name, quantity in resources["limits"].items():
                requests.setdefault(name, quantity)


def template(spec: dict[str, Any] | None) -> None:
    """A pod template's spec (Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs…)."""
    if not isinstance(spec, dict):
        return
    pod_template = spec.get("template")
    if isinstance(pod_template, dict):
        pod_spec(pod_template.setdefault("spec", {}))


def deployment(spec: dict[str, Any]) -> None:
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    template(spec)


def stateful_set(spec: dict[str, Any]) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    template(spec)


def daemon_set(spec: dict[str, Any]) -> None:
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    template(spec)


def replica_set(spec: dict[str, Any]) -> None:
    spec.setdefault("replicas", 1)
    template(spec)


def horizontal_pod_autoscaler(spec: dict[str, Any]) -> None:
    """autoscaling/v2 SetDefaults_HorizontalPodAutoscaler: one replica at least, 80% CPU utilization when
    no metric is given, and a behavior, once given, completed with the default scaling rules."""
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        up = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": _SCALE_UP_POLICIES}
        down = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
        behavior["scaleUp"] = {**up, **(behavior.get("scaleUp") or {})}
        behavior["scaleDown"] = {**down, **(behavior.get("scaleDown") or {})}


_SCALE_UP_POLICIES = [
    {"type": "Pods", "value": 4, "periodSeconds": 15},
    {"type": "Percent", "value": 100, "periodSeconds": 15},
]


def replication_controller(obj: dict[str, Any]) -> None:
    """SetDefaults_ReplicationController: selector and labels from the template's labels, one replica."""
    spec = obj.setdefault("spec", {})
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if labels:
        spec.setdefault("selector", dict(labels))
        metadata = obj.setdefault("metadata", {})
        if not metadata.get("labels"):
            metadata["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    template(spec)


def cron_job(spec: dict[str, Any]) -> None:
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        template(job_template.get("spec"))


def service(spec: dict[str, Any]) -> None:
    """SetDefaults_Service plus what the registry fills (IP families, traffic policies); cluster IPs and
    node ports are allocated by the store on create."""
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    if spec["type"] == "ExternalName":
        return
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
