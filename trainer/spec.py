"""Parse once, at the door: a TrainJob and a (Cluster)TrainingRuntime become frozen values, and `resolve`
joins them into the one `ResolvedSpec` the planner reads (Kubeflow Trainer 2.3's API and semantics:
pkg/runtime/core/trainingruntime.go, plugins/jobset/builder.go, the plugins' Validate).

Pod templates stay plain dicts (they are opaque to us, and copied before anything changes them).
Every problem is reported with its field path, all at once (`hyperparam.space.errors`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperparam.space import errors
from trainer import constants as c

RawDict = dict[str, Any]


# --- The TrainJob ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuntimeRef:
    name: str
    kind: str = c.CLUSTER_TRAINING_RUNTIME
    api_group: str = c.GROUP


@dataclass(frozen=True)
class Trainer:
    """`spec.trainer`: what a TrainJob overrides on the runtime's trainer container; None means "keep"."""

    image: str | None = None
    command: tuple[str, ...] | None = None
    args: tuple[str, ...] | None = None
    env: tuple[RawDict, ...] = ()
    num_nodes: int | None = None
    num_proc_per_node: int | None = None
    resources_per_node: RawDict | None = None


@dataclass(frozen=True)
class Initializer:
    """`spec.initializer.dataset` or `.model`: where to download from, with which credentials."""

    storage_uri: str | None = None
    env: tuple[RawDict, ...] = ()
    secret_name: str | None = None


@dataclass(frozen=True)
class ReplicatedJobPatch:
    """One `runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]` entry, as its parts."""

    name: str
    job_labels: Mapping[str, str]
    job_annotations: Mapping[str, str]
    pod_labels: Mapping[str, str]
    pod_annotations: Mapping[str, str]
    pod_spec: RawDict


@dataclass(frozen=True)
class RuntimePatch:
    manager: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    replicated_jobs: tuple[ReplicatedJobPatch, ...]


@dataclass(frozen=True)
class TrainJob:
    name: str
    namespace: str
    uid: str
    runtime_ref: RuntimeRef
    trainer: Trainer | None
    dataset: Initializer | None
    model: Initializer | None
    runtime_patches: tuple[RuntimePatch, ...]
    suspend: bool
    managed_by: str
    active_deadline_seconds: int | None

    @property
    def ours(self) -> bool:
        """Whether our controller runs it; MultiKueue-managed jobs are Kueue's to place."""
        return self.managed_by == c.MANAGED_BY_TRAINER


# --- The runtime ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvInjectionTarget:
    job_name: str
    container_names: tuple[str, ...]


@dataclass(frozen=True)
class TorchPolicy:
    env_injection: tuple[EnvInjectionTarget, ...] = ()


@dataclass(frozen=True)
class MPIPolicy:
    num_proc_per_node: int = 1
    mpi_implementation: str = c.MPI_IMPLEMENTATION_OPENMPI
    ssh_auth_mount_path: str = c.MPI_DEFAULT_SSH_AUTH_MOUNT_PATH
    run_launcher_as_node: bool = False


@dataclass(frozen=True)
class MLPolicy:
    """`mlPolicy`: at most one framework source; `framework` is "plain" when none is set."""

    num_nodes: int = 1
    framework: str = "plain"
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None


@dataclass(frozen=True)
class PodGroupPolicy:
    """`podGroupPolicy`: which gang scheduler, with its one knob."""

    scheduler: str  # "coscheduling" | "volcano"
    schedule_timeout_seconds: int | None = None
    network_topology: RawDict | None = None


@dataclass(frozen=True)
class Dependency:
    """A JobSet `dependsOn` entry: start only once `name` is `status` (Ready or Complete)."""

    name: str
    status: str


@dataclass(frozen=True)
class ReplicatedJob:
    """One `template.spec.replicatedJobs[]` entry of a runtime."""

    name: str
    replicas: int
    parallelism: int | None
    ancestor: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    pod_template: RawDict
    depends_on: tuple[Dependency, ...]


@dataclass(frozen=True)
class Runtime:
    kind: str
    name: str
    namespace: str | None
    labels: Mapping[str, str]
    ml_policy: MLPolicy | None
    pod_group_policy: PodGroupPolicy | None
    labels_to_propagate: Mapping[str, str]
    annotations_to_propagate: Mapping[str, str]
    subdomain: str | None
    publish_not_ready_addresses: bool
    replicated_jobs: tuple[ReplicatedJob, ...]

    def job(self, name: str) -> ReplicatedJob | None:
        return next((job for job in self.replicated_jobs if job.name == name), None)

    def trainer_job(self) -> ReplicatedJob | None:
        return next((job for job in self.replicated_jobs if job.ancestor == c.ANCESTOR_TRAINER), None)


