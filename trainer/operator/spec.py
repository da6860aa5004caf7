"""Parse once, at the door: a TrainJob and a (Cluster)TrainingRuntime become frozen values (Kubeflow
Trainer 2.3's API, as PyPI's kubeflow-trainer-api models it). `trainer.operator.resolution` joins the two.

Pod templates stay plain dicts (they are opaque to us, and copied before anything changes them).
Every problem is reported with its field path, all at once (`fields`); every count (nodes,
processes, replicas, parallelism) is bounded by `limits` here, so no door plans what it cannot run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import fields
from kube import podresources
from trainer import constants as c
from trainer.operator import policies, readers

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
    env: tuple[fields.RawDict, ...] = ()
    num_nodes: int | None = None
    num_proc_per_node: int | None = None
    resources_per_node: fields.RawDict | None = None


@dataclass(frozen=True)
class Initializer:
    """`spec.initializer.dataset` or `.model`: where to download from, with which credentials."""

    storage_uri: str | None = None
    env: tuple[fields.RawDict, ...] = ()
    secret_name: str | None = None


@dataclass(frozen=True)
class ReplicatedJobPatch:
    """One `runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]` entry, as its parts."""

    name: str
    job_labels: Mapping[str, str]
    job_annotations: Mapping[str, str]
    pod_labels: Mapping[str, str]
    pod_annotations: Mapping[str, str]
    pod_spec: fields.RawDict


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
    pod_template: fields.RawDict
    depends_on: tuple[Dependency, ...]
    # JobSet's group of replicated jobs (its group-name, group-replicas and job-group-index pod labels).
    group_name: str = c.DEFAULT_GROUP_NAME
    # The Job template's `backoffLimit`: how many failures (restarts, under OnFailure) fail one of its Jobs.
    backoff_limit: int = c.DEFAULT_BACKOFF_LIMIT


@dataclass(frozen=True)
class ClaimTemplate:
    """One `template.spec.volumeClaimPolicies[].templates[]` entry: a PersistentVolumeClaim the TrainJob's
    pods share (JobSet's volume claim policies; Trainer's torchtune runtimes keep their initializers'
    downloads in one). `owned`: deleted with the TrainJob (`retentionPolicy.whenDeleted: Delete`, the
    default) rather than kept (`Retain`)."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: fields.RawDict
    owned: bool


@dataclass(frozen=True)
class Runtime:
    kind: str
    name: str
    namespace: str | None
    labels: Mapping[str, str]
    ml_policy: policies.MLPolicy | None
    pod_group_policy: policies.PodGroupPolicy | None
    labels_to_propagate: Mapping[str, str]
    annotations_to_propagate: Mapping[str, str]
    subdomain: str | None
    publish_not_ready_addresses: bool
    replicated_jobs: tuple[ReplicatedJob, ...]
    volume_claims: tuple[ClaimTemplate, ...] = ()

    def job(self, name: str) -> ReplicatedJob | None:
        return next((job for job in self.replicated_jobs if job.name == name), None)

    def trainer_job(self) -> ReplicatedJob | None:
        return next((job for job in self.replicated_jobs if job.ancestor == c.ANCESTOR_TRAINER), None)


# --- Parsing --------------------------------------------------------------------------------------------


class RawTrainJobSpec(TypedDict, total=False):
    """A TrainJob's `spec` as written (Trainer's `TrainJobSpec`): the fields `parse_train_job` reads, each
    value as given, until its reader checks it."""

    runtimeRef: object
    trainer: object
    initializer: object
    runtimePatches: object
    suspend: object
    managedBy: object
    activeDeadlineSeconds: object


class RawRuntimeSpec(TypedDict, total=False):
    """A (Cluster)TrainingRuntime's `spec` as written (Trainer's `TrainingRuntimeSpec`), each value as
    given, until its reader checks it."""

    mlPolicy: object
    podGroupPolicy: object
    template: object


