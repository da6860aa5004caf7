"""What the operator core needs to know about a training framework, and nothing more.

A framework is one small class: class attributes describe its kind, replica types and container,
`parse_options()` reads its own spec fields once, and `environment()` returns the variables its processes
read to find each other, from the parsed job (`jobs.spec.JobSpec`). Everything else (pods, services,
status, policies) is generic and lives outside this package.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, cast

import fields
from jobs import spec as jobspec


@dataclass(frozen=True)
class FieldRef:
    """A variable the kubelet fills in from the pod's own fields (the downward API), for what is known only
    once the pod runs: Paddle's master announces its `status.podIP`."""

    field_path: str


@dataclass(frozen=True)
class Count:
    """A number among a framework's own spec fields that sizes the work of running a job (processes in each
    pod, the most replicas an elastic job may scale to), with the `limits.Limits` field that bounds it:
    `jobs.bounds` holds it there before anything is planned."""

    #: The field as written, e.g. `spec.nprocPerNode`.
    path: str
    value: int
    #: What it counts, in the error's words: `processes per node`, `replicas`.
    what: str
    #: The bound's field in `limits.Limits`, e.g. `processes_per_node`.
    limit: str

    @classmethod
    def of_replicas(cls, path: str, value: int) -> Count:
        """Replicas (pods) of the job, bounded by `replicas_per_job`."""
        return cls(path, value, "replicas", "replicas_per_job")

    @classmethod
    def of_processes(cls, path: str, value: int) -> Count:
        """Processes in one pod, bounded by `processes_per_node`."""
        return cls(path, value, "processes per node", "processes_per_node")


#: What `environment()` returns: variable name → value, or a `FieldRef` for the kubelet to fill in. Order
#: matters: a value may refer to an earlier variable as `$(NAME)`.
Environment = Mapping[str, str | FieldRef]