# --- The two joined -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedJob:
    """A replicated job as it will run: `count` pods per replica, its pod template with every override in."""

    name: str
    replicas: int
    count: int
    ancestor: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    pod_template: RawDict
    depends_on: tuple[Dependency, ...]


@dataclass(frozen=True)
class ResolvedSpec:
    job: TrainJob
    runtime: Runtime
    ml_policy: MLPolicy
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    subdomain: str
    resources_per_node: RawDict
    replicated_jobs: tuple[ResolvedJob, ...]

    @property
    def name(self) -> str:
        return self.job.name

    def find(self, name: str) -> ResolvedJob | None:
        return next((job for job in self.replicated_jobs if job.name == name), None)


# --- Parsing --------------------------------------------------------------------------------------------


def parse_train_job(obj: Mapping[str, Any]) -> TrainJob:
    """A TrainJob manifest → `TrainJob`, or `SpecError` naming every wrong field."""
    found = errors.ErrorList()
    metadata = _dict(found, "metadata", obj.get("metadata"))
    spec = _dict(found, "spec", obj.get("spec"))
    name = _str(found, "metadata.name", metadata.get("name"), required=True) or ""
    ref = _dict(found, "spec.runtimeRef", spec.get("runtimeRef"), required=True)
    kind = _str(found, "spec.runtimeRef.kind", ref.get("kind")) or c.CLUSTER_TRAINING_RUNTIME
    if kind not in c.RUNTIME_KINDS:
        found.add("spec.runtimeRef.kind", f"must be one of {', '.join(c.RUNTIME_KINDS)}, not {kind!r}")
    api_group = _str(found, "spec.runtimeRef.apiGroup", ref.get("apiGroup")) or c.GROUP
    if api_group != c.GROUP:
        found.add("spec.runtimeRef.apiGroup", f"must be {c.GROUP}, not {api_group!r}")
    runtime_ref = RuntimeRef(
        name=_str(found, "spec.runtimeRef.name", ref.get("name"), required=True) or "",
        kind=kind,
        api_group=api_group,
    )
    managed_by = _str(found, "spec.managedBy", spec.get("managedBy")) or c.MANAGED_BY_TRAINER
    if managed_by not in c.MANAGED_BY_VALUES:
        found.add("spec.managedBy", f"must be one of {', '.join(c.MANAGED_BY_VALUES)}, not {managed_by!r}")
    initializer = _dict(found, "spec.initializer", spec.get("initializer"))
    job = TrainJob(
        name=name,
        namespace=_str(found, "metadata.namespace", metadata.get("namespace")) or "default",
        uid=_str(found, "metadata.uid", metadata.get("uid")) or "",
        runtime_ref=runtime_ref,
        trainer=_trainer(found, spec.get("trainer")),
        dataset=_initializer(found, "spec.initializer.dataset", initializer.get("dataset")),
        model=_initializer(found, "spec.initializer.model", initializer.get("model")),
        runtime_patches=_runtime_patches(found, spec.get("runtimePatches")),
        suspend=_bool(found, "spec.suspend", spec.get("suspend")),
        managed_by=managed_by,
        active_deadline_seconds=_int(
            found, "spec.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), minimum=1
        ),
    )
    found.raise_if_any()
    return job


def parse_runtime(obj: Mapping[str, Any]) -> Runtime:
    """A TrainingRuntime or ClusterTrainingRuntime manifest → `Runtime`, or `SpecError`."""
    found = errors.ErrorList()
    kind = obj.get("kind", c.CLUSTER_TRAINING_RUNTIME)
    if kind not in c.RUNTIME_KINDS:
        found.add("kind", f"must be one of {', '.join(c.RUNTIME_KINDS)}, not {kind!r}")
    metadata = _dict(found, "metadata", obj.get("metadata"))
    spec = _dict(found, "spec", obj.get("spec"))
    template = _dict(found, "spec.template", spec.get("template"))
    template_metadata = _dict(found, "spec.template.metadata", template.get("metadata"))
    template_spec = _dict(found, "spec.template.spec", template.get("spec"))
    network = _dict(found, "spec.template.spec.network", template_spec.get("network"))
    publish = network.get("publishNotReadyAddresses")
    runtime = Runtime(
        kind=str(kind),
        name=_str(found, "metadata.name", metadata.get("name"), required=True) or "",
        namespace=_str(found, "metadata.namespace", metadata.get("namespace")),
        labels=_str_map(found, "metadata.labels", metadata.get("labels")),
        ml_policy=_ml_policy(found, spec.get("mlPolicy")),
        pod_group_policy=_pod_group_policy(found, spec.get("podGroupPolicy")),
        labels_to_propagate=_str_map(found, "spec.template.metadata.labels", template_metadata.get("labels")),
        annotations_to_propagate=_str_map(
            found, "spec.template.metadata.annotations", template_metadata.get("annotations")
        ),
        subdomain=_str(found, "spec.template.spec.network.subdomain", network.get("subdomain")),
        # JobSet publishes not-ready addresses unless told otherwise: MPI's launcher must resolve nodes early.
        publish_not_ready_addresses=True if publish is None else bool(publish),
        replicated_jobs=_replicated_jobs(found, template_spec.get("replicatedJobs")),
    )
    found.raise_if_any()
    return runtime


