"""Pure builders: a training job → the Pods and headless Services that run it.

Every child is named `<job>-<replica type lowercase>-<index>` (Pod and Service alike, so the Service name
is the pod's DNS name), labelled so the job's children can be listed with one selector, and owned by
the job through a controller ownerReference. Output is deterministic: same job, same manifests, in the
framework's replica-type order and then by index.
"""

from __future__ import annotations

import copy
from typing import Any

from fields import as_dict
from jobs import apigroups
from jobs import spec as jobspec
from jobs.frameworks.base import Environment, FieldRef, Framework
from jobs.spec import JobSpec, Slot, framework_container, job_name
from kube.resources import controller_reference, label_selector

LABEL_JOB_NAME = "argoml.io/job-name"
LABEL_REPLICA_TYPE = "argoml.io/replica-type"
LABEL_REPLICA_INDEX = "argoml.io/replica-index"
LABEL_JOB_ROLE = "argoml.io/job-role"
MASTER_ROLE = "master"
#: Kubeflow Training Operator v1's labels, set beside ours so Kubeflow's SDK and tools find the pods
#: (`get_job_pod_names`, `get_job_logs` select by them). Ours stay the selectors we list and match by.
KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_REPLICA_TYPE = "training.kubeflow.org/replica-type"
KUBEFLOW_REPLICA_INDEX = "training.kubeflow.org/replica-index"
KUBEFLOW_JOB_ROLE = "training.kubeflow.org/job-role"
KUBEFLOW_OPERATOR_NAME = "training.kubeflow.org/operator-name"

ENV_JOB_NAME = "ARGOML_JOB_NAME"
ENV_REPLICA_TYPE = "ARGOML_REPLICA_TYPE"
ENV_REPLICA_INDEX = "ARGOML_REPLICA_INDEX"


def replica_name(name: str, replica_type: str, index: int) -> str:
    return f"{name}-{replica_type.lower()}-{index}"


def slot_name(job: JobSpec[Any], slot: Slot) -> str:
    return replica_name(job.name, slot.replica_type, slot.replica_index)


def job_selector(job: dict[str, Any]) -> dict[str, str]:
    """The label selector that lists every child of `job` (filter by owner uid afterwards)."""
    return {LABEL_JOB_NAME: job_name(job)}


def replica_type_selector(job: JobSpec[Any], replica_type: str) -> str:
    """The pods of one replica type as a label selector string (keys sorted, as the apiserver prints
    one): `status.replicaStatuses.<type>.selector`, which the scale subresource shows an autoscaler."""
    return label_selector({LABEL_JOB_NAME: job.name, LABEL_REPLICA_TYPE: replica_type.lower()})


def replica_labels(job: JobSpec[Any], slot: Slot) -> dict[str, str]:
    return {
        LABEL_JOB_NAME: job.name,
        LABEL_REPLICA_TYPE: slot.replica_type.lower(),
        LABEL_REPLICA_INDEX: str(slot.replica_index),
    }


def kubeflow_labels(job: JobSpec[Any], slot: Slot) -> dict[str, str]:
    """Kubeflow's labels of a replica's pod and service: job name (with "/" as "-", as Kubeflow writes
    it), replica type lowercased, index, and the operator's name as Kubeflow names each controller
    (`tfjob-controller`, `pytorchjob-controller`, `mxjob-controller`, …)."""
    return {
        **kubeflow_job_labels(job),
        KUBEFLOW_REPLICA_TYPE: slot.replica_type.lower(),
        KUBEFLOW_REPLICA_INDEX: str(slot.replica_index),
    }


def kubeflow_job_labels(job: JobSpec[Any]) -> dict[str, str]:
    """Kubeflow's labels of every child of a job: the operator's name and the job's."""
    return {
        KUBEFLOW_OPERATOR_NAME: f"{job.kind.lower()}-controller",
        KUBEFLOW_JOB_NAME: job.name.replace("/", "-"),
    }


def is_master_role(job: JobSpec[Any], framework: Framework[Any], slot: Slot) -> bool:
    """The chief/master replica, or worker 0 when the job has neither."""
    if job.chief_type is not None:
        return slot.replica_type == job.chief_type
    return slot.replica_type == framework.worker_type and slot.replica_index == 0


def job_labels(job: JobSpec[Any]) -> dict[str, str]:
    """The labels of a child of the whole job rather than of one replica (MPI's hostfile, SSH key and
    Service): ours, which the job's children selector lists, and Kubeflow's job and operator names."""
    return {LABEL_JOB_NAME: job.name, **kubeflow_job_labels(job)}