def parse_train_job(obj: Mapping[str, Any]) -> TrainJob:
    """A TrainJob manifest → `TrainJob`, or `SpecError` naming every wrong field."""
    found = fields.ErrorList()
    metadata = fields.obj(found, "metadata", obj.get("metadata"))
    spec = cast(RawTrainJobSpec, fields.obj(found, "spec", obj.get("spec")))
    name = fields.text(found, "metadata.name", metadata.get("name"), required=True) or ""
    ref = fields.obj(found, "spec.runtimeRef", spec.get("runtimeRef"), required=True)
    kind = fields.text(found, "spec.runtimeRef.kind", ref.get("kind")) or c.CLUSTER_TRAINING_RUNTIME
    if kind not in c.RUNTIME_KINDS:
        found.add("spec.runtimeRef.kind", f"must be one of {', '.join(c.RUNTIME_KINDS)}, not {kind!r}")
    api_group = fields.text(found, "spec.runtimeRef.apiGroup", ref.get("apiGroup")) or c.GROUP
    if api_group != c.GROUP:
        found.add("spec.runtimeRef.apiGroup", f"must be {c.GROUP}, not {api_group!r}")
    runtime_ref = RuntimeRef(
        name=fields.text(found, "spec.runtimeRef.name", ref.get("name"), required=True) or "",
        kind=kind,
        api_group=api_group,
    )
    managed_by = fields.text(found, "spec.managedBy", spec.get("managedBy")) or c.MANAGED_BY_TRAINER
    if managed_by not in c.MANAGED_BY_VALUES:
        found.add("spec.managedBy", f"must be one of {', '.join(c.MANAGED_BY_VALUES)}, not {managed_by!r}")
    initializer = fields.obj(found, "spec.initializer", spec.get("initializer"))
    job = TrainJob(
        name=name,
        namespace=fields.text(found, "metadata.namespace", metadata.get("namespace")) or "default",
        uid=fields.text(found, "metadata.uid", metadata.get("uid")) or "",
        runtime_ref=runtime_ref,
        trainer=_trainer(found, spec.get("trainer")),
        dataset=_initializer(found, "spec.initializer.dataset", initializer.get("dataset")),
        model=_initializer(found, "spec.initializer.model", initializer.get("model")),
        runtime_patches=_runtime_patches(found, spec.get("runtimePatches")),
        suspend=fields.flag(found, "spec.suspend", spec.get("suspend")),
        managed_by=managed_by,
        active_deadline_seconds=fields.integer(
            found, "spec.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), minimum=1
        ),
    )
    found.raise_if_any()
    return job


def parse_runtime(obj: Mapping[str, Any]) -> Runtime:
    """A TrainingRuntime or ClusterTrainingRuntime manifest → `Runtime`, or `SpecError`."""
    found = fields.ErrorList()
    kind = obj.get("kind", c.CLUSTER_TRAINING_RUNTIME)
    if kind not in c.RUNTIME_KINDS:
        found.add("kind", f"must be one of {', '.join(c.RUNTIME_KINDS)}, not {kind!r}")
    metadata = fields.obj(found, "metadata", obj.get("metadata"))
    spec = cast(RawRuntimeSpec, fields.obj(found, "spec", obj.get("spec")))
    template = fields.obj(found, "spec.template", spec.get("template"))
    template_metadata = fields.obj(found, "spec.template.metadata", template.get("metadata"))
    template_spec = fields.obj(found, "spec.template.spec", template.get("spec"))
    network = fields.obj(found, "spec.template.spec.network", template_spec.get("network"))
    publish = network.get("publishNotReadyAddresses")
    runtime = Runtime(
        kind=str(kind),
        name=fields.text(found, "metadata.name", metadata.get("name"), required=True) or "",
        namespace=fields.text(found, "metadata.namespace", metadata.get("namespace")),
        labels=fields.text_map(found, "metadata.labels", metadata.get("labels")),
        ml_policy=policies.ml_policy(found, spec.get("mlPolicy")),
        pod_group_policy=policies.pod_group_policy(found, spec.get("podGroupPolicy")),
        labels_to_propagate=fields.text_map(
            found, "spec.template.metadata.labels", template_metadata.get("labels")
        ),
        annotations_to_propagate=fields.text_map(
            found, "spec.template.metadata.annotations", template_metadata.get("annotations")
        ),
        subdomain=readers.dns_label(found, "spec.template.spec.network.subdomain", network.get("subdomain")),
        # JobSet publishes not-ready addresses unless told otherwise: MPI's launcher must resolve nodes early.
        publish_not_ready_addresses=True if publish is None else bool(publish),
        replicated_jobs=_replicated_jobs(found, template_spec.get("replicatedJobs")),
        volume_claims=_volume_claims(found, template_spec.get("volumeClaimPolicies")),
    )
    found.raise_if_any()
    return runtime


