"""A Tensorboard read once into a frozen `TensorboardSpec`, the value every builder of `manifests` takes.

`parse` checks what the builders rely on and raises one `SpecError` listing every problem, each with its
field path (`spec.logdirs[1].archive: 'rar' must be one of none, tar, zip.`), as the other apps' parsers do;
the reconcile turns it into the Failed phase. It is tolerant of what the schema allows and reads each field
once: run names are made safe and unique, PVC paths split into claim and subpath, and the S3 store, GCS key
and resources read into values. A source still running adds its new runs with `with_source_runs`, to the
fetch plan only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import fields
from kube import names, podresources

from .artifacts import ObjectStore, SecretRef
from .fetchplan import ARCHIVES, is_fetched

PVC_MOUNT_ROOT = "/logdirs"
_UNSAFE_RUN_CHARACTERS = re.compile(r"[^A-Za-z0-9._()=+\-\[\]]+")
_PATH_SCHEMES = ("s3://", "gs://", "pvc://", "http://", "https://")


@dataclass(frozen=True)
class PvcPath:
    claim: str
    subpath: str

    @property
    def mount_path(self) -> str:
        return f"{PVC_MOUNT_ROOT}/{self.claim}"

    @property
    def local_path(self) -> str:
        return f"{self.mount_path}/{self.subpath}".rstrip("/")


@dataclass(frozen=True)
class Logdir:
    """One run: its name as TensorBoard shows it (safe for `--logdir_spec`, unique), its path as written,
    its archive (none, tar, zip), and for a `pvc://` path its claim and subpath."""

    run: str
    path: str
    archive: str = "none"
    pvc: PvcPath | None = None

    @property
    def fetched(self) -> bool:
        """Copied into the pod (object stores and HTTP) rather than read in place (a PVC)."""
        return is_fetched(self.path)


@dataclass(frozen=True)
class Identity:
    """Who owns the children: the Tensorboard's name, namespace and uid."""

    name: str
    namespace: str
    uid: str


@dataclass(frozen=True)
class Source:
    """`spec.workflowRef`: what the logdirs were collected from (a Workflow, a sweep or a training job)."""

    kind: str
    name: str


@dataclass(frozen=True)
class TensorboardSpec:
    """A Tensorboard read once and checked: what its Deployment, Service and fetch plan are built from."""

    identity: Identity
    logdirs: tuple[Logdir, ...]
    #: The TensorBoard image; empty: the configured default.
    image: str
    #: `spec.resources` (requests and limits) as the API server would accept them; settings fill the rest.
    resources: Mapping[str, Mapping[str, Any]]
    #: `spec.s3`: where s3:// logdirs live and the Secret keys of their credentials.
    s3: ObjectStore
    #: `spec.gcs.serviceAccountKeySecret`; None: the configured Secret, else the pod's own identity.
    gcs_key: SecretRef | None
    #: `spec.syncSeconds`: a sidecar fetches the artifacts again this often; None: once, before TensorBoard.
    sync_seconds: int | None
    source: Source | None = None

    @property
    def resync_after(self) -> float | None:
        """Seconds until the source is read again for new runs (None: it is not)."""
        return _resync_after(self.source, self.sync_seconds)


def parse(tensorboard: fields.RawDict) -> TensorboardSpec:
    """The Tensorboard as a `TensorboardSpec`; raises SpecError naming every field the builders cannot use."""
    found = fields.ErrorList()
    metadata = fields.as_dict(tensorboard.get("metadata"))
    spec = fields.as_dict(tensorboard.get("spec"))
    if not metadata.get("name") or not metadata.get("namespace"):
        found.add("metadata", "a Tensorboard needs a name and a namespace.")
    entries = spec.get("logdirs")
    if not isinstance(entries, list) or not entries:
        found.add("spec.logdirs", "at least one log directory is required.")
    logdirs = _logdirs(entries if isinstance(entries, list) else [], found)
    problem = podresources.first_problem(spec.get("resources") or {}, "spec.resources")
    if problem is not None:
        found.add(problem[0], f"{problem[1]}.")
    found.raise_if_any()
    resources = fields.as_dict(spec.get("resources"))
    identity = Identity(str(metadata["name"]), str(metadata["namespace"]), str(metadata.get("uid") or ""))
    image = spec.get("image")
    return TensorboardSpec(
        identity=identity,
        logdirs=logdirs,
        image=image if isinstance(image, str) else "",
        resources={kind: amounts for kind in ("requests", "limits") if (amounts := resources.get(kind))},
        s3=_object_store(fields.as_dict(spec.get("s3"))),
        gcs_key=_secret(fields.as_dict(spec.get("gcs")).get("serviceAccountKeySecret")),
        sync_seconds=_sync_seconds(spec),
        source=_source(spec),
    )


def resync_after(tensorboard: fields.RawDict) -> float | None:
    """Seconds until the source is read again for new runs: `spec.syncSeconds` of a Tensorboard with a
    source (`spec.workflowRef`), None otherwise (logdirs named directly have no source to read). Read from
    the object as it is, so that a Tensorboard whose spec cannot run still comes back on time."""
    spec = fields.as_dict(tensorboard.get("spec"))
    return _resync_after(_source(spec), _sync_seconds(spec))


