"""A TrainJob's overrides applied to its runtime: the counts, images, env, resources and runtimePatches of
every replicated job, as Trainer resolves them before rendering its JobSet (pkg/runtime/core/
trainingruntime.go, plugins/jobset/builder.go, and the plugins' Validate for what is refused).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

import fields
import limits
from trainer import constants as c
from trainer.operator import policies, readers, spec, torchtune

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
    pod_template: fields.RawDict
    depends_on: tuple[spec.Dependency, ...]
    group_name: str = c.DEFAULT_GROUP_NAME
    backoff_limit: int = c.DEFAULT_BACKOFF_LIMIT


@dataclass(frozen=True)
class ResolvedSpec:
    job: spec.TrainJob
    runtime: spec.Runtime
    ml_policy: policies.MLPolicy
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    subdomain: str
    resources_per_node: fields.RawDict
    replicated_jobs: tuple[ResolvedJob, ...]

    @property
    def name(self) -> str:
        return self.job.name

    def find(self, name: str) -> ResolvedJob | None:
        return next((job for job in self.replicated_jobs if job.name == name), None)


# --- Resolution -----------------------------------------------------------------------------------------


def resolve(job: spec.TrainJob, runtime: spec.Runtime) -> ResolvedSpec:
    """The TrainJob's overrides applied to its runtime: counts, images, env, resources, patches."""
    found = fields.ErrorList()
    _check_reference(found, job, runtime)
    policy = runtime.ml_policy or policies.MLPolicy()
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
        node = find_container(template, c.NODE)
        is_trainer = rjob.ancestor == c.ANCESTOR_TRAINER
        launcher_as_node = policy.mpi is not None and policy.mpi.run_launcher_as_node and rjob.name == c.NODE
        if trainer is not None and node is not None and is_trainer:
            _override_trainer_container(node, trainer)
        if trainer is not None and node is not None and (is_trainer or launcher_as_node):
            upsert_env(node, trainer.env)
            if trainer.resources_per_node is not None:
                _merge_resources(node, trainer.resources_per_node)
        if rjob.ancestor in c.INITIALIZERS:
            source = job.dataset if rjob.ancestor == c.DATASET_INITIALIZER else job.model
            _apply_initializer(find_container(template, rjob.ancestor), source)
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
                group_name=rjob.group_name,
                backoff_limit=rjob.backoff_limit,
            )
        )
    if torchtune.runs_torchtune(job):
        nodes, gpus = num_nodes or 1, readers.gpus_per_node(resources_per_node or {})
        for path, message in torchtune.problems(job, runtime.name, nodes, gpus):
            found.add(path, message)
    _check_pod_count(found, job, runtime, policy, resolved)
    found.raise_if_any()
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


def _count(rjob: spec.ReplicatedJob, policy: policies.MLPolicy, job_num_nodes: int | None) -> int:
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


def _follows_num_nodes(rjob: spec.ReplicatedJob, policy: policies.MLPolicy) -> bool:
    """Whether the job's pod count is the TrainJob's numNodes (as `_count` decides it)."""
    if policy.mpi is not None and rjob.name in (c.NODE, c.LAUNCHER):
        return rjob.name == c.NODE
    return rjob.ancestor == c.ANCESTOR_TRAINER


def _check_pod_count(
    found: fields.ErrorList,
    job: spec.TrainJob,
    runtime: spec.Runtime,
    policy: policies.MLPolicy,
    resolved: list[ResolvedJob],
) -> None:
    """Every pod of every step together within `replicas_per_job` (each count was bounded alone when
    parsed; their products and sums are bounded here), named on what the TrainJob can change: its
    numNodes when fewer nodes would do, else the runtime it names. Arithmetic only: nothing is planned."""
    limit = limits.current().replicas_per_job
    by_nodes = {rjob.name for rjob in runtime.replicated_jobs if _follows_num_nodes(rjob, policy)}
    nodes = sum(rjob.replicas * rjob.count for rjob in resolved if rjob.name in by_nodes)
    others = sum(rjob.replicas * rjob.count for rjob in resolved if rjob.name not in by_nodes)
    total = nodes + others
    if total <= limit:
        return
    bound = limits.too_many("pods", total, "replicas_per_job")
    if job.trainer is not None and job.trainer.num_nodes is not None and others < limit:
        pods = "pod" if others == 1 else "pods"
        message = f"{bound}: {nodes} nodes and {others} {pods} of the runtime's other steps"
        readers.past_bound(found, "spec.trainer.numNodes", message)
    else:
        readers.past_bound(
            found, "spec.runtimeRef.name", f"{runtime.kind} {runtime.name!r} runs {total} pods: {bound}"
        )


