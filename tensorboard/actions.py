"""The write paths of the spawner: spawn a Tensorboard for a source, open it, stop it, cull idle ones.

None of these touch the database: the custom resource is the intent, and the mirror fills (or marks
deleted) the row when the watch event arrives. Logdirs come only from what a source recorded (a workflow's
`tensorboard` artifacts) or from paths an administrator configured, never from a string the user typed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fields import SpecError
from hyperparam.manifests import LABEL_BATCH, sweep_selector
from kube.client import KubeClient
from kube.conditions import is_true, timestamp
from kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from kube.events import recorder_for
from kube.resources import CONFIGMAP, WORKFLOW, ResourceType, label_selector

from .artifacts import (
    Collection,
    ObjectStore,
    SecretRef,
    collect,
    repository_from_configmap,
    repository_ref,
    resolved_repository,
    run_names,
    single_gcs_key,
    single_store,
    usable_artifacts,
    warnings_for,
)
from .conf import TensorboardConf
from .crd import TENSORBOARD
from .culling import should_cull
from .durations import format_duration
from .errors import (
    LogdirNotAllowed,
    NameTaken,
    NoTensorboardArtifacts,
    SourceNotFound,
    UnusableArtifacts,
)
from .manifests import ANNOTATION_LAST_ACCESS, API_VERSION, KIND
from .spec import parse_pvc_path

logger = logging.getLogger(__name__)

TENSORBOARD_RESOURCE = TENSORBOARD.resource_type
LABEL_SOURCE_KIND = "argoml.io/tensorboard-source-kind"
MAX_NAME_LENGTH = 253
SWEEP_FINISHED_PHASES = frozenset({"Succeeded", "Failed"})  # hyperparam/status.py


@dataclass(frozen=True)
class SourceKind:
    """A kind of object a TensorBoard can be spawned for, and the suffix its instance names carry."""

    kind: str
    rtype: ResourceType
    suffix: str  # "" for a Workflow: the instance takes the workflow's name


#: Argo's Workflow is known here; the site, which knows every app, registers the other kinds (a sweep, the
#: training jobs) at start-up (`register_source`, argoml_site/apps.py): their group, version and plural
#: reach the spawner without an arrow from tensorboard to jobs, hyperparam or trainer.
SOURCE_KINDS: dict[str, SourceKind] = {"Workflow": SourceKind("Workflow", WORKFLOW, "")}


def register_source(rtype: ResourceType, suffix: str) -> None:
    """Let TensorBoards be opened for objects of `rtype`; their instances are named `<name>-<suffix>`."""
    SOURCE_KINDS[rtype.kind] = SourceKind(rtype.kind, rtype, suffix)


# A job is over once one of these is True: Succeeded/Failed for the v1 kinds, Complete/Failed for a TrainJob.
JOB_FINISHED_CONDITIONS = ("Succeeded", "Complete", "Failed")


@dataclass(frozen=True)
class Logdirs:
    """What a source offers a TensorBoard: its runs, the S3 store they share, and what to warn about."""

    entries: list[dict[str, str]]
    store: ObjectStore | None = None
    warnings: list[str] = field(default_factory=list)
    running: bool = False  # the source may still record runs: the pod re-syncs them
    gcs_key: SecretRef | None = None  # the service-account key Secret of GCS artifacts, if Argo named one


@dataclass(frozen=True)
class Spawned:
    tensorboard: dict[str, Any]
    created: bool
    warnings: list[str]


# -- names -------------------------------------------------------------------------------------------
def tensorboard_name(kind: str, source: str) -> str:
    """The instance of a source: the workflow's own name, `<name>-<suffix>` for other kinds (so a sweep
    and a workflow of the same name get different instances); hashed when too long."""
    suffix = SOURCE_KINDS[kind].suffix
    name = f"{source}-{suffix}" if suffix else source
    if len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME_LENGTH - 9].rstrip('-.')}-{digest}"


# -- collecting logdirs ------------------------------------------------------------------------------
def _get(client: KubeClient, kind: SourceKind, namespace: str, name: str) -> dict[str, Any]:
    try:
        return client.get(kind.rtype, name, namespace)
    except NotFound:
        found = other_kinds_named(client, kind, namespace, name)
        raise SourceNotFound(
            not_found_message(kind.kind, namespace, name, found),
            kind=kind.kind,
            namespace=namespace,
            name=name,
            found_kinds=found,
        ) from None


def other_kinds_named(client: KubeClient, looked_for: SourceKind, namespace: str, name: str) -> list[str]:
    """The source kinds other than `looked_for` that have an object of this name in the namespace (one GET
    each, only on a miss): what the user most likely meant. A kind the cluster does not serve, or that
    our RBAC cannot read, counts as absent."""
    found = []
    for other in SOURCE_KINDS.values():
        if other.kind == looked_for.kind:
            continue
        try:
            client.get(other.rtype, name, namespace)
        except ApiError:
            continue
        found.append(other.kind)
    return found


def not_found_message(kind: str, namespace: str, name: str, found: list[str]) -> str:
    """What a miss says: the kind looked for, what else has the name, and how to name another kind."""
    message = f"{kind} {namespace}/{name} was not found (looked for kind {kind})."
    if found:
        also = " and ".join(f"a {other}" for other in found)
        message += f' There is {also} of that name: send "kind": "{found[0]}".'
    else:
        message += f' To open another kind, send "kind": one of {", ".join(SOURCE_KINDS)}.'
    return message


def _from_collections(collections: Sequence[Collection], source: str, *, running: bool = False) -> Logdirs:
    artifacts = usable_artifacts(collections, source)
    store = single_store(artifacts)
    gcs_key = single_gcs_key(artifacts)
    entries = [
        {"name": run, "path": artifact.path}
        | ({} if artifact.archive == "none" else {"archive": artifact.archive})
        for run, artifact in zip(run_names(artifacts), artifacts, strict=True)
    ]
    running = running or any(not collection.finished for collection in collections)
    return Logdirs(entries, store, warnings_for(collections), running, gcs_key)


def configured_repository(client: KubeClient, workflow: dict[str, Any]) -> dict[str, Any] | None:
    """The repository Argo would read for a workflow that does not record the one it used (Argo < 3.1):
    the ConfigMap its `spec.artifactRepositoryRef` names, or the namespace's `artifact-repositories` default.
    None when the workflow records it, or no such ConfigMap exists (then the spawner's settings apply)."""
    if resolved_repository(workflow) is not None:
        return None
    configmap, key = repository_ref(workflow)
    namespace = (workflow.get("metadata") or {}).get("namespace")
    try:
        found = client.get(CONFIGMAP, configmap, namespace)
    except NotFound:
        return None
    repository = repository_from_configmap(found, key)
    return dict(repository) if repository is not None else None


def _collect(client: KubeClient, workflow: dict[str, Any], conf: TensorboardConf) -> Collection:
    return collect(
        workflow,
        default_repository=conf.default_repository,
        configured_repository=configured_repository(client, workflow),
    )


def workflow_logdirs(client: KubeClient, workflow: dict[str, Any], conf: TensorboardConf) -> Logdirs:
    """One run per `tensorboard` artifact of the workflow's nodes."""
    name = (workflow.get("metadata") or {}).get("name")
    return _from_collections([_collect(client, workflow, conf)], f"Workflow {name}")


def sweep_logdirs(client: KubeClient, hpw: dict[str, Any], conf: TensorboardConf) -> Logdirs:
    """One run per trial of every batch Workflow of a HyperparamWorkflow, in batch order."""
    metadata = hpw.get("metadata") or {}
    selector = label_selector(sweep_selector(hpw))
    workflows = [
        item
        for page in client.list_pages(WORKFLOW, metadata.get("namespace"), label_selector=selector)
        for item in page.get("items") or ()
    ]
    workflows.sort(key=lambda wf: _batch_index(wf))
    if not workflows:
        raise NoTensorboardArtifacts(
            f"HyperparamWorkflow {metadata.get('name')} has started no Workflows yet; spawn it again once "
            "its first trials ran.",
            found=[],
        )
    collections = [_collect(client, wf, conf) for wf in workflows]
    phase = str((hpw.get("status") or {}).get("phase") or "")
    return _from_collections(
        collections,
        f"HyperparamWorkflow {metadata.get('name')}",
        running=phase not in SWEEP_FINISHED_PHASES,
    )


def _batch_index(workflow: dict[str, Any]) -> tuple[int, str]:
    metadata = workflow.get("metadata") or {}
    text = (metadata.get("labels") or {}).get(LABEL_BATCH, "")
    return (int(text) if str(text).isdigit() else 0, str(metadata.get("name") or ""))


def job_logdirs(job: dict[str, Any], conf: TensorboardConf) -> Logdirs:
    """A training job's one run (a v1 kind's or a TrainJob's): the logdir the administrator set for jobs
    (TENSORBOARD_JOB_LOGDIR: a bucket prefix or a claim, pvc://claim/…)."""
    metadata = job.get("metadata") or {}
    kind = job.get("kind") or "job"
    if not conf.job_logdir:
        raise UnusableArtifacts(
            f"{kind} {metadata.get('name')}: training jobs record no artifacts, and no job log directory is "
            "configured (TENSORBOARD_JOB_LOGDIR, e.g. s3://ml-logs/{namespace}/{name}).",
        )
    path = conf.job_logdir.format(namespace=metadata.get("namespace"), name=metadata.get("name"))
    store = conf.default_repository.s3 if path.startswith("s3://") else None
    conditions = (job.get("status") or {}).get("conditions")
    finished = any(is_true(conditions, condition) for condition in JOB_FINISHED_CONDITIONS)
    # A job writes its logs straight to the store while it trains: its pod syncs until it finished.
    return Logdirs([{"name": str(metadata.get("name")), "path": path}], store, running=not finished)


def source_logdirs(
    client: KubeClient, conf: TensorboardConf, kind: str, namespace: str, name: str
) -> Logdirs:
    """Read the source from the cluster and collect its logdirs, or raise the SpawnError saying why not."""
    source_kind = SOURCE_KINDS[kind]
    source = _get(client, source_kind, namespace, name)
    if kind == "Workflow":
        return workflow_logdirs(client, source, conf)
    if kind == "HyperparamWorkflow":
        return sweep_logdirs(client, source, conf)
    return job_logdirs(source, conf)


def allowed_logdir(path: str, namespace: str, conf: TensorboardConf) -> bool:
    """Whether `path` lies under a prefix the administrator allowed (`{namespace}` in it is replaced)."""
    if path.startswith("pvc://"):
        try:
            parse_pvc_path(path)  # refuses `..`
        except SpecError:
            return False
    for prefix in conf.allowed_logdirs:
        allowed = prefix.format(namespace=namespace)
        if path == allowed.rstrip("/") or path.startswith(
            allowed if allowed.endswith("/") else allowed + "/"
        ):
            return True
    return False


# -- spawning ----------------------------------------------------------------------------------------
def manifest(
    namespace: str,
    name: str,
    source: tuple[str, str] | None,
    logdirs: Logdirs,
    now: datetime,
    idle_timeout: timedelta | None = None,
    sync_seconds: int = 60,
) -> dict[str, Any]:
    """The Tensorboard of a (kind, name) source, or of admin-allowed logdirs (None), opened `now`. A source
    still running gets `syncSeconds`: its pod re-fetches the artifacts that often."""
    spec: dict[str, Any] = {"logdirs": logdirs.entries}
    if source is not None:
        spec["workflowRef"] = {"kind": source[0], "name": source[1]}
    if logdirs.store is not None:
        spec["s3"] = s3_spec(logdirs.store)
    if logdirs.gcs_key is not None:
        spec["gcs"] = {"serviceAccountKeySecret": {"name": logdirs.gcs_key.name, "key": logdirs.gcs_key.key}}
    if logdirs.running:
        spec["syncSeconds"] = sync_seconds
    if idle_timeout is not None:
        spec["idleTimeout"] = format_duration(idle_timeout)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {LABEL_SOURCE_KIND: source[0] if source else "Logdirs"},
            "annotations": {ANNOTATION_LAST_ACCESS: timestamp(now)},
        },
        "spec": spec,
    }