# --- Resolution -----------------------------------------------------------------------------------------


def resolve(job: TrainJob, runtime: Runtime) -> ResolvedSpec:
    """The TrainJob's overrides applied to its runtime: counts, images, env, resources, patches."""
    found = errors.ErrorList()
    _check_reference(found, job, runtime)
    policy = runtime.ml_policy or MLPolicy()
    _check_trainer(found, job, runtime, policy)
    templates = {rjob.name: copy.deepcopy(rjob.pod_template) for rjob in runtime.replicated_jobs}
    job_meta = {rjob.name: (dict(rjob.labels), dict(rjob.annotations)) for rjob in runtime.replicated_jobs}
    labels = dict(runtime.labels_to_propagate)
    annotations = dict(runtime.annotations_to_propagate)
    for index, patch in enumerate(job.runtime_patches):
        labels.update(patch.labels)
        annotations.update(patch.annotations)
        _apply_patch(found, f"spec.runtimePatches[{index}]", patch, templates, job_meta)
    found.raise_if_any()

    runtime_resources = _runtime_trainer_resources(runtime)
    trainer = job.trainer
    resources_per_node = (
        copy.deepcopy(trainer.resources_per_node)
        if trainer is not None and trainer.resources_per_node is not None
        else runtime_resources
    )
    num_nodes = trainer.num_nodes if trainer is not None and trainer.num_nodes is not None else None
    resolved = []
    for rjob in runtime.replicated_jobs:
        template = templates[rjob.name]
        is_trainer = rjob.ancestor == c.ANCESTOR_TRAINER
        launcher_as_node = policy.mpi is not None and policy.mpi.run_launcher_as_node and rjob.name == c.NODE
        if is_trainer:
            _override_trainer_container(template, trainer)
        if trainer is not None and (is_trainer or launcher_as_node):
            upsert_env(_container(template, c.NODE), trainer.env)
            if trainer.resources_per_node is not None:
                _merge_resources(_container(template, c.NODE), trainer.resources_per_node)
        if rjob.ancestor == c.DATASET_INITIALIZER:
            _apply_initializer(_container(template, c.DATASET_INITIALIZER), job.dataset)
        if rjob.ancestor == c.MODEL_INITIALIZER:
            _apply_initializer(_container(template, c.MODEL_INITIALIZER), job.model)
        job_labels, job_annotations = job_meta[rjob.name]
        resolved.append(
            ResolvedJob(
                name=rjob.name,
                # Trainer runs every initializer and trainer step as one Job (trainer issue #2318).
                replicas=1 if rjob.ancestor else rjob.replicas,
                count=_count(rjob, policy, num_nodes),
                ancestor=rjob.ancestor,
                labels=job_labels,
                annotations=job_annotations,
                pod_template=template,
                depends_on=rjob.depends_on,
            )
        )
    return ResolvedSpec(
        job=job,
        runtime=runtime,
        ml_policy=policy,
        labels=labels,
        annotations=annotations,
        subdomain=runtime.subdomain or job.name,
        resources_per_node=resources_per_node or {},
        replicated_jobs=tuple(resolved),
    )


def _count(rjob: ReplicatedJob, policy: MLPolicy, job_num_nodes: int | None) -> int:
    """Pods per replica: the trainer step runs numNodes pods; MPI's `node` job the nodes besides the
    launcher when the launcher trains too; anything else its template's parallelism."""
    num_nodes = job_num_nodes if job_num_nodes is not None else policy.num_nodes
    if policy.mpi is not None:
        if rjob.name == c.NODE:
            return max(num_nodes - 1, 1) if policy.mpi.run_launcher_as_node else num_nodes
        if rjob.name == c.LAUNCHER:
            return 1
    if rjob.ancestor == c.ANCESTOR_TRAINER:
        return num_nodes
    return rjob.parallelism if rjob.parallelism is not None else 1


