"""Pure: an Argo Workflow (a dict as the API server returns it) → its output artifacts named `tensorboard`.

Argo records every node's outputs in `status.nodes[*].outputs.artifacts`. An artifact that went to the
default repository carries only its key; the bucket, endpoint and credential Secrets then come from the
repository the workflow used, resolved as Argo resolves it: `status.artifactRepositoryRef.artifactRepository`
(Argo >= 3.1), else the ConfigMap the workflow names or the namespace's default `artifact-repositories`
ConfigMap (read by the caller, parsed here), else the spawner's default repository. Large workflows keep their
nodes gzipped in `status.compressedNodes` (decoded here) or offloaded to Argo's database
(`status.offloadNodeStatusVersion`, unreachable from the API server: reported as such).

Artifacts (S3, GCS, HTTP) are fetched into the TensorBoard pod, so Argo's default tar+gzip archive, a plain
tar, a zip and `archive: none` are all readable; other storages and deleted artifacts are skipped with a
reason.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fields
import limits
from workflows import safeyaml

from .errors import (
    MixedObjectStores,
    NodeStatusUnavailable,
    NoTensorboardArtifacts,
    UnusableArtifacts,
)

ARTIFACT_NAME = "tensorboard"
FINISHED_PHASES = frozenset({"Succeeded", "Failed", "Error"})
# Where Argo can put an artifact, and which of those the spawner reads.
READABLE_STORAGES = ("s3", "gcs", "http")
OTHER_STORAGES = ("oss", "hdfs", "git", "artifactory", "azure", "raw", "plugin")
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".zip")
# Argo's names for the namespace's repositories: the ConfigMap, and the annotation naming its default key.
REPOSITORIES_CONFIGMAP = "artifact-repositories"
DEFAULT_REPOSITORY_ANNOTATION = "workflows.argoproj.io/default-artifact-repository"


#: One repository of an `artifact-repositories` ConfigMap is a few hundred bytes (a bucket, an endpoint, two
#: Secret references); Argo's deepest repository field is four levels down.
REPOSITORY_LIMITS = safeyaml.Limits(max_bytes=64 * 1024, max_nodes=2000, max_depth=16)


@dataclass(frozen=True)
class SecretRef:
    """A key of a Secret in the workflow's namespace (Argo's accessKeySecret / secretKeySecret)."""

    name: str
    key: str


@dataclass(frozen=True)
class ObjectStore:
    """How to reach an S3-compatible store: endpoint (host[:port], empty: AWS), region, TLS, credentials."""

    endpoint: str = ""
    region: str = ""
    insecure: bool = False
    access_key: SecretRef | None = None
    secret_key: SecretRef | None = None


@dataclass(frozen=True)
class Repository:
    """The default artifact repository (the spawner's settings), used when the workflow names none."""

    s3_bucket: str = ""
    s3: ObjectStore = field(default_factory=ObjectStore)
    gcs_bucket: str = ""
    gcs_key: SecretRef | None = None  # Argo's gcs.serviceAccountKeySecret; None: the pod's own identity


@dataclass(frozen=True)
class Artifact:
    """One readable `tensorboard` artifact: where it is and which node wrote it."""

    workflow: str
    node_id: str
    node_name: str
    display_name: str
    path: str  # s3://bucket/key, gs://bucket/key or http(s)://…
    store: ObjectStore | None = None  # S3 only
    archive: str = "none"  # "tar": a tar or tar.gz to unpack (Argo's default); "zip"; "none": files as saved
    gcs_key: SecretRef | None = None  # GCS only: the service-account key Argo wrote it with


@dataclass(frozen=True)
class Skipped:
    """A `tensorboard` artifact that cannot be used, and why (in words a user can act on)."""

    workflow: str
    node: str
    reason: str

    def __str__(self) -> str:
        return f"{self.workflow}/{self.node}: {self.reason}"


@dataclass(frozen=True)
class Collection:
    """What one workflow offers: readable artifacts, unusable ones, and every other artifact name."""

    workflow: str
    phase: str
    artifacts: tuple[Artifact, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    other_names: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES


# -- nodes ---------------------------------------------------------------------------------------------
def workflow_nodes(workflow: fields.RawDict) -> dict[str, Any]:
    """`status.nodes`, or `status.compressedNodes` decoded (base64 of gzipped JSON)."""
    name = _name(workflow)
    status = workflow.get("status") or {}
    nodes = status.get("nodes")
    if isinstance(nodes, Mapping) and nodes:
        return dict(nodes)
    compressed = status.get("compressedNodes")
    if compressed:
        return _decompress(name, compressed)
    offloaded = status.get("offloadNodeStatusVersion")
    if offloaded:
        raise NodeStatusUnavailable(
            f"Workflow {name} keeps its node status in Argo's database (offloadNodeStatusVersion="
            f"{offloaded}), which the spawner cannot read through the Kubernetes API. Raise Argo's "
            "`maxNodeStatusSize` or disable node status offloading for this workflow's size, or open its "
            "artifacts with the Argo Server.",
            workflow=name,
            offloadNodeStatusVersion=offloaded,
        )
    return {}


def _decompress(name: str, compressed: object) -> dict[str, Any]:
    """The nodes in `compressedNodes`, inflated no further than the bounded reader would read: anyone who
    may edit a Workflow may write its status, and a megabyte of gzip can inflate to a gigabyte."""
    limit = limits.current().yaml_bytes
    try:
        inflater = zlib.decompressobj(wbits=47)
        raw = inflater.decompress(base64.b64decode(_text(compressed), validate=True), limit + 1)
        if len(raw) > limit:
            raise ValueError(
                f"it inflates to more than the limit of {limit} bytes "
                f"({limits.Limits.setting_name('yaml_bytes')})"
            )
        nodes = safeyaml.load_json(raw)
    except (binascii.Error, zlib.error, ValueError) as error:
        raise NodeStatusUnavailable(
            f"Workflow {name} has compressed node status (status.compressedNodes) that is not valid "
            f"base64-encoded gzip of JSON: {error}.",
            workflow=name,
        ) from error
    if not isinstance(nodes, dict):
        raise NodeStatusUnavailable(
            f"Workflow {name}: status.compressedNodes decodes to {type(nodes).__name__}, not a map of nodes.",
            workflow=name,
        )
    return nodes


def _ordered(nodes: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Nodes in the order they started (then by name), so runs are listed as they ran."""
    items = [(node_id, node) for node_id, node in nodes.items() if isinstance(node, Mapping)]
    return sorted(
        items, key=lambda item: (str(item[1].get("startedAt") or ""), str(item[1].get("name") or ""))
    )


# -- repositories --------------------------------------------------------------------------------------
def _text(value: object) -> str:
    """A field's text: strings and numbers as written, anything else (a list, a mapping) as absent. str() of
    a tree is as large as the tree, and a field that should be a name is never a tree."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def _secret(value: object) -> SecretRef | None:
    if isinstance(value, Mapping) and _text(value.get("name")) and _text(value.get("key")):
        return SecretRef(_text(value["name"]), _text(value["key"]))
    return None


def _store(s3: fields.RawDict, fallback: ObjectStore) -> ObjectStore:
    """An artifact's (or a repository's) S3 fields over the fallback's, field by field."""
    return ObjectStore(
        endpoint=_text(s3.get("endpoint")) or fallback.endpoint,
        region=_text(s3.get("region")) or fallback.region,
        insecure=bool(s3["insecure"]) if "insecure" in s3 else fallback.insecure,
        access_key=_secret(s3.get("accessKeySecret")) or fallback.access_key,
        secret_key=_secret(s3.get("secretKeySecret")) or fallback.secret_key,
    )


def resolved_repository(workflow: fields.RawDict) -> fields.RawDict | None:
    """The repository Argo (>= 3.1) recorded as used: status.artifactRepositoryRef.artifactRepository."""
    ref = (workflow.get("status") or {}).get("artifactRepositoryRef") or {}
    resolved = ref.get("artifactRepository") if isinstance(ref, Mapping) else None
    return resolved if isinstance(resolved, dict) else None


def repository_ref(workflow: fields.RawDict) -> tuple[str, str | None]:
    """(ConfigMap, key or None for its annotated default) Argo reads the workflow's repository from:
    `spec.artifactRepositoryRef`, whose ConfigMap defaults to `artifact-repositories`."""
    ref = (workflow.get("spec") or {}).get("artifactRepositoryRef")
    if not isinstance(ref, Mapping):
        return REPOSITORIES_CONFIGMAP, None
    return _text(ref.get("configMap")) or REPOSITORIES_CONFIGMAP, _text(ref.get("key")) or None


def repository_from_configmap(configmap: fields.RawDict, key: str | None) -> fields.RawDict | None:
    """The repository under `key` of an `artifact-repositories`-style ConfigMap (a YAML value), or under the
    key its annotation names as the default; None when there is none, or it is not a YAML map the bounded
    reader reads (a tenant writes this ConfigMap; the controller reads it on every reconcile)."""
    metadata = configmap.get("metadata") or {}
    chosen = key or (metadata.get("annotations") or {}).get(DEFAULT_REPOSITORY_ANNOTATION)
    text = (configmap.get("data") or {}).get(chosen) if isinstance(chosen, str) else None
    if not isinstance(text, str):
        return None
    try:
        repository = safeyaml.load(text, REPOSITORY_LIMITS)
    except safeyaml.YamlRefused:
        return None
    return repository if isinstance(repository, dict) else None


def workflow_repository(
    workflow: fields.RawDict, default: Repository, configured: fields.RawDict | None = None
) -> Repository:
    """The repository the workflow used over the default: Argo's resolved one, else `configured` (read by the
    caller from the ConfigMap Argo would use)."""
    resolved = resolved_repository(workflow) or configured
    if not isinstance(resolved, Mapping):
        return default
    s3 = resolved.get("s3") if isinstance(resolved.get("s3"), Mapping) else None
    gcs = resolved.get("gcs") if isinstance(resolved.get("gcs"), Mapping) else None
    return Repository(
        s3_bucket=_text((s3 or {}).get("bucket")) or default.s3_bucket,
        s3=_store(s3, default.s3) if s3 is not None else default.s3,
        gcs_bucket=_text((gcs or {}).get("bucket")) or default.gcs_bucket,
        gcs_key=_secret((gcs or {}).get("serviceAccountKeySecret")) or default.gcs_key,
    )


def _repository_hint(workflow: fields.RawDict) -> str:
    ref = (workflow.get("status") or {}).get("artifactRepositoryRef") or {}
    if isinstance(ref, Mapping) and ref.get("configMap"):
        return (
            f" The workflow names repository {ref.get('configMap')}/{ref.get('key') or '(default key)'} "
            "without the resolved repository (Argo < 3.1); set the spawner's default bucket "
            "(TENSORBOARD_ARTIFACT_BUCKET)."
        )
    return (
        " Set the spawner's default bucket (TENSORBOARD_ARTIFACT_BUCKET) to your Argo default repository's."
    )


# -- one artifact --------------------------------------------------------------------------------------
def archive_kind(artifact: fields.RawDict, key: str) -> str:
    """ "none" for files saved as they are, "tar" for a tar or tar.gz to unpack, "zip" for a zip archive.

    An explicit `archive` decides. Without one, Argo tars and gzips (its default) and names the key
    `<artifact>.tgz`; a key without an archive suffix was saved with `archive: none` by a recorder that
    dropped the field, or under a key the template chose, so it is read as plain files.
    """
    archive = artifact.get("archive")
    if isinstance(archive, Mapping) and "none" in archive:
        return "none"
    if isinstance(archive, Mapping) and "zip" in archive:
        return "zip"
    if isinstance(archive, Mapping) and "tar" in archive:
        return "tar"
    if key.endswith(".zip"):
        return "zip"
    return "tar" if key.endswith(ARCHIVE_SUFFIXES) else "none"


Location = tuple[str, ObjectStore | None, SecretRef | None]


def _locate(artifact: fields.RawDict, repository: Repository, workflow: fields.RawDict) -> Location | str:
    """(path, S3 store, GCS key Secret) of a readable artifact, or the reason it cannot be read."""
    if isinstance(artifact.get("s3"), Mapping):
        s3 = artifact["s3"]
        bucket = _text(s3.get("bucket")) or repository.s3_bucket
        key = _text(s3.get("key")).lstrip("/")
        if not key:
            return "no S3 key was recorded"
        if not bucket:
            return (
                "the S3 bucket is unknown: neither the artifact nor the workflow's repository names one."
                + (_repository_hint(workflow))
            )
        return f"s3://{bucket}/{key}", _store(s3, repository.s3), None
    if isinstance(artifact.get("gcs"), Mapping):
        gcs = artifact["gcs"]
        bucket = _text(gcs.get("bucket")) or repository.gcs_bucket
        key = _text(gcs.get("key")).lstrip("/")
        if not key or not bucket:
            return "the GCS bucket or key is unknown"
        # As Argo's GCS driver: the artifact's own key Secret, else the repository's.
        return f"gs://{bucket}/{key}", None, _secret(gcs.get("serviceAccountKeySecret")) or repository.gcs_key
    if isinstance(artifact.get("http"), Mapping):
        http = artifact["http"]
        url = _text(http.get("url"))
        if not url.startswith(("http://", "https://")):
            return "no http(s) URL was recorded"
        if http.get("auth") or http.get("headers"):
            return "the HTTP artifact needs headers or credentials, which the fetcher does not send"
        return url, None, None
    storage = next((name for name in OTHER_STORAGES if name in artifact), None)
    if storage is not None:
        return f"stored in {storage}, which TensorBoard cannot read (use S3, MinIO, GCS or HTTP)"
    return "no storage location was recorded"


def _key(artifact: fields.RawDict) -> str:
    for storage in READABLE_STORAGES:
        location = artifact.get(storage)
        if isinstance(location, Mapping):
            return (_text(location.get("key")) or _text(location.get("url"))).split("?", 1)[0]
    return ""


# -- a workflow ----------------------------------------------------------------------------------------
def collect(
    workflow: fields.RawDict,
    *,
    default_repository: Repository | None = None,
    configured_repository: fields.RawDict | None = None,
    artifact_name: str = ARTIFACT_NAME,
) -> Collection:
    """Every output artifact named `artifact_name` of the workflow's nodes, sorted into readable and skipped
    (with a reason); plus the names of the other output artifacts, for error messages. `configured_repository`
    is the repository from the ConfigMap Argo would read (see `repository_ref`), when the caller read it."""
    name = _name(workflow)
    repository = workflow_repository(workflow, default_repository or Repository(), configured_repository)
    found: list[Artifact] = []
    skipped: list[Skipped] = []
    others: set[str] = set()
    for node_id, node in _ordered(workflow_nodes(workflow)):
        outputs = node.get("outputs")
        if not isinstance(outputs, Mapping):
            outputs = {}
        display = str(node.get("displayName") or node.get("name") or node_id)
        for artifact in outputs.get("artifacts") or ():
            if not isinstance(artifact, dict):
                continue
            if artifact.get("name") != artifact_name:
                if artifact.get("name"):
                    others.add(str(artifact["name"]))
                continue
            if artifact.get("deleted"):
                skipped.append(Skipped(name, display, "deleted by Argo's artifact garbage collection"))
                continue
            location = _locate(artifact, repository, workflow)
            if isinstance(location, str):
                skipped.append(Skipped(name, display, location))
                continue
            path, store, gcs_key = location
            archive = archive_kind(artifact, _key(artifact))
            if "," in path:
                skipped.append(
                    Skipped(
                        name, display, f"its path {path} contains a comma, which --logdir_spec cannot express"
                    )
                )
                continue
            node_name = str(node.get("name") or node_id)
            found.append(Artifact(name, node_id, node_name, display, path, store, archive, gcs_key))
    phase = str((workflow.get("status") or {}).get("phase") or "")
    return Collection(name, phase, tuple(found), tuple(skipped), tuple(sorted(others)))


def usable_artifacts(collections: Sequence[Collection], source: str) -> list[Artifact]:
    """The readable artifacts of every collection, or the specific error explaining why there are none."""
    artifacts = [artifact for collection in collections for artifact in collection.artifacts]
    if artifacts:
        return artifacts
    skipped = [item for collection in collections for item in collection.skipped]
    if skipped:
        raise UnusableArtifacts(
            f"{source}: no `{ARTIFACT_NAME}` artifact can be read: "
            + "; ".join(str(item) for item in skipped[:5]),
            skipped=[str(item) for item in skipped],
        )
    found = sorted({name for collection in collections for name in collection.other_names})
    still_running = [collection.workflow for collection in collections if not collection.finished]
    later = " Some of its steps may still produce them: it is still running." if still_running else ""
    what = f"found only: {', '.join(found)}" if found else "found no output artifacts at all"
    raise NoTensorboardArtifacts(
        f"{source} has no output artifact named `{ARTIFACT_NAME}` ({what}). Declare an output artifact named "
        f"`{ARTIFACT_NAME}` in the steps that write TensorBoard logs.{later}",
        found=found,
    )


def warnings_for(collections: Iterable[Collection]) -> list[str]:
    """What a user should know although the spawn goes ahead: unfinished workflows, skipped artifacts."""
    messages: list[str] = []
    for collection in collections:
        if not collection.finished:
            messages.append(
                f"Workflow {collection.workflow} is {collection.phase or 'not started'}: only the "
                f"`{ARTIFACT_NAME}` artifacts of its finished steps are included; spawn again later to add "
                "the others."
            )
        messages.extend(f"Skipped {item}." for item in collection.skipped)
    return messages


def single_store(artifacts: Iterable[Artifact]) -> ObjectStore | None:
    """The one S3 store the artifacts share (None when none is on S3); several endpoints are an error."""
    stores = {artifact.store for artifact in artifacts if artifact.store is not None}
    endpoints = sorted({store.endpoint or "AWS S3" for store in stores})
    if len(endpoints) > 1:
        raise MixedObjectStores(
            f"The `{ARTIFACT_NAME}` artifacts live on different S3 endpoints ({', '.join(endpoints)}); one "
            "TensorBoard reads from one endpoint.",
            endpoints=endpoints,
        )
    return min(stores, key=repr) if stores else None


def single_gcs_key(artifacts: Iterable[Artifact]) -> SecretRef | None:
    """The one service-account key Secret the GCS artifacts share (None: none names one); the fetcher holds
    one GCS identity, so artifacts written with different keys are an error."""
    keys = {artifact.gcs_key for artifact in artifacts if artifact.gcs_key is not None}
    if len(keys) > 1:
        named = sorted(f"{key.name}/{key.key}" for key in keys)
        raise MixedObjectStores(
            f"The `{ARTIFACT_NAME}` artifacts on GCS were written with different service-account keys "
            f"({', '.join(named)}); one TensorBoard reads with one key.",
            endpoints=named,
        )
    return min(keys, key=repr) if keys else None


def run_names(artifacts: Sequence[Artifact]) -> list[str]:
    """A readable, unique run name per artifact: the node's display name; where two share one, the node's
    path inside its workflow (e.g. `train-sweep-0.trial(3:lr:0.1).train`); then a numeric suffix."""
    counts: dict[str, int] = {}
    for artifact in artifacts:
        counts[artifact.display_name] = counts.get(artifact.display_name, 0) + 1
    names: list[str] = []
    taken: set[str] = set()
    for artifact in artifacts:
        name = artifact.display_name
        if counts[name] > 1:
            name = (
                artifact.node_name
                if artifact.node_name.startswith(artifact.workflow)
                else (f"{artifact.workflow}.{artifact.node_name}")
            )
        unique, number = name, 2
        while unique in taken:
            unique, number = f"{name}-{number}", number + 1
        taken.add(unique)
        names.append(unique)
    return names


def _name(workflow: fields.RawDict) -> str:
    metadata = workflow.get("metadata") or {}
    return str(metadata.get("name") or "(unnamed workflow)")