def s3_spec(store: ObjectStore) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if store.endpoint:
        spec["endpoint"] = store.endpoint
    if store.region:
        spec["region"] = store.region
    if store.insecure:
        spec["insecure"] = True
    if store.access_key is not None:
        spec["accessKeySecret"] = {"name": store.access_key.name, "key": store.access_key.key}
    if store.secret_key is not None:
        spec["secretKeySecret"] = {"name": store.secret_key.name, "key": store.secret_key.key}
    return spec


def spawn(
    client: KubeClient,
    conf: TensorboardConf,
    *,
    namespace: str,
    kind: str,
    source: str,
    now: datetime,
    idle_timeout: timedelta | None = None,
) -> Spawned:
    """Create the Tensorboard for a source, or return the one it already has (idempotent: the same source
    gives the same instance, its logdirs refreshed when the source recorded more since, and opened now)."""
    logdirs = source_logdirs(client, conf, kind, namespace, source)
    name = tensorboard_name(kind, source)
    body = manifest(namespace, name, (kind, source), logdirs, now, idle_timeout, conf.sync_seconds)
    return _create_or_refresh(client, body, logdirs.warnings)


def spawn_logdirs(
    client: KubeClient,
    conf: TensorboardConf,
    *,
    namespace: str,
    name: str,
    entries: Sequence[dict[str, str]],
    now: datetime,
    idle_timeout: timedelta | None = None,
) -> Spawned:
    """Create (or refresh) the instance `name` for logdirs a user named; each must lie under a path an
    administrator allowed (TENSORBOARD_ALLOWED_LOGDIRS), or LogdirNotAllowed names the first that does not."""
    for entry in entries:
        if not allowed_logdir(entry["path"], namespace, conf):
            allowed = ", ".join(prefix.format(namespace=namespace) for prefix in conf.allowed_logdirs)
            raise LogdirNotAllowed(
                f"logdirs: {entry['path']!r} is not under a path an administrator allowed for namespace "
                f"{namespace} ({allowed or 'none is allowed'}).",
                path=entry["path"],
            )
    store = conf.default_repository.s3 if any(e["path"].startswith("s3://") for e in entries) else None
    # Folders named directly may be written to at any time: their pod keeps them in sync.
    logdirs = Logdirs([{"name": e["name"], "path": e["path"]} for e in entries], store, running=True)
    body = manifest(namespace, name, None, logdirs, now, idle_timeout, conf.sync_seconds)
    return _create_or_refresh(client, body, [])