def _check_reference(found: errors.ErrorList, job: TrainJob, runtime: Runtime) -> None:
    ref = job.runtime_ref
    if ref.kind != runtime.kind or ref.name != runtime.name:
        found.add("spec.runtimeRef", f"names {ref.kind} {ref.name!r}, not {runtime.kind} {runtime.name!r}")
    if runtime.kind == c.TRAINING_RUNTIME and runtime.namespace not in (None, job.namespace):
        found.add(
            "spec.runtimeRef.name",
            f"TrainingRuntime {runtime.name!r} is in namespace {runtime.namespace!r}; "
            f"a TrainJob may only use one in its own namespace {job.namespace!r}",
        )


def _check_trainer(found: errors.ErrorList, job: TrainJob, runtime: Runtime, policy: MLPolicy) -> None:
    trainer = job.trainer
    if trainer is not None:
        trainer_job = runtime.trainer_job()
        if trainer_job is None or find_container(trainer_job.pod_template, c.NODE) is None:
            found.add(
                "spec.trainer",
                f"runtime {runtime.name!r} has no replicated job labelled "
                f"{c.LABEL_ANCESTOR}={c.ANCESTOR_TRAINER} with a container named {c.NODE!r} to override",
            )
        reserved = {
            "torch": c.TORCH_RESERVED_ENV,
            "mpi": c.MPI_RESERVED_ENV,
            "xgboost": c.XGBOOST_RESERVED_ENV,
        }.get(policy.framework, frozenset())
        clashes = sorted({env["name"] for env in trainer.env} & reserved)
        if clashes:
            found.add("spec.trainer.env", f"must not set the reserved variables {', '.join(clashes)}")
        if (
            policy.mpi is not None
            and policy.mpi.run_launcher_as_node
            and (trainer.num_nodes or 1) >= 2
            and (runtime.job(c.LAUNCHER) is None or runtime.job(c.NODE) is None)
        ):
            found.add(
                "spec.trainer.numNodes",
                "must be 1 when an MPI runtime with runLauncherAsNode lacks a launcher or a node job",
            )
    if policy.torch is not None:
        for target in policy.torch.env_injection:
            rjob = runtime.job(target.job_name)
            for name in target.container_names:
                if rjob is None or (
                    find_container(rjob.pod_template, name) is None
                    and find_container(rjob.pod_template, name, init=True) is None
                ):
                    found.add(
                        "spec.runtimeRef",
                        f"envInjection target job {target.job_name!r} container {name!r} "
                        "is not in the runtime's template",
                    )


def _apply_patch(
    found: errors.ErrorList,
    path: str,
    patch: RuntimePatch,
    templates: dict[str, RawDict],
    job_meta: dict[str, tuple[dict[str, str], dict[str, str]]],
) -> None:
    for index, rpatch in enumerate(patch.replicated_jobs):
        where = f"{path}.trainingRuntimeSpec.template.spec.replicatedJobs[{index}]"
        template = templates.get(rpatch.name)
        if template is None:
            found.add(f"{where}.name", f"the runtime has no replicated job {rpatch.name!r}")
            continue
        job_labels, job_annotations = job_meta[rpatch.name]
        job_labels.update(rpatch.job_labels)
        job_annotations.update(rpatch.job_annotations)
        metadata = template.setdefault("metadata", {})
        if rpatch.pod_labels:
            metadata.setdefault("labels", {}).update(rpatch.pod_labels)
        if rpatch.pod_annotations:
            metadata.setdefault("annotations", {}).update(rpatch.pod_annotations)
        _patch_pod_spec(found, f"{where}.template.spec.template.spec", rpatch.pod_spec, template)


# Pod spec fields a runtime patch may set, by how they merge (as the strategic merge patch would).
_REPLACED = ("affinity", "securityContext", "serviceAccountName", "terminationGracePeriodSeconds")
_MERGED_BY_NAME = ("tolerations", "volumes", "imagePullSecrets", "schedulingGates")
_PATCHABLE = (*_REPLACED, *_MERGED_BY_NAME, "nodeSelector", "containers", "initContainers")