def _resync_after(source: Source | None, sync_seconds: int | None) -> float | None:
    return float(sync_seconds) if source is not None and sync_seconds is not None else None


def _sync_seconds(spec: fields.RawDict) -> int | None:
    seconds = spec.get("syncSeconds")
    return seconds if isinstance(seconds, int) and seconds > 0 else None


def _source(spec: fields.RawDict) -> Source | None:
    reference = spec.get("workflowRef")
    if not reference or not isinstance(reference, Mapping):
        return None
    return Source(str(reference.get("kind") or "Workflow"), str(reference.get("name") or ""))


def with_source_runs(spec: TensorboardSpec, entries: Sequence[fields.RawDict]) -> TensorboardSpec:
    """The spec with the fetched `entries` its source records now (`{name, path, archive?}`, as the spawner
    collects them) added after its logdirs where their path is not listed yet, checked as the spec's own
    are. Only for building the fetch plan: the Deployment stays the user's spec's."""
    listed = {logdir.path for logdir in spec.logdirs}
    added = [
        entry for entry in entries if is_fetched(entry.get("path", "")) and entry.get("path") not in listed
    ]
    if not added:
        return spec
    found = fields.ErrorList()
    logdirs = _logdirs(added, found, listed=spec.logdirs)
    found.raise_if_any()
    return dataclasses.replace(spec, logdirs=logdirs)


def safe_run_name(name: str) -> str:
    """A run name `--logdir_spec` reads back unchanged: no `,` (entry separator) or `:` (name separator),
    not starting with `/` (a path); everything else unusual becomes `_`."""
    safe = _UNSAFE_RUN_CHARACTERS.sub("_", name.replace(":", "=")).strip("_/")
    return safe[:100] or "run"


def parse_pvc_path(path: str, field: str = "spec.logdirs[].path") -> PvcPath:
    """`pvc://<claim>/<subpath>` → its claim and subpath; the claim must be a valid name, `..` is refused
    (SpecError naming `field`)."""
    found = fields.ErrorList()
    pvc = _pvc_path(path, field, found)
    found.raise_if_any()
    assert pvc is not None  # _pvc_path returns None only after adding a problem
    return pvc


def _pvc_path(path: str, field: str, found: fields.ErrorList) -> PvcPath | None:
    claim, _, subpath = path.removeprefix("pvc://").partition("/")
    if names.NameFormat.SUBDOMAIN.problems(claim):
        found.add(field, f"{path!r} must be pvc://<claim>/<subpath> with a valid claim name.")
        return None
    parts = [part for part in subpath.split("/") if part not in ("", ".")]
    if ".." in parts:
        found.add(field, f"{path!r} may not leave its claim with '..'.")
        return None
    return PvcPath(claim, "/".join(parts))


def _logdirs(
    entries: Sequence[object], found: fields.ErrorList, listed: tuple[Logdir, ...] = ()
) -> tuple[Logdir, ...]:
    """The `listed` logdirs followed by `entries` (of `spec.logdirs`, after `listed`), each entry checked,
    with run names made safe and unique among them all."""
    result = list(listed)
    taken = {logdir.run for logdir in listed}
    seen_paths = {logdir.path for logdir in listed}
    for index, entry in enumerate(entries, start=len(listed)):
        field = f"spec.logdirs[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
            found.add(f"{field}.path", "a path is required.")
            continue
        path: str = entry["path"]
        before = found.count
        if not path.startswith(_PATH_SCHEMES) or len(path) <= len("s3://"):
            found.add(f"{field}.path", f"{path!r} must start with s3://, gs://, pvc://, http:// or https://.")
        if "," in path:
            found.add(f"{field}.path", f"{path!r} contains a comma, which --logdir_spec cannot express.")
        if path in seen_paths:
            found.add(f"{field}.path", f"{path!r} is listed twice; TensorBoard keys runs by path.")
        seen_paths.add(path)
        pvc = _pvc_path(path, f"{field}.path", found) if path.startswith("pvc://") else None
        archive = entry.get("archive") or "none"
        if archive not in ARCHIVES:
            found.add(f"{field}.archive", f"{archive!r} must be one of {', '.join(ARCHIVES)}.")
        if found.count > before:
            continue
        base = safe_run_name(str(entry.get("name") or ""))
        name, number = base, 2
        while name in taken:
            name, number = f"{base}-{number}", number + 1
        taken.add(name)
        result.append(Logdir(name, path, archive, pvc))
    return tuple(result)


def _object_store(s3: fields.RawDict) -> ObjectStore:
    """`spec.s3` as an ObjectStore (endpoint, region, TLS, credential Secret keys)."""
    return ObjectStore(
        endpoint=str(s3.get("endpoint") or ""),
        region=str(s3.get("region") or ""),
        insecure=bool(s3.get("insecure", False)),
        access_key=_secret(s3.get("accessKeySecret")),
        secret_key=_secret(s3.get("secretKeySecret")),
    )


def _secret(ref: object) -> SecretRef | None:
    ref = fields.as_dict(ref)
    return SecretRef(str(ref["name"]), str(ref["key"])) if ref.get("name") and ref.get("key") else None
