"""Pure builders: a Tensorboard (a dict as the API server returns it) + the settings → its Deployment and
Service, with deterministic names, labels, a controller ownerReference and a hash of what was desired.

S3, GCS and HTTP artifacts are copied into an emptyDir, one sub-folder per run named after the run, by the
`fetch-logs` init container (our image, `manage.py fetch_tensorboard_logs`, credentials only as
`secretKeyRef`s), archives unpacked, and re-synced by a `sync-logs` sidecar while the source runs. Their
fetch plan lives in a ConfigMap the controller owns and rewrites when the source records new runs; both
containers read it from a read-only mount the kubelet refreshes, so new runs arrive without a new pod.
TensorBoard reads the emptyDir as one unnamed logdir (`--logdir=/tensorboard-logs`), so it discovers new
sub-folders as runs on its next reload, named exactly like the folder. Logdirs read in place
(`pvc://<claim>/<subpath>` mounted read-only) are named entries of `--logdir_spec` (split on commas and each
entry on its first colon, so run names are made safe here and a path with a comma is refused).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube import names, podresources
from kube.names import HASH_LENGTH, label_value, short_hash
from kube.resources import controller_reference

from .artifacts import ObjectStore, SecretRef
from .conf import TensorboardConf
from .fetchplan import (
    ACCESS_KEY_ENV,
    ARCHIVES,
    GCS_KEY_ENV,
    SECRET_KEY_ENV,
    GcsAccess,
    Plan,
    PlanError,
    RunSource,
    S3Access,
    encode_plan,
    endpoint_parts,
    folder_name,
    is_fetched,
    is_folder_name,
    parse_plan,
)

API_VERSION = "argoml.io/v1alpha1"
KIND = "Tensorboard"
LABEL_TENSORBOARD = "argoml.io/tensorboard"
ANNOTATION_SPEC_HASH = "argoml.io/spec-hash"
# Written by the API when a user opens the instance; the controller copies it into status.lastAccess.
ANNOTATION_LAST_ACCESS = "argoml.io/last-access"
CONTAINER = "tensorboard"
PORT = 6006
SERVICE_PORT = 80
PVC_MOUNT_ROOT = "/logdirs"
FETCH_ROOT = "/tensorboard-logs"  # the emptyDir the fetcher fills, one numbered folder per run
FETCH_VOLUME = "fetched-logs"
FETCH_CONTAINER = "fetch-logs"
SYNC_CONTAINER = "sync-logs"
TERMINATION_LOG = "/dev/termination-log"
PLAN_VOLUME = "fetch-plan"  # the ConfigMap holding the plan, mounted read-only into the fetchers
PLAN_MOUNT = "/etc/argoml/fetch-plan"
PLAN_KEY = "plan.json"
PLAN_SUFFIX = "-fetch-plan"
# On the pod template when no sidecar syncs: a changed plan then starts a new pod, whose init container
# fetches it (with a sidecar, the running pod picks the plan up itself and TensorBoard keeps running).
ANNOTATION_PLAN_HASH = "argoml.io/fetch-plan-hash"
FETCH_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}
MAX_NAME_LENGTH = 63  # a Service name is a DNS-1035 label
# TensorBoard needs no privilege: the pod meets the `restricted` Pod Security level in any namespace. The
# images run as root unless told otherwise, so the pod names an unprivileged user (the group can read
# logdir volumes through fsGroup).
RUN_AS_USER = 1000
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS_USER,
    "runAsGroup": RUN_AS_USER,
    "fsGroup": RUN_AS_USER,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
_UNSAFE_RUN_CHARACTERS = re.compile(r"[^A-Za-z0-9._()=+\-\[\]]+")
_PATH_SCHEMES = ("s3://", "gs://", "pvc://", "http://", "https://")

Json = Mapping[str, Any]


class SpecError(ValueError):
    """The Tensorboard's spec cannot be turned into a Deployment; the message names the field."""


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