def _patch_pod_spec(found: errors.ErrorList, path: str, patch: RawDict, template: RawDict) -> None:
    spec = template.setdefault("spec", {})
    for key, value in patch.items():
        if key not in _PATCHABLE:
            found.add(f"{path}.{key}", f"may not be patched; patchable fields are {', '.join(_PATCHABLE)}")
        elif key in _REPLACED:
            spec[key] = copy.deepcopy(value)
        elif key == "nodeSelector":
            spec.setdefault("nodeSelector", {}).update(value)
        elif key in _MERGED_BY_NAME:
            spec[key] = _merge_list(spec.get(key), value, "key" if key == "tolerations" else "name")
        else:
            _patch_containers(found, f"{path}.{key}", value, spec.setdefault(key, []))


def _patch_containers(found: errors.ErrorList, path: str, patches: list[RawDict], containers: list) -> None:
    for index, patch in enumerate(patches):
        name = patch.get("name")
        container = next((x for x in containers if isinstance(x, dict) and x.get("name") == name), None)
        if container is None:
            found.add(f"{path}[{index}].name", f"the runtime's pod has no container {name!r}")
            continue
        if patch.get("env"):
            if name in c.API_OWNED_CONTAINERS:
                found.add(
                    f"{path}[{index}].env",
                    f"may not be set for container {name!r}; use spec.trainer or spec.initializer",
                )
                continue
            upsert_env(container, tuple(patch["env"]))
        if "volumeMounts" in patch:
            container["volumeMounts"] = _merge_list(
                container.get("volumeMounts"), patch["volumeMounts"], "name"
            )
        if "securityContext" in patch:
            container["securityContext"] = copy.deepcopy(patch["securityContext"])


def _merge_list(current: object, extra: list, key: str) -> list:
    kept = list(current) if isinstance(current, list) else []
    for item in extra:
        same = next((i for i, old in enumerate(kept) if key in item and old.get(key) == item.get(key)), None)
        if same is None:
            kept.append(copy.deepcopy(item))
        else:
            kept[same] = copy.deepcopy(item)
    return kept


def _override_trainer_container(template: RawDict, trainer: Trainer | None) -> None:
    if trainer is None:
        return
    container = _container(template, c.NODE)
    if trainer.image is not None:
        container["image"] = trainer.image
    if trainer.command is not None:
        container["command"] = list(trainer.command)
    if trainer.args is not None:
        container["args"] = list(trainer.args)


def _apply_initializer(container: RawDict | None, source: Initializer | None) -> None:
    if container is None or source is None:
        return
    if source.storage_uri is not None:
        upsert_env(container, ({"name": c.INITIALIZER_ENV_STORAGE_URI, "value": source.storage_uri},))
    upsert_env(container, source.env)
    if source.secret_name is not None:
        container.setdefault("envFrom", []).append({"secretRef": {"name": source.secret_name}})


def _runtime_trainer_resources(runtime: Runtime) -> RawDict | None:
    """The runtime's trainer container resources: what resourcesPerNode is when a TrainJob sets none."""
    for rjob in runtime.replicated_jobs:
        if rjob.name == c.NODE or rjob.ancestor == c.ANCESTOR_TRAINER:
            container = find_container(rjob.pod_template, c.NODE)
            if container is not None and isinstance(container.get("resources"), dict):
                return copy.deepcopy(container["resources"])
    return None


def _merge_resources(container: RawDict | None, resources: RawDict) -> None:
    """resourcesPerNode over the runtime's resources, per resource name (the job's value wins)."""
    if container is None:
        return
    merged = container.setdefault("resources", {})
    for part in ("limits", "requests", "claims"):
        if part not in resources:
            continue
        if part == "claims":
            merged["claims"] = copy.deepcopy(resources["claims"])
        else:
            merged.setdefault(part, {}).update(resources[part])


def upsert_env(container: RawDict, env: tuple[RawDict, ...] | list[RawDict]) -> None:
    """Set each variable in the container's env, replacing a same-named one in place (Trainer's
    apply.UpsertEnvVars: order of first appearance is kept, so the pod spec does not churn)."""
    current = container.setdefault("env", [])
    for entry in env:
        same = next((i for i, old in enumerate(current) if old.get("name") == entry["name"]), None)
        if same is None:
            current.append(copy.deepcopy(entry))
        else:
            current[same] = copy.deepcopy(entry)


def find_container(template: RawDict, name: str, *, init: bool = False) -> RawDict | None:
    """The container called `name` in a pod template, or None."""
    containers = template.get("spec", {}).get("initContainers" if init else "containers") or []
    return next((x for x in containers if isinstance(x, dict) and x.get("name") == name), None)