def _check_reference(found: fields.ErrorList, job: spec.TrainJob, runtime: spec.Runtime) -> None:
    ref = job.runtime_ref
    if ref.kind != runtime.kind or ref.name != runtime.name:
        found.add("spec.runtimeRef", f"names {ref.kind} {ref.name!r}, not {runtime.kind} {runtime.name!r}")
    if runtime.kind == c.TRAINING_RUNTIME and runtime.namespace not in (None, job.namespace):
        found.add(
            "spec.runtimeRef.name",
            f"TrainingRuntime {runtime.name!r} is in namespace {runtime.namespace!r}; "
            f"a TrainJob may only use one in its own namespace {job.namespace!r}",
        )


def _check_trainer(
    found: fields.ErrorList, job: spec.TrainJob, runtime: spec.Runtime, policy: policies.MLPolicy
) -> None:
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
    found: fields.ErrorList,
    path: str,
    patch: spec.RuntimePatch,
    templates: dict[str, fields.RawDict],
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


def _patch_pod_spec(
    found: fields.ErrorList, path: str, patch: fields.RawDict, template: fields.RawDict
) -> None:
    pod_spec = template.setdefault("spec", {})
    for key, value in patch.items():
        if key not in _PATCHABLE:
            found.add(f"{path}.{key}", f"may not be patched; patchable fields are {', '.join(_PATCHABLE)}")
        elif key in _REPLACED:
            pod_spec[key] = copy.deepcopy(value)
        elif key == "nodeSelector":
            pod_spec.setdefault("nodeSelector", {}).update(value)
        elif key in _MERGED_BY_NAME:
            pod_spec[key] = _merge_list(pod_spec.get(key), value, "key" if key == "tolerations" else "name")
        else:
            _patch_containers(found, f"{path}.{key}", value, pod_spec.setdefault(key, []))


def _patch_containers(
    found: fields.ErrorList, path: str, patches: list[fields.RawDict], containers: list
) -> None:
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


def _override_trainer_container(container: fields.RawDict, trainer: spec.Trainer) -> None:
    if trainer.image is not None:
        container["image"] = trainer.image
    if trainer.command is not None:
        container["command"] = list(trainer.command)
    if trainer.args is not None:
        container["args"] = list(trainer.args)


def _apply_initializer(container: fields.RawDict | None, source: spec.Initializer | None) -> None:
    if container is None or source is None:
        return
    if source.storage_uri is not None:
        upsert_env(container, ({"name": c.INITIALIZER_ENV_STORAGE_URI, "value": source.storage_uri},))
    upsert_env(container, source.env)
    if source.secret_name is not None:
        container.setdefault("envFrom", []).append({"secretRef": {"name": source.secret_name}})


def _runtime_trainer_resources(runtime: spec.Runtime) -> fields.RawDict | None:
    """The runtime's trainer container resources: what resourcesPerNode is when a TrainJob sets none."""
    for rjob in runtime.replicated_jobs:
        if rjob.name == c.NODE or rjob.ancestor == c.ANCESTOR_TRAINER:
            container = find_container(rjob.pod_template, c.NODE)
            if container is not None and isinstance(container.get("resources"), dict):
                return copy.deepcopy(container["resources"])
    return None


def _merge_resources(container: fields.RawDict, resources: fields.RawDict) -> None:
    """resourcesPerNode over the runtime's resources, per resource name (the job's value wins)."""
    merged = container.setdefault("resources", {})
    for part in ("limits", "requests", "claims"):
        if part not in resources:
            continue
        if part == "claims":
            merged["claims"] = copy.deepcopy(resources["claims"])
        else:
            merged.setdefault(part, {}).update(resources[part])


def upsert_env(container: fields.RawDict, env: tuple[fields.RawDict, ...] | list[fields.RawDict]) -> None:
    """Set each variable in the container's env, replacing a same-named one in place (Trainer's
    apply.UpsertEnvVars: order of first appearance is kept, so the pod spec does not churn)."""
    readers.upsert_by_name(container.setdefault("env", []), env)


def find_container(template: fields.RawDict, name: str, *, init: bool = False) -> fields.RawDict | None:
    """The container called `name` in a pod template, or None."""
    containers = template.get("spec", {}).get("initContainers" if init else "containers") or []
    return next((x for x in containers if isinstance(x, dict) and x.get("name") == name), None)