# -- names ---------------------------------------------------------------------------------------------
def child_name(tensorboard_name: str) -> str:
    """`tb-<name>` for the Deployment and the Service; a DNS-1035 label however long or dotted the name is."""
    base = "tb-" + re.sub(r"[^a-z0-9-]+", "-", tensorboard_name.lower()).strip("-")
    if base == f"tb-{tensorboard_name}" and len(base) <= MAX_NAME_LENGTH:
        return base
    keep = MAX_NAME_LENGTH - HASH_LENGTH - 1
    return f"{base[:keep].rstrip('-')}-{short_hash(tensorboard_name)}"


def labels(tensorboard: Json) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "tensorboard",
        "app.kubernetes.io/managed-by": "argoml",
        LABEL_TENSORBOARD: label_value(_metadata(tensorboard)["name"]),
    }


def selector(tensorboard: Json) -> dict[str, str]:
    return {LABEL_TENSORBOARD: label_value(_metadata(tensorboard)["name"])}


def path_prefix(conf: TensorboardConf, namespace: str, name: str) -> str:
    """Where TensorBoard serves itself (`--path_prefix`), without the trailing slash it adds."""
    return f"{conf.path_prefix}/{namespace}/{name}"


def url(conf: TensorboardConf, namespace: str, name: str) -> str:
    """The instance's URL: behind the configured base URL, else the Service's in-cluster address."""
    prefix = path_prefix(conf, namespace, name)
    if conf.base_url:
        return f"{conf.base_url}{prefix}/"
    return f"http://{child_name(name)}.{namespace}.svc.{conf.cluster_domain}{prefix}/"


def owner_reference(tensorboard: Json) -> dict[str, Any]:
    metadata = _metadata(tensorboard)
    return controller_reference(API_VERSION, KIND, metadata["name"], metadata["uid"])


def plan_configmap_name(tensorboard_name: str) -> str:
    """`tb-<name>-fetch-plan`: the ConfigMap of the Tensorboard's fetch plan (a valid ConfigMap name)."""
    name = child_name(tensorboard_name) + PLAN_SUFFIX
    problems = names.NameFormat.SUBDOMAIN.problems(name)
    if problems:
        raise SpecError(f"metadata.name: the fetch plan's ConfigMap name {name!r} is invalid: {problems[0]}")
    return name


# -- logdirs -------------------------------------------------------------------------------------------
def safe_run_name(name: str) -> str:
    """A run name `--logdir_spec` reads back unchanged: no `,` (entry separator) or `:` (name separator),
    not starting with `/` (a path); everything else unusual becomes `_`."""
    safe = _UNSAFE_RUN_CHARACTERS.sub("_", name.replace(":", "=")).strip("_/")
    return safe[:100] or "run"