def _container(template: RawDict, name: str) -> RawDict:
    """The named container; callers checked it exists (or, for initializers, it may be absent)."""
    return find_container(template, name) or {}


# --- Field parsers --------------------------------------------------------------------------------------


def _trainer(found: errors.ErrorList, raw: object) -> Trainer | None:
    if raw is None:
        return None
    spec = _dict(found, "spec.trainer", raw)
    resources = spec.get("resourcesPerNode")
    if resources is not None and not isinstance(resources, dict):
        found.add("spec.trainer.resourcesPerNode", "must be an object with limits and/or requests")
        resources = None
    return Trainer(
        image=_str(found, "spec.trainer.image", spec.get("image")),
        command=_str_tuple(found, "spec.trainer.command", spec.get("command")),
        args=_str_tuple(found, "spec.trainer.args", spec.get("args")),
        env=_env(found, "spec.trainer.env", spec.get("env")),
        num_nodes=_int(found, "spec.trainer.numNodes", spec.get("numNodes"), minimum=1),
        num_proc_per_node=_int(found, "spec.trainer.numProcPerNode", spec.get("numProcPerNode"), minimum=1),
        resources_per_node=copy.deepcopy(resources),
    )


def _initializer(found: errors.ErrorList, path: str, raw: object) -> Initializer | None:
    if raw is None:
        return None
    spec = _dict(found, path, raw)
    secret = _dict(found, f"{path}.secretRef", spec.get("secretRef"))
    return Initializer(
        storage_uri=_str(found, f"{path}.storageUri", spec.get("storageUri")),
        env=_env(found, f"{path}.env", spec.get("env")),
        secret_name=_str(found, f"{path}.secretRef.name", secret.get("name"), required="secretRef" in spec),
    )


def _runtime_patches(found: errors.ErrorList, raw: object) -> tuple[RuntimePatch, ...]:
    patches = []
    managers: set[str] = set()
    for index, item in enumerate(_list(found, "spec.runtimePatches", raw)):
        path = f"spec.runtimePatches[{index}]"
        entry = _dict(found, path, item)
        manager = _str(found, f"{path}.manager", entry.get("manager"), required=True) or ""
        if manager in managers:
            found.add(f"{path}.manager", f"{manager!r} appears twice; each manager owns one patch")
        managers.add(manager)
        spec = _dict(found, f"{path}.trainingRuntimeSpec", entry.get("trainingRuntimeSpec"))
        template = _dict(found, f"{path}.trainingRuntimeSpec.template", spec.get("template"))
        tpath = f"{path}.trainingRuntimeSpec.template"
        metadata = _dict(found, f"{tpath}.metadata", template.get("metadata"))
        tspec = _dict(found, f"{tpath}.spec", template.get("spec"))
        jobs = []
        for jindex, rjob in enumerate(
            _list(found, f"{tpath}.spec.replicatedJobs", tspec.get("replicatedJobs"))
        ):
            jpath = f"{tpath}.spec.replicatedJobs[{jindex}]"
            rdict = _dict(found, jpath, rjob)
            jtemplate = _dict(found, f"{jpath}.template", rdict.get("template"))
            jmeta = _dict(found, f"{jpath}.template.metadata", jtemplate.get("metadata"))
            jspec = _dict(found, f"{jpath}.template.spec", jtemplate.get("spec"))
            pod = _dict(found, f"{jpath}.template.spec.template", jspec.get("template"))
            pmeta = _dict(found, f"{jpath}.template.spec.template.metadata", pod.get("metadata"))
            jobs.append(
                ReplicatedJobPatch(
                    name=_str(found, f"{jpath}.name", rdict.get("name"), required=True) or "",
                    job_labels=_str_map(found, f"{jpath}.template.metadata.labels", jmeta.get("labels")),
                    job_annotations=_str_map(
                        found, f"{jpath}.template.metadata.annotations", jmeta.get("annotations")
                    ),
                    pod_labels=_str_map(
                        found, f"{jpath}.template.spec.template.metadata.labels", pmeta.get("labels")
                    ),
                    pod_annotations=_str_map(
                        found,
                        f"{jpath}.template.spec.template.metadata.annotations",
                        pmeta.get("annotations"),
                    ),
                    pod_spec=copy.deepcopy(
                        _dict(found, f"{jpath}.template.spec.template.spec", pod.get("spec"))
                    ),
                )
            )
        patches.append(
            RuntimePatch(
                manager=manager,
                labels=_str_map(found, f"{tpath}.metadata.labels", metadata.get("labels")),
                annotations=_str_map(found, f"{tpath}.metadata.annotations", metadata.get("annotations")),
                replicated_jobs=tuple(jobs),
            )
        )
    return tuple(patches)


