"""Helpers of the tests that run jobs on the simulator: the CRDs, job manifests whose pods follow a
script on the simulated kubelet, and short readers of what the cluster holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from argoml_site.crds import CUSTOM_RESOURCES, KUBEFLOW_RESOURCES
from jobs import apigroups
from jobs.frameworks import framework_class
from jobs.status import current_state
from kubesim.errors import ApiError
from kubesim.kubelet import SCRIPT_ANNOTATION
from kubesim.simulator import Simulator

IMAGE = "example.io/train:1"
#: The PodGroup CRDs of Volcano and scheduler-plugins, vendored (trimmed) from upstream: see each file's head.
POD_GROUP_CRDS = tuple(sorted((Path(__file__).parent / "crds").glob("*podgroups.yaml")))


def install_crds(sim: Simulator) -> None:
    """Every CRD of ours and Kubeflow's v1 jobs, as `manage.py install_crds --kubeflow` would apply them
    (idempotent)."""
    for resource in CUSTOM_RESOURCES + KUBEFLOW_RESOURCES:
        try:
            sim.store.create(resource.manifest())
        except ApiError as error:
            if error.code != 409:
                raise


def install_pod_group_crds(sim: Simulator) -> None:
    """The gang schedulers' PodGroup CRDs, as installing Volcano or scheduler-plugins would (idempotent)."""
    for path in POD_GROUP_CRDS:
        try:
            sim.store.create(yaml.safe_load(path.read_text()))
        except ApiError as error:
            if error.code != 409:
                raise


def replica_spec(
    container: str,
    replicas: int,
    *,
    script: Any = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A replica whose framework container runs `script` on the simulated kubelet (a behaviour or a list
    of behaviours, one per run, in kubesim's script format)."""
    template: dict[str, Any] = {"spec": {"containers": [{"name": container, "image": IMAGE}]}}
    if script is not None:
        annotation = json.dumps({container: script})
        template["metadata"] = {"annotations": {SCRIPT_ANNOTATION: annotation}}
    spec: dict[str, Any] = {"replicas": replicas, "template": template}
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


def job_manifest(
    kind: str,
    replicas: dict[str, int],
    *,
    name: str,
    namespace: str,
    scripts: dict[str, Any] | None = None,
    restart_policy: str | None = None,
    run_policy: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A job of `kind` with `replicas` per type; `scripts` maps a replica type to what its pods do."""
    framework = framework_class(kind)
    scripts = scripts or {}
    job_spec: dict[str, Any] = {
        framework.spec_key: {
            replica_type: replica_spec(
                framework.container_name,
                count,
                script=scripts.get(replica_type),
                restart_policy=restart_policy,
            )
            for replica_type, count in replicas.items()
        },
        **spec,
    }
    if run_policy is not None:
        job_spec["runPolicy"] = run_policy
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": job_spec,
    }


def get_job(sim: Simulator, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The job, of our group or of the one its reconcile key kind names (`TFJob.kubeflow.org`)."""
    framework_kind, api_version = apigroups.split_controller_kind(kind)
    plural = framework_class(framework_kind).plural
    try:
        return sim.store.get(f"{plural}.{apigroups.group_of(api_version)}", name, namespace)
    except ApiError as error:
        if error.code == 404:
            return None
        raise


def state_of(job: dict[str, Any] | None) -> str | None:
    return current_state((job or {}).get("status")) if job else None


def condition(job: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in job["status"]["conditions"] if c["type"] == type_)


def pods(sim: Simulator, namespace: str) -> dict[str, dict[str, Any]]:
    return {pod["metadata"]["name"]: pod for pod in sim.store.list("pods", namespace)["items"]}


def services(sim: Simulator, namespace: str) -> dict[str, dict[str, Any]]:
    return {svc["metadata"]["name"]: svc for svc in sim.store.list("services", namespace)["items"]}


def live_pods(sim: Simulator, namespace: str) -> dict[str, dict[str, Any]]:
    """Pods not being deleted."""
    found = pods(sim, namespace)
    return {name: pod for name, pod in found.items() if not pod["metadata"].get("deletionTimestamp")}


def env_of(pod: dict[str, Any], container: str) -> dict[str, str]:
    found = next(c for c in pod["spec"]["containers"] if c["name"] == container)
    return {entry["name"]: entry.get("value", "") for entry in found.get("env") or []}


def events_about(sim: Simulator, namespace: str, name: str) -> list[tuple[str, str]]:
    """(reason, note) of the events.k8s.io Events about the object `name`, oldest first."""
    events = sim.store.list("events.events.k8s.io", namespace)["items"]
    mine = sorted(
        (e for e in events if e["regarding"]["name"] == name),
        key=lambda e: int(e["metadata"]["resourceVersion"]),
    )
    return [(e["reason"], e["note"]) for e in mine]


def event_reasons(sim: Simulator, namespace: str, name: str) -> list[str]:
    return [reason for reason, _ in events_about(sim, namespace, name)]
