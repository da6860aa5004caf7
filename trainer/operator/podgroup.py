"""A TrainJob's PodGroup, as Trainer 2.3's coscheduling and volcano plugins build it: every pod of every
step must be admitted together (`minMember` = the plan's gang size), with the sum of their requests as
`minResources`; scheduler-plugins gets `scheduleTimeoutSeconds`, Volcano the queue named by the runtime's or
TrainJob's annotation, the pods' PriorityClass and the runtime's network topology.

Pure. The pods are marked by the plan (the coscheduling label, the volcano annotation); `jobs.gang` gives the
PodGroup kinds and the canonical quantity format.
"""

from __future__ import annotations

from decimal import Decimal

import fields
from jobs import gang
from kube.resources import ResourceType
from trainer.operator import plan as planning
from trainer.operator import readers, resolution

#: Trainer's API default for `podGroupPolicy.coscheduling.scheduleTimeoutSeconds` (0 also means it).
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
SCHEDULERS = {"coscheduling": gang.SCHEDULER_PLUGINS, "volcano": gang.VOLCANO}


def resource_of(resolved: resolution.ResolvedSpec) -> ResourceType | None:
    """The PodGroup kind the runtime's `podGroupPolicy` asks for, or None without one."""
    policy = resolved.runtime.pod_group_policy
    return gang.POD_GROUP_RESOURCES[SCHEDULERS[policy.scheduler]] if policy is not None else None


def pod_group(resolved: resolution.ResolvedSpec, desired: planning.Plan) -> fields.RawDict | None:
    """The PodGroup the TrainJob's pods need, or None when the runtime asks for no gang scheduling."""
    policy = resolved.runtime.pod_group_policy
    resource = resource_of(resolved)
    if policy is None or resource is None or desired.gang_size is None:
        return None
    spec: fields.RawDict = {"minMember": desired.gang_size, "minResources": min_resources(resolved)}
    if policy.scheduler == "coscheduling":
        spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds or DEFAULT_SCHEDULE_TIMEOUT_SECONDS
    else:
        queue = resolved.annotations.get(VOLCANO_QUEUE_ANNOTATION)
        if queue:
            spec["queue"] = queue
        for rjob in resolved.replicated_jobs:  # the last one that names a class wins, as in Trainer
            priority = (rjob.pod_template.get("spec") or {}).get("priorityClassName")
            if isinstance(priority, str) and priority:
                spec["priorityClassName"] = priority
        if policy.network_topology:
            spec["networkTopology"] = dict(policy.network_topology)
    return {
        "apiVersion": resource.api_version,
        "kind": "PodGroup",
        "metadata": {
            "name": resolved.name,
            "namespace": resolved.job.namespace,
            "ownerReferences": [planning.owner_reference(resolved.job)],
        },
        "spec": spec,
    }


def min_resources(resolved: resolution.ResolvedSpec) -> dict[str, str]:
    """Every pod's requests added up: each step's one-pod requests times its pods."""
    totals: dict[str, Decimal] = {}
    binary: dict[str, bool] = {}
    for rjob in resolved.replicated_jobs:
        for name, (amount, is_binary) in pod_requests(rjob.pod_template).items():
            totals[name] = totals.get(name, Decimal(0)) + amount * rjob.replicas * rjob.count
            binary[name] = binary.get(name, False) or is_binary
    return {name: gang.format_quantity(value, binary=binary[name]) for name, value in sorted(totals.items())}


def pod_requests(template: fields.RawDict) -> dict[str, tuple[Decimal, bool]]:
    """What one pod requests, as Kubernetes counts it (resourcehelper.PodRequests): its containers added
    up, or an init container's when that is more; a container's limits stand for requests it leaves out."""
    spec = template.get("spec") or {}
    total: dict[str, tuple[Decimal, bool]] = {}
    for container in spec.get("containers") or []:
        for name, (amount, is_binary) in _container_requests(container).items():
            total[name] = (total.get(name, (Decimal(0), False))[0] + amount, is_binary)
    for container in spec.get("initContainers") or []:
        for name, (amount, is_binary) in _container_requests(container).items():
            if amount > total.get(name, (Decimal(0), False))[0]:
                total[name] = (amount, is_binary)
    return total


def _container_requests(container: fields.RawDict) -> dict[str, tuple[Decimal, bool]]:
    resources = container.get("resources") or {}
    counted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    found = {}
    for name, quantity in counted.items():
        amount = readers.quantity_value(quantity)
        if amount is None:
            continue  # the apiserver refuses such a pod: it holds nothing
        found[name] = (amount, isinstance(quantity, str) and quantity.strip().endswith("i"))
    return found