_FRAMEWORKS = ("torch", "mpi", "jax", "xgboost", "flux")


def _ml_policy(found: errors.ErrorList, raw: object) -> MLPolicy | None:
    if raw is None:
        return None
    spec = _dict(found, "spec.mlPolicy", raw)
    sources = [name for name in _FRAMEWORKS if spec.get(name) is not None]
    if len(sources) > 1:
        found.add(
            "spec.mlPolicy", f"must set at most one of {', '.join(_FRAMEWORKS)}, not {', '.join(sources)}"
        )
    if "flux" in sources:
        found.add("spec.mlPolicy.flux", "is not supported yet (torch, mpi, jax and xgboost are)")
    framework = sources[0] if sources else "plain"
    torch = None
    if spec.get("torch") is not None:
        torch_spec = _dict(found, "spec.mlPolicy.torch", spec["torch"])
        injection = _dict(found, "spec.mlPolicy.torch.envInjection", torch_spec.get("envInjection"))
        targets = []
        for index, item in enumerate(
            _list(found, "spec.mlPolicy.torch.envInjection.targets", injection.get("targets"))
        ):
            path = f"spec.mlPolicy.torch.envInjection.targets[{index}]"
            target = _dict(found, path, item)
            targets.append(
                EnvInjectionTarget(
                    job_name=_str(found, f"{path}.jobName", target.get("jobName"), required=True) or "",
                    container_names=_str_tuple(found, f"{path}.containerNames", target.get("containerNames"))
                    or (),
                )
            )
        torch = TorchPolicy(env_injection=tuple(targets))
    mpi = None
    if spec.get("mpi") is not None:
        mpi_spec = _dict(found, "spec.mlPolicy.mpi", spec["mpi"])
        implementation = (
            _str(found, "spec.mlPolicy.mpi.mpiImplementation", mpi_spec.get("mpiImplementation"))
            or c.MPI_IMPLEMENTATION_OPENMPI
        )
        if implementation not in c.MPI_IMPLEMENTATIONS:
            found.add(
                "spec.mlPolicy.mpi.mpiImplementation",
                f"must be one of {', '.join(c.MPI_IMPLEMENTATIONS)}, not {implementation!r}",
            )
        slots = _int(found, "spec.mlPolicy.mpi.numProcPerNode", mpi_spec.get("numProcPerNode"), minimum=1)
        mpi = MPIPolicy(
            num_proc_per_node=1 if slots is None else slots,
            mpi_implementation=implementation,
            ssh_auth_mount_path=_str(
                found, "spec.mlPolicy.mpi.sshAuthMountPath", mpi_spec.get("sshAuthMountPath")
            )
            or c.MPI_DEFAULT_SSH_AUTH_MOUNT_PATH,
            run_launcher_as_node=_bool(
                found, "spec.mlPolicy.mpi.runLauncherAsNode", mpi_spec.get("runLauncherAsNode")
            ),
        )
    num_nodes = _int(found, "spec.mlPolicy.numNodes", spec.get("numNodes"), minimum=1)
    return MLPolicy(
        num_nodes=1 if num_nodes is None else num_nodes, framework=framework, torch=torch, mpi=mpi
    )


def _pod_group_policy(found: errors.ErrorList, raw: object) -> PodGroupPolicy | None:
    if raw is None:
        return None
    spec = _dict(found, "spec.podGroupPolicy", raw)
    chosen = [name for name in ("coscheduling", "volcano") if spec.get(name) is not None]
    if len(chosen) != 1:
        found.add("spec.podGroupPolicy", "must set exactly one of coscheduling, volcano")
        return None
    source = _dict(found, f"spec.podGroupPolicy.{chosen[0]}", spec[chosen[0]])
    if chosen[0] == "coscheduling":
        return PodGroupPolicy(
            scheduler="coscheduling",
            schedule_timeout_seconds=_int(
                found,
                "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds",
                source.get("scheduleTimeoutSeconds"),
                minimum=0,
            ),
        )
    topology = source.get("networkTopology")
    return PodGroupPolicy(scheduler="volcano", network_topology=copy.deepcopy(topology) if topology else None)