def parse_pvc_path(path: str, field: str = "spec.logdirs[].path") -> PvcPath:
    """`pvc://<claim>/<subpath>` → its claim and subpath; the claim must be a valid name, `..` is refused."""
    rest = path.removeprefix("pvc://")
    claim, _, subpath = rest.partition("/")
    if names.NameFormat.SUBDOMAIN.problems(claim):
        raise SpecError(f"{field}: {path!r} must be pvc://<claim>/<subpath> with a valid claim name.")
    parts = [part for part in subpath.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise SpecError(f"{field}: {path!r} may not leave its claim with '..'.")
    return PvcPath(claim, "/".join(parts))


def logdirs_of(tensorboard: Json) -> list[tuple[str, str]]:
    """(safe unique run name, path as given) per `spec.logdirs` entry, checked."""
    entries = (tensorboard.get("spec") or {}).get("logdirs")
    if not isinstance(entries, list) or not entries:
        raise SpecError("spec.logdirs: at least one log directory is required.")
    result: list[tuple[str, str]] = []
    taken: set[str] = set()
    seen_paths: set[str] = set()
    for index, entry in enumerate(entries):
        field = f"spec.logdirs[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
            raise SpecError(f"{field}.path: a path is required.")
        path = entry["path"]
        if not path.startswith(_PATH_SCHEMES) or len(path) <= len("s3://"):
            raise SpecError(
                f"{field}.path: {path!r} must start with s3://, gs://, pvc://, http:// or https://."
            )
        if "," in path:
            raise SpecError(f"{field}.path: {path!r} contains a comma, which --logdir_spec cannot express.")
        if path in seen_paths:
            raise SpecError(f"{field}.path: {path!r} is listed twice; TensorBoard keys runs by path.")
        seen_paths.add(path)
        base = safe_run_name(str(entry.get("name") or ""))
        name, number = base, 2
        while name in taken:
            name, number = f"{base}-{number}", number + 1
        taken.add(name)
        result.append((name, path))
    return result


def logdir_args(logdirs: list[tuple[str, str]]) -> list[str]:
    """TensorBoard's logdir flag. Fetched runs are the sub-folders of one unnamed logdir, the emptyDir:
    TensorBoard names each run after its folder (the run's name) and finds folders added later on its next
    reload. Logdirs read in place (a PVC, where its claim is mounted) are named entries of
    `--logdir_spec` next to it, which TensorBoard lists as `<name>/<folder below it>`."""
    in_place = [
        f"{name}:{local}"
        for (name, path), local in zip(logdirs, local_paths(logdirs), strict=True)
        if not is_fetched(path)
    ]
    fetched = any(is_fetched(path) for _name, path in logdirs)
    if not in_place:
        return [f"--logdir={FETCH_ROOT}"]
    entries = [FETCH_ROOT, *in_place] if fetched else in_place
    return [f"--logdir_spec={','.join(entries)}"]


def fetch_folders(logdirs: list[tuple[str, str]]) -> list[str]:
    """The local folder of each fetched logdir: its run name (already unique and safe), or a number for a
    name that cannot be a folder (e.g. starting with a dot), never one another run took."""
    names_ = [name for name, path in logdirs if is_fetched(path)]
    taken = {name for name in names_ if is_folder_name(name)}
    folders: list[str] = []
    for index, name in enumerate(names_):
        folder = name
        if not is_folder_name(name):
            folder, number = folder_name(index), index
            while folder in taken:
                number += 1
                folder = folder_name(number)
            taken.add(folder)
        folders.append(folder)
    return folders


def local_paths(logdirs: list[tuple[str, str]]) -> list[str]:
    """Where the pod reads each logdir: fetched ones in their folder of the emptyDir."""
    paths: list[str] = []
    folders = iter(fetch_folders(logdirs))
    for _name, path in logdirs:
        if is_fetched(path):
            paths.append(f"{FETCH_ROOT}/{next(folders)}")
        elif path.startswith("pvc://"):
            paths.append(parse_pvc_path(path).local_path)
        else:
            paths.append(path)
    return paths


def archives_of(tensorboard: Json) -> list[str]:
    """`spec.logdirs[].archive` per entry ("none" when left out), checked."""
    result = []
    for index, entry in enumerate((tensorboard.get("spec") or {}).get("logdirs") or ()):
        archive = (entry.get("archive") or "none") if isinstance(entry, Mapping) else "none"
        if archive not in ARCHIVES:
            raise SpecError(
                f"spec.logdirs[{index}].archive: {archive!r} must be one of {', '.join(ARCHIVES)}."
            )
        result.append(archive)
    return result


def fetch_plan(tensorboard: Json, logdirs: list[tuple[str, str]], conf: TensorboardConf) -> Plan | None:
    """What the pod's fetcher copies (None when every logdir is read in place)."""
    archives = archives_of(tensorboard)
    runs = tuple(
        RunSource(name, path, archive, local.rsplit("/", 1)[-1])
        for (name, path), archive, local in zip(logdirs, archives, local_paths(logdirs), strict=True)
        if is_fetched(path)
    )
    if not runs:
        return None
    access = S3Access()
    if any(run.url.startswith("s3://") for run in runs):
        store, default = object_store(tensorboard), conf.default_repository.s3
        endpoint = store.endpoint or default.endpoint
        host, secure = endpoint_parts(endpoint, store.insecure if store.endpoint else default.insecure)
        access = S3Access(host, secure, store.region or default.region, ACCESS_KEY_ENV, SECRET_KEY_ENV)
    gcs = GcsAccess()
    if any(run.url.startswith("gs://") for run in runs):
        gcs = GcsAccess(conf.gcs_endpoint, GCS_KEY_ENV)
    return Plan(runs, access, gcs)


def with_source_runs(tensorboard: Json, entries: list[dict[str, str]]) -> dict[str, Any]:
    """The Tensorboard with the fetched `entries` its source records now (`{name, path, archive?}`, as the
    spawner collects them) added to `spec.logdirs` where their path is not listed yet. Only for building
    the fetch plan: the spec itself stays the user's."""
    spec = dict(tensorboard.get("spec") or {})
    current = list(spec.get("logdirs") or ())
    listed = {entry.get("path") for entry in current if isinstance(entry, Mapping)}
    added = [dict(e) for e in entries if is_fetched(e.get("path", "")) and e.get("path") not in listed]
    return {**tensorboard, "spec": {**spec, "logdirs": current + added}}


def merge_plans(current: Plan | None, desired: Plan) -> Plan:
    """The plan to write: every run of `current` kept in its folder (TensorBoard already lists it, and a
    plan never drops a run it handed to a running pod), each desired run put in (replacing the run of the
    same folder), new folders after the old ones; the desired store access."""
    runs = {run.folder: run for run in (current.runs if current is not None else ())}
    for run in desired.runs:
        runs[run.folder] = run
    return Plan(tuple(runs.values()), desired.s3, desired.gcs)


def build_plan_configmap(tensorboard: Json, plan: Plan) -> dict[str, Any]:
    """The ConfigMap holding the fetch plan as `plan.json`, controlled by the Tensorboard."""
    metadata = _metadata(tensorboard)
    data = {PLAN_KEY: encode_plan(plan)}
    child_labels = labels(tensorboard)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": plan_configmap_name(metadata["name"]),
            "namespace": metadata["namespace"],
            "labels": child_labels,
            "annotations": {ANNOTATION_SPEC_HASH: spec_hash(child_labels, data)},
            "ownerReferences": [owner_reference(tensorboard)],
        },
        "data": data,
    }