def _create_or_refresh(client: KubeClient, body: dict[str, Any], warnings: list[str]) -> Spawned:
    metadata = body["metadata"]
    namespace, name = metadata["namespace"], metadata["name"]
    try:
        created = client.create(TENSORBOARD_RESOURCE, body, namespace)
    except AlreadyExists:
        existing = client.get(TENSORBOARD_RESOURCE, name, namespace)
    else:
        logger.info("spawned Tensorboard %s/%s", namespace, name)
        return Spawned(created, True, warnings)
    _check_same_source(existing, body["spec"].get("workflowRef"))
    patch: dict[str, Any] = {"metadata": {"annotations": metadata["annotations"]}}
    current = existing.get("spec") or {}
    refreshed = ("logdirs", "s3", "gcs", "idleTimeout")
    changes = {key: body["spec"][key] for key in refreshed if key in body["spec"]}
    if "workflowRef" in body["spec"]:
        # A source that finished since stops its pod's sync sidecar (merge patch: None removes the field).
        changes["syncSeconds"] = body["spec"].get("syncSeconds")
    if any(current.get(key) != value for key, value in changes.items()):
        patch["spec"] = changes
    return Spawned(client.patch(TENSORBOARD_RESOURCE, name, patch, namespace), False, warnings)


def _check_same_source(existing: dict[str, Any], wanted: dict[str, str] | None) -> None:
    metadata = existing.get("metadata") or {}
    key = f"{metadata.get('namespace')}/{metadata.get('name')}"
    if metadata.get("deletionTimestamp"):
        raise NameTaken(f"Tensorboard {key} is being deleted; spawn it again in a few seconds.", name=key)
    reference = (existing.get("spec") or {}).get("workflowRef")

    def describe(ref: dict[str, str] | None) -> str:
        return f"{ref.get('kind') or 'Workflow'} {ref.get('name')}" if ref else "logdirs named directly"

    same = (reference or {}).get("kind", "Workflow") == (wanted or {}).get("kind", "Workflow") and (
        (reference or {}).get("name") == (wanted or {}).get("name")
    )
    if not same:
        raise NameTaken(
            f"Tensorboard {key} already exists for {describe(reference)}, not for {describe(wanted)}; "
            "delete it first.",
            name=key,
        )


