"""Gang scheduling, pure: a job → the PodGroup a gang scheduler needs and the marks its pods must carry.

A distributed job that gets only some of its pods scheduled holds their GPUs and never starts. A gang
scheduler (Volcano, or scheduler-plugins' coscheduling plugin) places all of a job's pods or none; it
learns which pods belong together from a PodGroup. This module follows Kubeflow training-operator v1
(`pkg/controller.v1/common/job.go`, `util.go` CalcPGMinResources, `control/podgroup_control.go`):

- the PodGroup is named after the job, owned by it, and carries the job's annotations;
- `minMember` is `runPolicy.schedulingPolicy.minAvailable`, else every replica of the job, counted from
  the replica counts of now (so a scaled job's PodGroup follows);
- `minResources` is the policy's, else the requests (a container without requests: its limits) of the
  first `minMember` pods, taking replica types with a higher PriorityClass first;
- Volcano: `queue` (the policy's, else one the PodGroup already has, else `default`) and
  `priorityClassName`; pods get `schedulerName: volcano`, the annotations `scheduling.k8s.io/group-name`
  and `volcano.sh/task-spec`, and are not created until Volcano moved the PodGroup past Pending;
- scheduler-plugins: `scheduleTimeoutSeconds`; pods get its scheduler name and the label
  `scheduling.x-k8s.io/pod-group`.
A pod template that names a scheduler keeps it (Kubeflow warns and does not override).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from fields import as_dict
from jobs.manifests import LABEL_JOB_NAME, owner_reference
from jobs.spec import JobSpec, ReplicaSpec
from kube.resources import ResourceType
from workflows.pipeline.quantity import QuantityError, parse_quantity

VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"
GANG_SCHEDULERS = (VOLCANO, SCHEDULER_PLUGINS)
#: The scheduler names pods get when their template names none. Volcano's scheduler is `volcano`;
#: scheduler-plugins' second scheduler, as its chart installs it, is `scheduler-plugins-scheduler`
#: (the name Kubeflow's own end-to-end tests put in their pod templates).
DEFAULT_SCHEDULER_NAMES = {VOLCANO: "volcano", SCHEDULER_PLUGINS: "scheduler-plugins-scheduler"}
POD_GROUP_RESOURCES = {
    VOLCANO: ResourceType("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups"),
    SCHEDULER_PLUGINS: ResourceType("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups"),
}
PRIORITY_CLASS = ResourceType("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False)

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_QUEUE = "default"
#: Volcano phases in which its PodGroup has not been admitted yet: pods created now would only wait.
VOLCANO_WAITING_PHASES = ("", "Pending")
#: Not copied from the job onto its PodGroup: it describes the job, and `kubectl apply` of the
#: PodGroup would take it for the PodGroup's own.
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"

_DECIMAL_SUFFIXES: tuple[tuple[int, str], ...] = (
    (18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"), (-9, "n"),
)  # fmt: skip
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


@dataclass(frozen=True)
class GangScheduler:
    """The configured gang scheduler: `volcano` or `scheduler-plugins`, and the scheduler name pods get."""

    kind: str
    scheduler_name: str

    def __post_init__(self) -> None:
        if self.kind not in GANG_SCHEDULERS:
            raise ValueError(f"kind: must be one of {', '.join(GANG_SCHEDULERS)}, not {self.kind!r}")
        if not self.scheduler_name:
            raise ValueError("scheduler_name: must not be empty")

    @property
    def resource(self) -> ResourceType:
        return POD_GROUP_RESOURCES[self.kind]


def total_replicas(job: JobSpec[Any]) -> int:
    return sum(job.counts.values())


def min_member(job: JobSpec[Any]) -> int:
    """`minAvailable`, else every replica the job has now (Kubeflow's default: all or nothing)."""
    given = job.run_policy.scheduling_policy.min_available
    return given if given is not None else total_replicas(job)


def priority_class_names(job: JobSpec[Any]) -> set[str]:
    """The PriorityClasses whose values decide which pods the computed minResources counts: none when the
    policy gives minResources or every pod is counted anyway (so the reconcile looks none up)."""
    if job.run_policy.scheduling_policy.min_resources is not None:
        return set()
    if min_member(job) >= total_replicas(job):
        return set()
    names = set()
    for spec in job.replicas.values():
        name = _priority_class(spec)
        if name:
            names.add(name)
    return names


def min_resources(job: JobSpec[Any], priorities: Mapping[str, int] | None = None) -> dict[str, str]:
    """What the first `minMember` pods request, as Kubeflow's CalcPGMinResources adds it up.

    Replica types are taken by their template's PriorityClass value, highest first (`priorities`: name →
    value; an unknown class counts 0), ties in the framework's order. A container's `requests` count;
    a container without any has its `limits` counted instead (Kubernetes defaults requests to limits).
    """
    priorities = priorities or {}
    ordered = sorted(job.replicas.values(), key=lambda spec: -priorities.get(_priority_class(spec), 0))
    wanted = min_member(job)
    totals: dict[str, Decimal] = {}
    binary: dict[str, bool] = {}
    counted = 0
    for spec in ordered:
        containers = as_dict(spec.template.get("spec")).get("containers")
        for _ in range(spec.replicas):
            if counted >= wanted:
                break
            counted += 1
            for container in containers if isinstance(containers, list) else []:
                _add_container(totals, binary, as_dict(as_dict(container).get("resources")))
    return {name: format_quantity(value, binary=binary[name]) for name, value in totals.items()}


def desired_pod_group(
    job: JobSpec[Any],
    scheduler: GangScheduler,
    observed: dict[str, Any] | None = None,
    priorities: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The PodGroup the job needs now; `observed` is the one in the cluster, if any (Volcano keeps the
    queue it has)."""
    policy = job.run_policy.scheduling_policy
    resources = dict(policy.min_resources) if policy.min_resources is not None else None
    if resources is None:
        resources = min_resources(job, priorities)
    spec: dict[str, Any] = {"minMember": min_member(job)}
    if scheduler.kind == VOLCANO:
        queue = str(as_dict(as_dict(observed).get("spec")).get("queue") or policy.queue or DEFAULT_QUEUE)
        spec["queue"] = queue
        if policy.priority_class:
            spec["priorityClassName"] = policy.priority_class
        spec["minResources"] = resources
    else:
        if resources:
            spec["minResources"] = resources
        if policy.schedule_timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    metadata: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "labels": {LABEL_JOB_NAME: job.name},
        "ownerReferences": [owner_reference(job)],
    }
    annotations = {key: value for key, value in job.annotations.items() if key != LAST_APPLIED_ANNOTATION}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": scheduler.resource.api_version,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def needs_update(observed: dict[str, Any], desired: dict[str, Any]) -> bool:
    """True when the PodGroup's spec is not what the job needs now (replicas or the policy changed)."""
    return as_dict(observed.get("spec")) != desired["spec"]


def updated(observed: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """The observed PodGroup with the desired spec: a replace keeps its metadata and status, and its
    resourceVersion makes the write fail rather than undo a change made since it was read."""
    return {**observed, "spec": copy.deepcopy(desired["spec"])}


def delays_pods(scheduler: GangScheduler, pod_group: dict[str, Any] | None) -> bool:
    """True while the job's pods must not be created yet: Volcano has not admitted the PodGroup (no
    phase, or Pending), or it does not exist. scheduler-plugins admits pods itself: never delay."""
    if scheduler.kind != VOLCANO:
        return False
    if pod_group is None:
        return True
    return str(as_dict(pod_group.get("status")).get("phase") or "") in VOLCANO_WAITING_PHASES


def decorate_pod(pod: dict[str, Any], scheduler: GangScheduler, group: str, replica_type: str) -> None:
    """Mark a pod for the gang scheduler (in place): its scheduler, unless the template named one, and
    the group it belongs to (Volcano: annotations, with the replica type as the task; scheduler-plugins:
    a label)."""
    spec = pod.setdefault("spec", {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler.scheduler_name
    metadata = pod.setdefault("metadata", {})
    if scheduler.kind == VOLCANO:
        annotations = metadata.setdefault("annotations", {})
        annotations[VOLCANO_GROUP_ANNOTATION] = group
        annotations[VOLCANO_TASK_SPEC_ANNOTATION] = replica_type.lower()
    else:
        metadata.setdefault("labels", {})[SCHEDULER_PLUGINS_GROUP_LABEL] = group


def other_schedulers(job: JobSpec[Any], scheduler: GangScheduler) -> list[str]:
    """Scheduler names the pod templates set that are not the gang scheduler's (kept, and warned about)."""
    names = []
    for spec in job.replicas.values():
        name = as_dict(spec.template.get("spec")).get("schedulerName")
        if isinstance(name, str) and name and name != scheduler.scheduler_name and name not in names:
            names.append(name)
    return names


def quantity_problem(value: object) -> str | None:
    """Why `value` is not a non-negative Kubernetes quantity (`4`, `500m`, `16Gi`), or None when it is."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return f"must be a quantity such as 4, 500m or 16Gi, not {value!r}"
    if isinstance(value, int):
        return None if value >= 0 else f"must not be negative, not {value}"
    try:
        parse_quantity(value)
    except QuantityError as error:
        return str(error)
    return None


def format_quantity(value: Decimal, *, binary: bool) -> str:
    """A quantity as Kubernetes writes it canonically: the largest binary suffix that divides a whole
    number of bytes exactly (`1536Mi`), else the largest power-of-1000 suffix with a whole mantissa
    (`1500m`, `2k`); below a nano-unit, rounded up."""
    if value == 0:
        return "0"
    if binary and value == value.to_integral_value() and value >= 1024:
        whole = int(value)
        for shift, suffix in _BINARY_SUFFIXES:
            if whole % (1 << shift) == 0:
                return f"{whole >> shift}{suffix}"
        return str(whole)
    for exponent, suffix in _DECIMAL_SUFFIXES:
        mantissa = value.scaleb(-exponent)
        if mantissa == mantissa.to_integral_value():
            return f"{int(mantissa)}{suffix}"
    return f"{int(value.scaleb(9).to_integral_value(rounding=ROUND_CEILING))}n"


def _add_container(totals: dict[str, Decimal], binary: dict[str, bool], resources: dict[str, Any]) -> None:
    requests = resources.get("requests")
    counted = requests if isinstance(requests, dict) else as_dict(resources.get("limits"))
    for name, quantity in counted.items():
        amount = _amount(quantity)
        if amount is None:
            continue  # the apiserver refuses such a pod; it cannot hold resources
        if name not in totals:
            totals[name] = Decimal(0)
            binary[name] = isinstance(quantity, str) and quantity.strip().endswith("i")
        totals[name] += amount


def _amount(quantity: object) -> Decimal | None:
    if quantity_problem(quantity) is not None:
        return None
    return Decimal(quantity) if isinstance(quantity, int) else parse_quantity(str(quantity))


def _priority_class(spec: ReplicaSpec) -> str:
    name = as_dict(spec.template.get("spec")).get("priorityClassName")
    return name if isinstance(name, str) else ""