def plan_of_configmap(configmap: Json | None) -> Plan | None:
    """The plan a ConfigMap holds, or None when there is none or it is not a plan (it is then rewritten)."""
    text = ((configmap or {}).get("data") or {}).get(PLAN_KEY)
    if not isinstance(text, str):
        return None
    try:
        return parse_plan(text)
    except PlanError:
        return None


# -- the Deployment ------------------------------------------------------------------------------------
def _resources(tensorboard: Json, conf: TensorboardConf) -> dict[str, dict[str, Any]]:
    """Settings' requests and limits, overridden per resource by the spec's; SpecError names the first
    amount the API server would refuse (before a Deployment is built with them)."""
    spec_resources = (tensorboard.get("spec") or {}).get("resources") or {}
    problem = podresources.first_problem(spec_resources, "spec.resources")
    if problem is not None:
        raise SpecError(f"{problem[0]}: {problem[1]}.")
    result = {}
    for kind, defaults in (("requests", conf.requests), ("limits", conf.limits)):
        merged = {**defaults, **(spec_resources.get(kind) or {})}
        if merged:
            result[kind] = merged
    return result


def object_store(tensorboard: Json) -> ObjectStore:
    """`spec.s3` as an ObjectStore (endpoint, region, TLS, credential Secret keys)."""
    s3 = (tensorboard.get("spec") or {}).get("s3") or {}

    def secret(field: str) -> SecretRef | None:
        ref = s3.get(field) or {}
        return SecretRef(ref["name"], ref["key"]) if ref.get("name") and ref.get("key") else None

    return ObjectStore(
        endpoint=str(s3.get("endpoint") or ""),
        region=str(s3.get("region") or ""),
        insecure=bool(s3.get("insecure", False)),
        access_key=secret("accessKeySecret"),
        secret_key=secret("secretKeySecret"),
    )


def _secret_env(name: str, ref: SecretRef) -> dict[str, Any]:
    # optional: a public bucket, or credentials from the node's or pod's cloud identity, need no Secret.
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key, "optional": True}}}