# --- Field parsers --------------------------------------------------------------------------------------


def _trainer(found: fields.ErrorList, raw: object) -> Trainer | None:
    if raw is None:
        return None
    spec = fields.obj(found, "spec.trainer", raw)
    resources = _resources(found, "spec.trainer.resourcesPerNode", spec.get("resourcesPerNode"))
    return Trainer(
        image=fields.text(found, "spec.trainer.image", spec.get("image")),
        command=fields.texts(
            found, "spec.trainer.command", spec.get("command"), max_items=readers.MAX_ARGUMENTS
        ),
        args=fields.texts(found, "spec.trainer.args", spec.get("args"), max_items=readers.MAX_ARGUMENTS),
        env=readers.env(found, "spec.trainer.env", spec.get("env")),
        num_nodes=readers.count(
            found, "spec.trainer.numNodes", spec.get("numNodes"), what="nodes", bound="replicas_per_job"
        ),
        num_proc_per_node=readers.processes(found, "spec.trainer.numProcPerNode", spec.get("numProcPerNode")),
        resources_per_node=copy.deepcopy(resources),
    )


def _resources(found: fields.ErrorList, path: str, raw: object) -> fields.RawDict | None:
    """`resourcesPerNode` as a pod's resources: `limits` and `requests` each a map of resource names to
    quantities (`4`, `"1500m"`, `"2Gi"`), `claims` a list; anything else is named and left out. The first
    wrong amount is named and the rest are not read: the API server would name every one (a map of 50,000
    bad amounts was an answer of 50,000 causes, 117 MiB to read back)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        found.add(path, "must be an object with limits and/or requests")
        return None
    before = found.count
    for part in ("limits", "requests"):
        amounts = fields.obj(found, f"{path}.{part}", raw.get(part))
        wrong = next((name for name, amount in amounts.items() if not _amount(amount)), None)
        if wrong is not None:
            found.add(f"{path}.{part}.{wrong}", "must be a quantity (a string or a number)")
            break
    if found.count == before:  # well-formed: now what the API server checks (no negative, requests ≤ limits)
        problem = podresources.first_problem({k: v for k, v in raw.items() if k != "claims"}, path)
        if problem is not None:
            found.add(*problem)
    return raw if found.count == before else None


def _amount(value: object) -> bool:
    return isinstance(value, (str, int, float)) and readers.quantity_value(value) is not None


def _initializer(found: fields.ErrorList, path: str, raw: object) -> Initializer | None:
    if raw is None:
        return None
    spec = fields.obj(found, path, raw)
    secret = fields.obj(found, f"{path}.secretRef", spec.get("secretRef"))
    return Initializer(
        storage_uri=fields.text(found, f"{path}.storageUri", spec.get("storageUri")),
        env=readers.env(found, f"{path}.env", spec.get("env")),
        secret_name=fields.text(
            found, f"{path}.secretRef.name", secret.get("name"), required="secretRef" in spec
        ),
    )


def _runtime_patches(found: fields.ErrorList, raw: object) -> tuple[RuntimePatch, ...]:
    patches = []
    managers: set[str] = set()
    for index, item in enumerate(
        fields.items(found, "spec.runtimePatches", raw, max_items=readers.MAX_RUNTIME_PATCHES)
    ):
        path = f"spec.runtimePatches[{index}]"
        entry = fields.obj(found, path, item)
        manager = fields.text(found, f"{path}.manager", entry.get("manager"), required=True) or ""
        if manager in managers:
            found.add(f"{path}.manager", f"{manager!r} appears twice; each manager owns one patch")
        managers.add(manager)
        spec = fields.obj(found, f"{path}.trainingRuntimeSpec", entry.get("trainingRuntimeSpec"))
        template = fields.obj(found, f"{path}.trainingRuntimeSpec.template", spec.get("template"))
        tpath = f"{path}.trainingRuntimeSpec.template"
        metadata = fields.obj(found, f"{tpath}.metadata", template.get("metadata"))
        tspec = fields.obj(found, f"{tpath}.spec", template.get("spec"))
        jobs = []
        for jindex, rjob in enumerate(
            fields.items(
                found,
                f"{tpath}.spec.replicatedJobs",
                tspec.get("replicatedJobs"),
                max_items=readers.MAX_REPLICATED_JOBS,
            )
        ):
            jpath = f"{tpath}.spec.replicatedJobs[{jindex}]"
            rdict = fields.obj(found, jpath, rjob)
            jtemplate = fields.obj(found, f"{jpath}.template", rdict.get("template"))
            jmeta = fields.obj(found, f"{jpath}.template.metadata", jtemplate.get("metadata"))
            jspec = fields.obj(found, f"{jpath}.template.spec", jtemplate.get("spec"))
            pod = fields.obj(found, f"{jpath}.template.spec.template", jspec.get("template"))
            pmeta = fields.obj(found, f"{jpath}.template.spec.template.metadata", pod.get("metadata"))
            name = fields.text(found, f"{jpath}.name", rdict.get("name"), required=True) or ""
            job_labels, job_annotations = _labels_and_annotations(found, f"{jpath}.template.metadata", jmeta)
            pod_labels, pod_annotations = _labels_and_annotations(
                found, f"{jpath}.template.spec.template.metadata", pmeta
            )
            jobs.append(
                ReplicatedJobPatch(
                    name=name,
                    job_labels=job_labels,
                    job_annotations=job_annotations,
                    pod_labels=pod_labels,
                    pod_annotations=pod_annotations,
                    pod_spec=copy.deepcopy(
                        fields.obj(found, f"{jpath}.template.spec.template.spec", pod.get("spec"))
                    ),
                )
            )
        labels, annotations = _labels_and_annotations(found, f"{tpath}.metadata", metadata)
        patches.append(
            RuntimePatch(manager=manager, labels=labels, annotations=annotations, replicated_jobs=tuple(jobs))
        )
    return tuple(patches)


def _labels_and_annotations(
    found: fields.ErrorList, path: str, metadata: fields.RawDict
) -> tuple[dict[str, str], dict[str, str]]:
    """The `labels` and `annotations` of the metadata at `path`, each a map of names to strings."""
    return (
        fields.text_map(found, f"{path}.labels", metadata.get("labels")),
        fields.text_map(found, f"{path}.annotations", metadata.get("annotations")),
    )


def _volume_claims(found: fields.ErrorList, raw: object) -> tuple[ClaimTemplate, ...]:
    """JobSet's `volumeClaimPolicies`: each policy's claim templates, with its retention policy."""
    claims: list[ClaimTemplate] = []
    for index, item in enumerate(fields.items(found, "spec.template.spec.volumeClaimPolicies", raw)):
        path = f"spec.template.spec.volumeClaimPolicies[{index}]"
        policy = fields.obj(found, path, item)
        retention = fields.obj(found, f"{path}.retentionPolicy", policy.get("retentionPolicy"))
        when_deleted = fields.text(found, f"{path}.retentionPolicy.whenDeleted", retention.get("whenDeleted"))
        if when_deleted not in (None, "Delete", "Retain"):
            found.add(
                f"{path}.retentionPolicy.whenDeleted", f"must be Delete or Retain, not {when_deleted!r}"
            )
        templates = fields.items(found, f"{path}.templates", policy.get("templates"))
        if not templates:
            found.add(f"{path}.templates", "must list at least one claim template")
        for tindex, template_item in enumerate(templates):
            tpath = f"{path}.templates[{tindex}]"
            template = fields.obj(found, tpath, template_item)
            metadata = fields.obj(found, f"{tpath}.metadata", template.get("metadata"))
            name = (
                readers.dns_label(found, f"{tpath}.metadata.name", metadata.get("name"), required=True) or ""
            )
            if any(claim.name == name for claim in claims):
                found.add(f"{tpath}.metadata.name", f"{name!r} is used by an earlier claim template")
            labels, annotations = _labels_and_annotations(found, f"{tpath}.metadata", metadata)
            claims.append(
                ClaimTemplate(
                    name=name,
                    labels=labels,
                    annotations=annotations,
                    spec=fields.obj(found, f"{tpath}.spec", template.get("spec")),
                    owned=when_deleted != "Retain",
                )
            )
    return tuple(claims)


def _replicated_jobs(found: fields.ErrorList, raw: object) -> tuple[ReplicatedJob, ...]:
    items = fields.items(
        found, "spec.template.spec.replicatedJobs", raw, max_items=readers.MAX_REPLICATED_JOBS
    )
    if not items:
        found.add("spec.template.spec.replicatedJobs", "must list at least one replicated job")
    jobs: list[ReplicatedJob] = []
    for index, item in enumerate(items):
        path = f"spec.template.spec.replicatedJobs[{index}]"
        entry = fields.obj(found, path, item)
        name = readers.dns_label(found, f"{path}.name", entry.get("name"), required=True) or ""
        if any(job.name == name for job in jobs):
            found.add(f"{path}.name", f"{name!r} is used by an earlier replicated job")
        template = fields.obj(found, f"{path}.template", entry.get("template"))
        metadata = fields.obj(found, f"{path}.template.metadata", template.get("metadata"))
        job_spec = fields.obj(found, f"{path}.template.spec", template.get("spec"))
        pod_template = fields.obj(found, f"{path}.template.spec.template", job_spec.get("template"))
        pod_spec = fields.obj(found, f"{path}.template.spec.template.spec", pod_template.get("spec"))
        if not fields.items(
            found, f"{path}.template.spec.template.spec.containers", pod_spec.get("containers")
        ):
            found.add(f"{path}.template.spec.template.spec.containers", "must list at least one container")
        labels = fields.text_map(found, f"{path}.template.metadata.labels", metadata.get("labels"))
        depends_on = []
        for dindex, dep in enumerate(fields.items(found, f"{path}.dependsOn", entry.get("dependsOn"))):
            dpath = f"{path}.dependsOn[{dindex}]"
            dep_dict = fields.obj(found, dpath, dep)
            dep_name = fields.text(found, f"{dpath}.name", dep_dict.get("name"), required=True) or ""
            status = fields.text(found, f"{dpath}.status", dep_dict.get("status"), required=True) or ""
            if status not in ("Ready", "Complete"):
                found.add(f"{dpath}.status", f"must be Ready or Complete, not {status!r}")
            if dep_name and all(job.name != dep_name for job in jobs):
                found.add(f"{dpath}.name", f"must name an earlier replicated job, not {dep_name!r}")
            depends_on.append(Dependency(dep_name, status))
        replicas = readers.count(
            found, f"{path}.replicas", entry.get("replicas"), what="replicas", bound="replicas_per_job"
        )
        jobs.append(
            ReplicatedJob(
                name=name,
                replicas=1 if replicas is None else replicas,
                parallelism=readers.count(
                    found,
                    f"{path}.template.spec.parallelism",
                    job_spec.get("parallelism"),
                    what="pods",
                    bound="replicas_per_job",
                ),
                ancestor=labels.get(c.LABEL_ANCESTOR),
                labels=labels,
                annotations=fields.text_map(
                    found, f"{path}.template.metadata.annotations", metadata.get("annotations")
                ),
                pod_template=copy.deepcopy(pod_template),
                depends_on=tuple(depends_on),
                # A label value on every pod: a DNS-1035 label, as JobSet's webhook validates it.
                group_name=readers.dns_label(found, f"{path}.groupName", entry.get("groupName"))
                or c.DEFAULT_GROUP_NAME,
                backoff_limit=_backoff_limit(found, f"{path}.template.spec.backoffLimit", job_spec),
            )
        )
    return tuple(jobs)


def _backoff_limit(found: fields.ErrorList, path: str, job_spec: Mapping[str, Any]) -> int:
    """A Job template's `backoffLimit` (an int32 of at least 0), Kubernetes' 6 when unset."""
    limit = fields.integer(found, path, job_spec.get("backoffLimit"), minimum=0, maximum=2**31 - 1)
    return c.DEFAULT_BACKOFF_LIMIT if limit is None else limit