def _replicated_jobs(found: errors.ErrorList, raw: object) -> tuple[ReplicatedJob, ...]:
    items = _list(found, "spec.template.spec.replicatedJobs", raw)
    if not items:
        found.add("spec.template.spec.replicatedJobs", "must list at least one replicated job")
    jobs: list[ReplicatedJob] = []
    for index, item in enumerate(items):
        path = f"spec.template.spec.replicatedJobs[{index}]"
        entry = _dict(found, path, item)
        name = _str(found, f"{path}.name", entry.get("name"), required=True) or ""
        if any(job.name == name for job in jobs):
            found.add(f"{path}.name", f"{name!r} is used by an earlier replicated job")
        template = _dict(found, f"{path}.template", entry.get("template"))
        metadata = _dict(found, f"{path}.template.metadata", template.get("metadata"))
        job_spec = _dict(found, f"{path}.template.spec", template.get("spec"))
        pod_template = _dict(found, f"{path}.template.spec.template", job_spec.get("template"))
        pod_spec = _dict(found, f"{path}.template.spec.template.spec", pod_template.get("spec"))
        if not _list(found, f"{path}.template.spec.template.spec.containers", pod_spec.get("containers")):
            found.add(f"{path}.template.spec.template.spec.containers", "must list at least one container")
        labels = _str_map(found, f"{path}.template.metadata.labels", metadata.get("labels"))
        depends_on = []
        for dindex, dep in enumerate(_list(found, f"{path}.dependsOn", entry.get("dependsOn"))):
            dpath = f"{path}.dependsOn[{dindex}]"
            dep_dict = _dict(found, dpath, dep)
            dep_name = _str(found, f"{dpath}.name", dep_dict.get("name"), required=True) or ""
            status = _str(found, f"{dpath}.status", dep_dict.get("status"), required=True) or ""
            if status not in ("Ready", "Complete"):
                found.add(f"{dpath}.status", f"must be Ready or Complete, not {status!r}")
            if dep_name and all(job.name != dep_name for job in jobs):
                found.add(f"{dpath}.name", f"must name an earlier replicated job, not {dep_name!r}")
            depends_on.append(Dependency(dep_name, status))
        replicas = _int(found, f"{path}.replicas", entry.get("replicas"), minimum=1)
        jobs.append(
            ReplicatedJob(
                name=name,
                replicas=1 if replicas is None else replicas,
                parallelism=_int(
                    found, f"{path}.template.spec.parallelism", job_spec.get("parallelism"), minimum=1
                ),
                ancestor=labels.get(c.LABEL_ANCESTOR),
                labels=labels,
                annotations=_str_map(
                    found, f"{path}.template.metadata.annotations", metadata.get("annotations")
                ),
                pod_template=copy.deepcopy(pod_template),
                depends_on=tuple(depends_on),
            )
        )
    return tuple(jobs)


def _dict(found: errors.ErrorList, path: str, value: object, *, required: bool = False) -> RawDict:
    if value is None:
        if required:
            found.add(path, "is required")
        return {}
    if not isinstance(value, dict):
        found.add(path, f"must be an object, not {type(value).__name__}")
        return {}
    return value


def _list(found: errors.ErrorList, path: str, value: object) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        found.add(path, f"must be a list, not {type(value).__name__}")
        return []
    return value


def _str(found: errors.ErrorList, path: str, value: object, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            found.add(path, "is required")
        return None
    if not isinstance(value, str):
        found.add(path, f"must be a string, not {type(value).__name__}")
        return None
    return value


def _str_tuple(found: errors.ErrorList, path: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = _list(found, path, value)
    if not all(isinstance(item, str) for item in items):
        found.add(path, "must be a list of strings")
        return None
    return tuple(items)


def _str_map(found: errors.ErrorList, path: str, value: object) -> dict[str, str]:
    mapping = _dict(found, path, value)
    if not all(isinstance(v, str) for v in mapping.values()):
        found.add(path, "must map names to strings")
        return {}
    return dict(mapping)


def _int(found: errors.ErrorList, path: str, value: object, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        found.add(path, f"must be an integer, not {value!r}")
        return None
    if value < minimum:
        found.add(path, f"must be at least {minimum}, not {value}")
        return None
    return value


def _bool(found: errors.ErrorList, path: str, value: object) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        found.add(path, f"must be true or false, not {value!r}")
        return False
    return value


def _env(found: errors.ErrorList, path: str, value: object) -> tuple[RawDict, ...]:
    entries = []
    for index, item in enumerate(_list(found, path, value)):
        entry = _dict(found, f"{path}[{index}]", item)
        if _str(found, f"{path}[{index}].name", entry.get("name"), required=True) is not None:
            entries.append(copy.deepcopy(entry))
    return tuple(entries)