class Framework(Generic[jobspec.OptionsT]):
    """Base class of a framework plugin; subclasses set the class attributes and `environment()`, and those
    with spec fields of their own subclass `Framework[TheirOptions]` and override `parse_options()`."""

    #: Custom resource kind, plural and short name: `TFJob`, `tfjobs`, `tfjob` (the last two follow from the
    #: kind, as Kubeflow names them, unless the class sets them).
    kind: ClassVar[str]
    plural: ClassVar[str]
    short_name: ClassVar[str]
    #: The spec field holding the replica specs, e.g. `tfReplicaSpecs`.
    spec_key: ClassVar[str]
    #: Replica types in canonical casing; their order is the order of every generated list.
    replica_types: ClassVar[tuple[str, ...]]
    #: Types whose success is the job's success (at most one may appear in a job).
    chief_types: ClassVar[tuple[str, ...]] = ()
    #: Types every job must have, and types that must have exactly one replica.
    required_types: ClassVar[tuple[str, ...]] = ()
    singleton_types: ClassVar[tuple[str, ...]] = ()
    #: The type whose replica 0 decides success when there is no chief, and that gets the master role.
    worker_type: ClassVar[str] = "Worker"
    #: The container that receives the cluster environment and the port.
    container_name: ClassVar[str]
    #: Whether the first container stands in for one of another name (jobs.spec.framework_container).
    first_container_runs_code: ClassVar[bool] = False
    #: The container port's name; by default `<short name>-port` (`tfjob-port`), as Kubeflow names it.
    port_name: ClassVar[str]
    default_port: ClassVar[int]
    default_restart_policy: ClassVar[str] = "Never"
    default_clean_pod_policy: ClassVar[str] = "None"
    #: Framework-specific spec fields and their defaults (e.g. TF `successPolicy`).
    extra_spec_fields: ClassVar[Mapping[str, Any]] = {}
    #: Framework-specific spec fields with no default (e.g. PyTorch `elasticPolicy`).
    optional_spec_fields: ClassVar[tuple[str, ...]] = ()
    #: Replicas of a type whose replica spec leaves `replicas` out, where it is not 1 (MPIJob Worker: 0).
    default_replicas: ClassVar[Mapping[str, int]] = {}
    #: Whether each replica gets a headless Service of its own name (MPI: one Service for the job instead).
    replica_services: ClassVar[bool] = True
    #: Kinds of the children `extra_children()` returns beyond Services: a ConfigMap is watched (and
    #: updated when it differs); a Secret is only ever created, never read (the operator may not read them).
    extra_child_kinds: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Fill in the names that follow from a new `kind` (plural, short name, port name) that the class
        does not set itself."""
        super().__init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:
            return
        cls.short_name = cls.__dict__.get("short_name", cls.kind.lower())
        cls.plural = cls.__dict__.get("plural", f"{cls.kind.lower()}s")
        cls.port_name = cls.__dict__.get("port_name", f"{cls.short_name}-port")

    def __init__(self, cluster_domain: str = "") -> None:
        """`cluster_domain` (e.g. `cluster.local`) is appended to fully qualified service names."""
        self.cluster_domain = cluster_domain.strip(".")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cluster_domain={self.cluster_domain!r})"

    # --- what a subclass provides -------------------------------------------------------------

    def environment(
        self, job: jobspec.JobSpec[jobspec.OptionsT], replica_type: str, index: int
    ) -> Environment:
        """Variables for the framework container of replica `index` of `replica_type` (canonical)."""
        raise NotImplementedError

    def parse_options(self, spec: Mapping[str, Any], job: jobspec.JobSpec[None]) -> jobspec.OptionsT:
        """The framework's own spec fields (`extra_spec_fields`, `optional_spec_fields`) read once, defaults
        applied, tolerant of bad values (validation reports them), and anything every replica shares that
        is worth resolving once; `job` is the job parsed so far. A framework without such fields keeps
        this default: no options (None)."""
        return cast(jobspec.OptionsT, None)

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[fields.FieldError]:
        """Check `extra_spec_fields` and `optional_spec_fields`; the default accepts anything."""
        return []

    def counts(self, spec: Mapping[str, Any]) -> list[Count]:
        """The framework's own spec fields that size the work (beyond the replicas, which `jobs.bounds`
        counts for every framework), as written, where they read as whole numbers (validation reports the
        others); the default: none."""
        return []

    def workers_succeeded(
        self, job: jobspec.JobSpec[jobspec.OptionsT], succeeded: Mapping[int, bool]
    ) -> bool:
        """Without a chief, whether the workers (index → exited 0) make the job succeed: worker 0 decides."""
        return succeeded.get(0, False)

    def extra_children(
        self,
        job: jobspec.JobSpec[jobspec.OptionsT],
        owner: Mapping[str, Any],
        labels: Mapping[str, str],
        pods: Sequence[Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        """Children the job needs besides its replicas' pods and services (MPI: the hostfile ConfigMap, the
        SSH Secret, the job's Service), given the controller `owner` reference, the `labels` that list the
        job's children, and the job's observed `pods`. Pure; the default: none."""
        return []

    def customize_pod(
        self, job: jobspec.JobSpec[jobspec.OptionsT], replica_type: str, index: int, pod_spec: dict[str, Any]
    ) -> None:
        """Change the pod spec of a replica (a private copy) beyond the environment: volumes, hostname.
        The default changes nothing."""

    def may_create_pod(
        self,
        job: jobspec.JobSpec[jobspec.OptionsT],
        replica_type: str,
        index: int,
        pods: Mapping[str, Mapping[str, Any]],
    ) -> bool:
        """Whether the missing pod of this replica may be created now, given the job's observed pods by name
        (MPI: the launcher waits for its workers). The default: always."""
        return True

    def complete_child(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """An extra child just before it is created, with what a plan must not decide because it is not
        deterministic (MPI: a fresh SSH key in its Secret). The default returns it unchanged."""
        return manifest

    def default_extra_fields(self, spec: dict[str, Any]) -> None:
        """Fill the defaults of the framework's own spec fields in place (replica specs are already
        defaulted); the default sets each missing `extra_spec_fields` entry."""
        for field, default in self.extra_spec_fields.items():
            spec.setdefault(field, default)

    # --- helpers shared by every framework ----------------------------------------------------

    @classmethod
    def canonical_replica_type(cls, name: object) -> str | None:
        """`worker`, `WORKER` and `Worker` all mean `Worker`; unknown names give None."""
        if not isinstance(name, str):
            return None
        return _replica_types_by_lower_name(cls.replica_types).get(name.lower())

    def fqdn(self, job: jobspec.JobSpec[Any], replica_type: str, index: int) -> str:
        """`<service>.<namespace>.svc`, plus the cluster domain when one is configured."""
        name = f"{job.host(replica_type, index)}.{job.namespace}.svc"
        return f"{name}.{self.cluster_domain}" if self.cluster_domain else name


@functools.cache
def _replica_types_by_lower_name(replica_types: tuple[str, ...]) -> dict[str, str]:
    """A framework's replica types by their lower-case names (asked for every replica of every run)."""
    return {replica_type.lower(): replica_type for replica_type in replica_types}