def open_tensorboard(client: KubeClient, namespace: str, name: str, now: datetime) -> dict[str, Any]:
    """Record that a user opened the instance (the controller copies it into status.lastAccess)."""
    patch = {"metadata": {"annotations": {ANNOTATION_LAST_ACCESS: timestamp(now)}}}
    return client.patch(TENSORBOARD_RESOURCE, name, patch, namespace)


def stop(client: KubeClient, namespace: str, name: str, uid: str | None = None) -> bool:
    """Delete the instance (its Deployment and Service follow through their ownerReferences). The uid is a
    precondition, so a newer instance that took the name is never deleted. False when already gone."""
    try:
        client.delete(TENSORBOARD_RESOURCE, name, namespace, uid=uid)
    except (NotFound, Conflict):
        return False
    return True


def cull_idle(client: KubeClient, conf: TensorboardConf, now: datetime) -> list[str]:
    """Delete every instance idle longer than its timeout at `now`; returns their keys."""
    recorder = recorder_for("tensorboard")
    culled: list[str] = []
    for page in client.list_pages(TENSORBOARD_RESOURCE):
        for tensorboard in page.get("items") or ():
            if not should_cull(tensorboard, now, conf.idle_timeout):
                continue
            metadata = tensorboard["metadata"]
            key = f"{metadata['namespace']}/{metadata['name']}"
            recorder.normal(tensorboard, "IdleTimeout", "Deleted after being idle too long.", action="Delete")
            if stop(client, metadata["namespace"], metadata["name"], metadata.get("uid")):
                logger.info("culled idle Tensorboard %s", key)
                culled.append(key)
    return culled