def fetch_env(tensorboard: Json, plan: Plan, conf: TensorboardConf) -> list[dict[str, Any]]:
    """The S3 credentials as references to the Secret keys Argo's repository names (else the spawner's
    Secret): the kubelet fills them, nothing passes through our API or database."""
    env: list[dict[str, Any]] = []
    if plan.s3.access_key_env:
        store = object_store(tensorboard)
        access = store.access_key or SecretRef(conf.s3_credentials_secret, conf.s3_access_key_key)
        secret = store.secret_key or SecretRef(conf.s3_credentials_secret, conf.s3_secret_key_key)
        env += [_secret_env(plan.s3.access_key_env, access), _secret_env(plan.s3.secret_key_env, secret)]
    if plan.gcs.key_env:
        key = gcs_key(tensorboard, conf)
        if key is not None:  # without one, the fetcher uses the pod's identity (workload identity)
            env.append(_secret_env(plan.gcs.key_env, key))
    return env


def gcs_key(tensorboard: Json, conf: TensorboardConf) -> SecretRef | None:
    """`spec.gcs.serviceAccountKeySecret` (from Argo's repository), else the spawner's GCS Secret if set."""
    ref = ((tensorboard.get("spec") or {}).get("gcs") or {}).get("serviceAccountKeySecret") or {}
    if ref.get("name") and ref.get("key"):
        return SecretRef(str(ref["name"]), str(ref["key"]))
    if conf.gcs_credentials_secret:
        return SecretRef(conf.gcs_credentials_secret, conf.gcs_credentials_key)
    return None


def fetch_container(name: str, env: list[dict[str, Any]], conf: TensorboardConf, every: int | None) -> dict:
    """The fetcher: one pass as the init container, `--every N` as the sync sidecar."""
    args = [f"--dest={FETCH_ROOT}", f"--plan={PLAN_MOUNT}/{PLAN_KEY}", f"--report={TERMINATION_LOG}"]
    if every is not None:
        args.append(f"--every={every}")
    return {
        "name": name,
        "image": conf.fetch_image,
        "command": ["python", "/app/manage.py", "fetch_tensorboard_logs"],
        "args": args,
        **({"env": env} if env else {}),
        "volumeMounts": [
            {"name": FETCH_VOLUME, "mountPath": FETCH_ROOT},
            {"name": PLAN_VOLUME, "mountPath": PLAN_MOUNT, "readOnly": True},
        ],
        "resources": copy.deepcopy(FETCH_RESOURCES),
        "securityContext": copy.deepcopy(CONTAINER_SECURITY_CONTEXT),
        "terminationMessagePath": TERMINATION_LOG,
        "terminationMessagePolicy": "File",
    }


