"""The job spec as Kubeflow Training Operator v1 shapes it: field names, defaults, and `parse()`, which reads
a job once into a frozen `JobSpec` that every builder takes.

Parsing never raises on a malformed spec: `validation.py` reports what is wrong, and the reconcile loop
must be able to read whatever got past it (a job edited before the webhook existed, for instance). This
module knows frameworks only through the `JobKind` protocol: `jobs.frameworks` imports it, never the
other way (an import-linter contract in pyproject.toml keeps it so).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, NamedTuple, Protocol, TypedDict, TypeVar, cast

import podsecurity
from fields import as_dict, as_int
from jobs import apigroups

#: A framework's own spec fields, parsed (e.g. PyTorch's nprocPerNode and elastic policy).
OptionsT = TypeVar("OptionsT")
OptionsT_co = TypeVar("OptionsT_co", covariant=True)

API_GROUP = "argoml.io"
API_VERSION = f"{API_GROUP}/v1alpha1"

RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES = ("All", "Running", "None")
DEFAULT_NAMESPACE = "default"


class CodeContainer(Protocol):
    """What finding the container that runs a framework's code needs to know (`framework_container`)."""

    @property
    def container_name(self) -> str: ...

    @property
    def first_container_runs_code(self) -> bool: ...


class JobKind(Protocol[OptionsT_co]):
    """What reading a job needs to know about its framework (`jobs.frameworks.base.Framework` is one); a
    protocol, so that this module never imports the frameworks that import it."""

    kind: ClassVar[str]
    spec_key: ClassVar[str]
    replica_types: ClassVar[tuple[str, ...]]
    chief_types: ClassVar[tuple[str, ...]]
    container_name: ClassVar[str]
    first_container_runs_code: ClassVar[bool]
    port_name: ClassVar[str]
    default_port: ClassVar[int]
    default_restart_policy: ClassVar[str]
    default_clean_pod_policy: ClassVar[str]
    default_replicas: ClassVar[Mapping[str, int]]

    def canonical_replica_type(self, name: object) -> str | None: ...

    def default_extra_fields(self, spec: dict[str, Any]) -> None: ...

    def parse_options(self, spec: Mapping[str, Any], job: JobSpec[None]) -> OptionsT_co: ...


class RawReplicaSpec(TypedDict, total=False):
    """A replica spec as written (Kubeflow's `ReplicaSpec`): each value as given, read tolerantly here and
    checked by `validation.py`."""

    replicas: object
    restartPolicy: object
    template: object


class RawRunPolicy(TypedDict, total=False):
    """`spec.runPolicy` as written (Kubeflow's `RunPolicy`), each value as given."""

    cleanPodPolicy: object
    ttlSecondsAfterFinished: object
    activeDeadlineSeconds: object
    backoffLimit: object
    suspend: object
    schedulingPolicy: object


class RawSchedulingPolicy(TypedDict, total=False):
    """`spec.runPolicy.schedulingPolicy` as written (Kubeflow's `SchedulingPolicy`), each value as given."""

    minAvailable: object
    queue: object
    minResources: object
    priorityClass: object
    scheduleTimeoutSeconds: object


@dataclass(frozen=True)
class SchedulingPolicy:
    """`spec.runPolicy.schedulingPolicy` as read by the operator; a malformed field reads as unset."""

    min_available: int | None = None
    queue: str = ""
    min_resources: Mapping[str, Any] | None = None
    priority_class: str = ""
    schedule_timeout_seconds: int | None = None


@dataclass(frozen=True)
class RunPolicy:
    """`spec.runPolicy` with defaults applied; a value of the wrong type reads as its default."""

    clean_pod_policy: str
    ttl_seconds_after_finished: int | None
    active_deadline_seconds: int | None
    backoff_limit: int | None
    suspend: bool
    scheduling_policy: SchedulingPolicy = SchedulingPolicy()