def extra_children(
    job: JobSpec[Any], framework: Framework[Any], pods: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The framework's children beyond each replica's pod and service (MPI: hostfile, SSH key, job Service),
    owned by the job and labelled so the job's children selector lists them."""
    return framework.extra_children(job, owner_reference(job), job_labels(job), pods)


def owner_reference(job: JobSpec[Any]) -> dict[str, Any]:
    """Controller reference, in the group the job was served from: deleting the job deletes its children,
    and only its controller manages them."""
    return controller_reference(apigroups.served_or_ours(job.api_version), job.kind, job.name, job.uid)


def desired_pods(job: dict[str, Any], framework: Framework[Any]) -> list[dict[str, Any]]:
    """Every Pod of the job as written (callers holding a parsed job use `build_pod`)."""
    parsed = jobspec.parse(job, framework)
    return [build_pod(parsed, framework, slot) for slot in parsed.slots]


def desired_services(job: dict[str, Any], framework: Framework[Any]) -> list[dict[str, Any]]:
    """Every Service of the job as written: one per replica, or the framework's own (MPI: one for the job).
    Callers holding a parsed job use `build_service`."""
    parsed = jobspec.parse(job, framework)
    own = [m for m in extra_children(parsed, framework, []) if m.get("kind") == "Service"]
    if not framework.replica_services:
        return own
    return own + [build_service(parsed, framework, slot) for slot in parsed.slots]


def build_pod(job: JobSpec[Any], framework: Framework[Any], slot: Slot) -> dict[str, Any]:
    """The Pod of one replica.

    The replica's pod template is kept as written, except: our labels win over the template's,
    `restartPolicy` comes from the replica spec (ExitCode becomes Never: the operator, not the
    kubelet, decides which exits are retried), every container learns the replica's identity,
    and the framework container gets the cluster environment and its port.
    """
    replica = job.replicas[slot.replica_type]
    template = copy.deepcopy(dict(replica.template))
    template_metadata = as_dict(template.get("metadata"))
    labels = {
        **as_dict(template_metadata.get("labels")),
        **kubeflow_labels(job, slot),
        **replica_labels(job, slot),
    }
    if is_master_role(job, framework, slot):
        labels[LABEL_JOB_ROLE] = labels[KUBEFLOW_JOB_ROLE] = MASTER_ROLE
    metadata: dict[str, Any] = {
        "name": slot_name(job, slot),
        "namespace": job.namespace,
        "labels": labels,
        "ownerReferences": [owner_reference(job)],
    }
    if template_metadata.get("annotations"):
        metadata["annotations"] = template_metadata["annotations"]

    pod_spec = as_dict(template.get("spec"))
    restart_policy = replica.restart_policy
    pod_spec["restartPolicy"] = "Never" if restart_policy == "ExitCode" else restart_policy
    identity = {
        ENV_JOB_NAME: job.name,
        ENV_REPLICA_TYPE: slot.replica_type.lower(),
        ENV_REPLICA_INDEX: str(slot.replica_index),
    }
    for field in ("initContainers", "containers"):
        for container in pod_spec.get(field) or []:
            container["env"] = merge_env(container.get("env"), identity)
    container = framework_container(pod_spec, framework)
    if container is not None:
        container["env"] = merge_env(container["env"], framework.environment(job, *slot))
        _ensure_port(container, framework.port_name, replica.port)
    framework.customize_pod(job, slot.replica_type, slot.replica_index, pod_spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def build_service(job: JobSpec[Any], framework: Framework[Any], slot: Slot) -> dict[str, Any]:
    """The headless Service that gives the replica's pod a stable DNS name.

    `publishNotReadyAddresses` makes the name resolve before the pod is ready: replicas must find
    each other during rendezvous, which happens before any readiness probe could pass.
    """
    port = job.replicas[slot.replica_type].port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": slot_name(job, slot),
            "namespace": job.namespace,
            "labels": {**kubeflow_labels(job, slot), **replica_labels(job, slot)},
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": replica_labels(job, slot),
            "ports": [{"name": framework.port_name, "port": port, "targetPort": port, "protocol": "TCP"}],
            "publishNotReadyAddresses": True,
        },
    }


def merge_env(env: object, values: Environment) -> list[dict[str, Any]]:
    """The container's env with `values` set: ours replace same-named entries, no name appears twice."""
    kept = (
        [e for e in env if isinstance(e, dict) and e.get("name") not in values]
        if isinstance(env, list)
        else []
    )
    return kept + [_env_entry(name, value) for name, value in values.items()]


def _env_entry(name: str, value: str | FieldRef) -> dict[str, Any]:
    if isinstance(value, FieldRef):
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": value.field_path}}}
    return {"name": name, "value": value}


def _ensure_port(container: dict[str, Any], name: str, number: int) -> None:
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    if not any(isinstance(p, dict) and p.get("name") == name for p in ports):
        ports.append({"name": name, "containerPort": number, "protocol": "TCP"})