def _volumes(logdirs: list[tuple[str, str]]) -> tuple[list[dict], list[dict]]:
    """(volumes, volume mounts) for PVC logdirs."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    claims: list[str] = []
    for _name, path in logdirs:
        if path.startswith("pvc://"):
            claim = parse_pvc_path(path).claim
            if claim not in claims:
                claims.append(claim)
    for index, claim in enumerate(claims):
        volume = f"logdir-{index}"
        volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}})
        mounts.append({"name": volume, "mountPath": f"{PVC_MOUNT_ROOT}/{claim}", "readOnly": True})
    return volumes, mounts


def build_deployment(tensorboard: Json, conf: TensorboardConf) -> dict[str, Any]:
    """The Deployment running TensorBoard for the spec's logdirs. Raises SpecError naming a bad field."""
    metadata = _metadata(tensorboard)
    namespace, name = metadata["namespace"], metadata["name"]
    spec = tensorboard.get("spec") or {}
    logdirs = logdirs_of(tensorboard)
    prefix = path_prefix(conf, namespace, name)
    volumes, mounts = _volumes(logdirs)
    plan = fetch_plan(tensorboard, logdirs, conf)
    init_containers: list[dict[str, Any]] = []
    sidecars: list[dict[str, Any]] = []
    pod_annotations: dict[str, str] = {}
    if plan is not None:
        volumes.append({"name": FETCH_VOLUME, "emptyDir": {}})
        volumes.append({"name": PLAN_VOLUME, "configMap": {"name": plan_configmap_name(name)}})
        mounts.append({"name": FETCH_VOLUME, "mountPath": FETCH_ROOT, "readOnly": True})
        plan_env = fetch_env(tensorboard, plan, conf)
        init_containers.append(fetch_container(FETCH_CONTAINER, plan_env, conf, None))
        sync_seconds = spec.get("syncSeconds")
        if isinstance(sync_seconds, int) and sync_seconds > 0:
            sidecars.append(fetch_container(SYNC_CONTAINER, plan_env, conf, sync_seconds))
        else:
            digest = hashlib.sha256(encode_plan(plan).encode()).hexdigest()
            pod_annotations[ANNOTATION_PLAN_HASH] = digest[:16]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.get("image") or conf.image,
        "command": ["tensorboard"],
        "args": [
            *logdir_args(logdirs),
            "--bind_all",
            f"--port={PORT}",
            f"--path_prefix={prefix}",
        ],
        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": f"{prefix}/", "port": "http"},
            "initialDelaySeconds": 5,
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        "resources": _resources(tensorboard, conf),
        "securityContext": copy.deepcopy(CONTAINER_SECURITY_CONTEXT),
    }
    if mounts:
        container["volumeMounts"] = mounts
    pod_spec: dict[str, Any] = {
        "containers": [container, *sidecars],
        # TensorBoard never calls the Kubernetes API: give it no token to leak.
        "automountServiceAccountToken": False,
        "securityContext": copy.deepcopy(POD_SECURITY_CONTEXT),
    }
    if init_containers:
        pod_spec["initContainers"] = init_containers
    if volumes:
        pod_spec["volumes"] = volumes
    pod_labels = labels(tensorboard)
    pod_metadata: dict[str, Any] = {"labels": pod_labels}
    if pod_annotations:
        pod_metadata["annotations"] = pod_annotations
    deployment_spec = {
        "replicas": 1,
        "selector": {"matchLabels": selector(tensorboard)},
        "template": {"metadata": pod_metadata, "spec": pod_spec},
    }
    return _child("apps/v1", "Deployment", tensorboard, deployment_spec)


def build_service(tensorboard: Json, conf: TensorboardConf) -> dict[str, Any]:
    """A ClusterIP Service on port 80 in front of the TensorBoard container."""
    service_spec = {
        "type": "ClusterIP",
        "selector": selector(tensorboard),
        "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}],
    }
    return _child("v1", "Service", tensorboard, service_spec)


def _child(api_version: str, kind: str, tensorboard: Json, spec: dict[str, Any]) -> dict[str, Any]:
    metadata = _metadata(tensorboard)
    child_labels = labels(tensorboard)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": child_name(metadata["name"]),
            "namespace": metadata["namespace"],
            "labels": child_labels,
            "annotations": {ANNOTATION_SPEC_HASH: spec_hash(child_labels, spec)},
            "ownerReferences": [owner_reference(tensorboard)],
        },
        "spec": spec,
    }


def spec_hash(child_labels: Mapping[str, str], spec: Mapping[str, Any]) -> str:
    """A digest of what we asked for, compared instead of the server's defaulted copy to detect drift."""
    text = json.dumps({"labels": child_labels, "spec": spec}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def desired_hash(child: Json) -> str:
    return str(((child.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SPEC_HASH) or "")


def updated_child(current: Json, desired: Json) -> dict[str, Any]:
    """`desired` carrying what the server owns on `current` (resourceVersion, a Service's clusterIP), for a
    replace that keeps the object's identity."""
    body = copy.deepcopy(dict(desired))
    body["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
    current_spec = current.get("spec") or {}
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if field in current_spec and desired.get("kind") == "Service":
            body["spec"][field] = current_spec[field]
    return body


def is_controlled_by(child: Json, tensorboard: Json) -> bool:
    uid = _metadata(tensorboard).get("uid")
    return any(
        reference.get("controller") and reference.get("uid") == uid
        for reference in (child.get("metadata") or {}).get("ownerReferences") or ()
    )


def _metadata(tensorboard: Json) -> dict[str, Any]:
    metadata = tensorboard.get("metadata") or {}
    if not metadata.get("name") or not metadata.get("namespace"):
        raise SpecError("metadata: a Tensorboard needs a name and a namespace.")
    return dict(metadata)