class Slot(NamedTuple):
    """One replica of a job: its canonical type and index."""

    replica_type: str
    replica_index: int


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica type of a job, defaults applied (`replicas` 1, the framework's restart policy)."""

    replica_type: str
    replicas: int
    restart_policy: str
    #: The pod template as written, with the framework container's port added when it has none. Shared by
    #: every pod of the type: builders copy it before changing anything.
    template: Mapping[str, Any]
    #: The port the replicas listen on: the framework container's named port, else the default.
    port: int


@dataclass(frozen=True)
class JobSpec(Generic[OptionsT]):
    """A job read once, every default applied: what the builders, status and policies take.

    Replica types are canonical and in the framework's order, and only the types the framework knows are
    there. `options` holds the framework's own fields, as its `parse_options` read them.
    """

    kind: str
    api_version: str
    name: str
    namespace: str
    uid: str
    #: `metadata.generation` as stored (the status copies it into `observedGeneration`); None when unset.
    generation: Any
    annotations: Mapping[str, Any]
    replicas: Mapping[str, ReplicaSpec]
    run_policy: RunPolicy
    #: The replica type whose success is the job's success (Chief or Master), if the job has one.
    chief_type: str | None
    #: The framework's port, for replica types the job does not have.
    default_port: int
    options: OptionsT

    @property
    def counts(self) -> dict[str, int]:
        """Canonical replica type → number of replicas, in the framework's order."""
        return {rt: spec.replicas for rt, spec in self.replicas.items()}

    @property
    def slots(self) -> list[Slot]:
        """Every replica the spec asks for, in the framework's type order and then by index."""
        return [Slot(rt, i) for rt, spec in self.replicas.items() for i in range(spec.replicas)]

    def port(self, replica_type: str) -> int:
        spec = self.replicas.get(replica_type)
        return spec.port if spec is not None else self.default_port

    def host(self, replica_type: str, index: int) -> str:
        """The replica's Pod and Service name, which resolves from pods in the same namespace."""
        return f"{self.name}-{replica_type.lower()}-{index}"


def parse(job: dict[str, Any], framework: JobKind[OptionsT]) -> JobSpec[OptionsT]:
    """`job` read once, as `with_defaults` would store it; never raises (`validation.py` says what is wrong).

    Only the pod templates are copied (one per replica type, not per replica), to add the default port.
    The framework's `parse_options` sees the spec and the job parsed so far (its options still None), so
    it can also resolve what every replica shares once (TF_CONFIG's cluster). That costs as much as the
    job has replicas: read a job whose counts may be past their bounds with `plan.parse_job`.
    """
    replicas = {}
    for replica_type, given in replica_specs(job, framework).items():
        template = copy.deepcopy(as_dict(given.get("template")))
        container = framework_container(as_dict(template.get("spec")), framework)
        if container is not None:
            _add_default_port(container, framework)
        replicas[replica_type] = ReplicaSpec(
            replica_type=replica_type,
            replicas=replica_count(given, framework.default_replicas.get(replica_type, 1)),
            restart_policy=replica_restart_policy(given, framework),
            template=template,
            port=_named_port(container, framework.port_name, framework.default_port),
        )
    unplanned: JobSpec[Any] = parse_unplanned(job, framework)
    common = dataclasses.replace(
        unplanned,
        replicas=replicas,
        chief_type=next((rt for rt in framework.chief_types if rt in replicas), None),
    )
    return dataclasses.replace(common, options=framework.parse_options(job_spec(job), common))


def parse_unplanned(job: dict[str, Any], framework: JobKind[Any]) -> JobSpec[None]:
    """`job` read without its replicas (none) or the framework's options (None): its identity, generation
    and run policy, which is what deciding the status of a job that will not be planned reads (one past
    its bounds, jobs/bounds.py), at a cost its replica counts do not change. Never raises."""
    metadata = as_dict(job.get("metadata"))
    return JobSpec(
        kind=framework.kind,
        api_version=str(job.get("apiVersion") or ""),
        name=job_name(job),
        namespace=job_namespace(job),
        uid=str(metadata.get("uid") or ""),
        generation=metadata.get("generation"),
        annotations=as_dict(metadata.get("annotations")),
        replicas={},
        run_policy=run_policy(job, framework),
        chief_type=None,
        default_port=framework.default_port,
        options=None,
    )


def job_name(job: dict[str, Any]) -> str:
    return str(as_dict(job.get("metadata")).get("name") or "")


def job_namespace(job: dict[str, Any]) -> str:
    return str(as_dict(job.get("metadata")).get("namespace") or DEFAULT_NAMESPACE)


def job_spec(job: dict[str, Any]) -> dict[str, Any]:
    return as_dict(job.get("spec"))


def replica_specs(job: dict[str, Any], framework: JobKind[Any]) -> dict[str, RawReplicaSpec]:
    """Replica specs keyed by canonical type (`worker` → `Worker`), in the framework's order.

    Keys the framework does not know, and values that are not mappings, are left out.
    """
    given = as_dict(job_spec(job).get(framework.spec_key))
    by_type: dict[str, RawReplicaSpec] = {}
    for key, spec in given.items():
        replica_type = framework.canonical_replica_type(key)
        if replica_type is not None and isinstance(spec, dict):
            by_type[replica_type] = cast(RawReplicaSpec, spec)
    return {rt: by_type[rt] for rt in framework.replica_types if rt in by_type}


def replica_container_name(job: dict[str, Any], framework: JobKind[Any], replica_type: str) -> str:
    """`framework_container_name` of a replica type's pod template (`worker`, `Worker`: any case)."""
    specs = replica_specs(job, framework)
    template = as_dict(specs.get(framework.canonical_replica_type(replica_type) or "", {}).get("template"))
    return framework_container_name(template, framework)


def pod_views(job: dict[str, Any], framework: JobKind[Any]) -> list[podsecurity.PodView]:
    """The pod template of every replica type, as the Pod Security check reads it, under the key the user
    wrote (`spec.tfReplicaSpecs.worker.template.spec`); keys the framework does not know are skipped."""
    views = []
    for key, spec in as_dict(job_spec(job).get(framework.spec_key)).items():
        if framework.canonical_replica_type(key) is None or not isinstance(spec, dict):
            continue
        template = as_dict(spec.get("template"))
        where = f"spec.{framework.spec_key}.{key}.template"
        views.append(
            podsecurity.pod_view(
                template.get("spec"),
                as_dict(template.get("metadata")).get("annotations"),
                path=f"{where}.spec",
                metadata_path=f"{where}.metadata",
            )
        )
    return views


def replica_count(spec: Mapping[str, object], default: int = 1) -> int:
    """`replicas`, defaulting to `default` (1, as Kubeflow does for most types; an MPIJob's Worker: 0);
    negative counts read as 0, malformed ones as the default."""
    if "replicas" not in spec or spec["replicas"] is None:
        return default
    count = as_int(spec["replicas"])
    return default if count is None else max(count, 0)


def replica_restart_policy(spec: RawReplicaSpec, framework: JobKind[Any]) -> str:
    policy = spec.get("restartPolicy")
    return (
        policy if isinstance(policy, str) and policy in RESTART_POLICIES else framework.default_restart_policy
    )


def replica_counts(job: dict[str, Any], framework: JobKind[Any]) -> dict[str, int]:
    """Canonical replica type → number of replicas, in the framework's order."""
    return {
        rt: replica_count(spec, framework.default_replicas.get(rt, 1))
        for rt, spec in replica_specs(job, framework).items()
    }


def run_policy(job: dict[str, Any], framework: JobKind[Any]) -> RunPolicy:
    given = cast(RawRunPolicy, as_dict(job_spec(job).get("runPolicy")))
    return RunPolicy(
        clean_pod_policy=clean_pod_policy(job, framework),
        ttl_seconds_after_finished=_non_negative(given.get("ttlSecondsAfterFinished")),
        active_deadline_seconds=_non_negative(given.get("activeDeadlineSeconds")),
        backoff_limit=_non_negative(given.get("backoffLimit")),
        suspend=given.get("suspend") is True,
        scheduling_policy=_scheduling_policy(
            cast(RawSchedulingPolicy, as_dict(given.get("schedulingPolicy")))
        ),
    )


def clean_pod_policy(job: dict[str, Any], framework: JobKind[Any]) -> str:
    """`runPolicy.cleanPodPolicy`; else the spec's own `cleanPodPolicy` (where Kubeflow v1's MPIJob kept it
    first, and its controller still reads it); else the group's default."""
    spec = job_spec(job)
    for given in (as_dict(spec.get("runPolicy")).get("cleanPodPolicy"), spec.get("cleanPodPolicy")):
        if given in CLEAN_POD_POLICIES:
            return str(given)
    return apigroups.default_clean_pod_policy(job, framework.default_clean_pod_policy)


def _scheduling_policy(given: RawSchedulingPolicy) -> SchedulingPolicy:
    min_resources = given.get("minResources")
    queue, priority_class = given.get("queue"), given.get("priorityClass")
    return SchedulingPolicy(
        min_available=as_int(given.get("minAvailable")),
        queue=queue if isinstance(queue, str) else "",
        min_resources=dict(min_resources) if isinstance(min_resources, dict) else None,
        priority_class=priority_class if isinstance(priority_class, str) else "",
        schedule_timeout_seconds=as_int(given.get("scheduleTimeoutSeconds")),
    )


def framework_container(template_spec: Mapping[str, Any], framework: CodeContainer) -> dict[str, Any] | None:
    """The container that runs the framework's code, which gets the cluster environment and the port: the
    one named `framework.container_name` (Kubeflow v1 requires it for TFJob, PyTorchJob and the others);
    for a kind whose Kubeflow controller takes the first container whatever its name (MPIJob's
    `Containers[0]`: `first_container_runs_code`), the first one when none has that name."""
    containers = template_spec.get("containers")
    if not isinstance(containers, list):
        return None
    named = next(
        (c for c in containers if isinstance(c, dict) and c.get("name") == framework.container_name), None
    )
    if named is not None or not framework.first_container_runs_code:
        return named
    first = containers[0] if containers else None
    return first if isinstance(first, dict) else None


def framework_container_name(pod: Mapping[str, Any], framework: CodeContainer) -> str:
    """The name of `framework_container` in a pod or a pod template: the container whose exit code decides
    a replica's outcome and whose logs the dashboard shows first."""
    container = framework_container(as_dict(pod.get("spec")), framework)
    name = container.get("name") if container is not None else None
    return name if isinstance(name, str) else framework.container_name


def with_defaults(job: dict[str, Any], framework: JobKind[Any]) -> dict[str, Any]:
    """A deep copy of `job` with every default filled in, as the mutating webhook would store it.

    Replica keys become canonical, each replica gets `replicas` and `restartPolicy`, the framework's
    container gets its port when it has none, `runPolicy.cleanPodPolicy` and the framework's own spec
    fields (e.g. TF `successPolicy`, PyTorch `elasticPolicy` bounds) get their defaults, and the namespace
    defaults to `default`.
    Applying it twice gives the same result.
    """
    job = copy.deepcopy(job)
    for part in ("metadata", "spec"):
        if not isinstance(job.get(part), dict):
            job[part] = {}
    job["metadata"].setdefault("namespace", DEFAULT_NAMESPACE)
    spec = job["spec"]
    specs = replica_specs(job, framework)
    for replica_type, replica_spec in specs.items():
        replica_spec["replicas"] = replica_count(
            replica_spec, framework.default_replicas.get(replica_type, 1)
        )
        replica_spec["restartPolicy"] = replica_restart_policy(replica_spec, framework)
        template_spec = as_dict(as_dict(replica_spec.get("template")).get("spec"))
        container = framework_container(template_spec, framework)
        if container is not None:
            _add_default_port(container, framework)
    spec[framework.spec_key] = specs
    policy = spec.setdefault("runPolicy", {})
    if isinstance(policy, dict):
        policy.setdefault("cleanPodPolicy", clean_pod_policy(job, framework))
    framework.default_extra_fields(spec)
    return job


def _add_default_port(container: dict[str, Any], framework: JobKind[Any]) -> None:
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    if not any(isinstance(p, dict) and p.get("name") == framework.port_name for p in ports):
        ports.append(
            {"name": framework.port_name, "containerPort": framework.default_port, "protocol": "TCP"}
        )


def _named_port(container: dict[str, Any] | None, port_name: str, default: int) -> int:
    """The container's port named `port_name` (the first with a number), else `default`."""
    ports = (container or {}).get("ports")
    for port in ports if isinstance(ports, list) else []:
        if isinstance(port, dict) and port.get("name") == port_name:
            number = as_int(port.get("containerPort"))
            if number is not None:
                return number
    return default


def _non_negative(value: object) -> int | None:
    number = as_int(value)
    return number if number is not None and number >= 0 else None
