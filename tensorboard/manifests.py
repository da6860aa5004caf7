"""Pure builders: a parsed Tensorboard (`spec.TensorboardSpec`) + the settings → its Deployment, Service and
fetch-plan ConfigMap, with deterministic names, labels, a controller ownerReference and a hash of what was
desired.

S3, GCS and HTTP artifacts are copied into an emptyDir, one sub-folder per run named after the run, by the
`fetch-logs` init container (our image, `manage.py fetch_tensorboard_logs`, credentials only as
`secretKeyRef`s), archives unpacked, and re-synced by a `sync-logs` sidecar while the source runs. Their
fetch plan lives in a ConfigMap the controller owns and rewrites when the source records new runs; both
containers read it from a read-only mount the kubelet refreshes, so new runs arrive without a new pod.
TensorBoard reads the emptyDir as one unnamed logdir (`--logdir=/tensorboard-logs`), so it discovers new
sub-folders as runs on its next reload, named exactly like the folder. Logdirs read in place
(`pvc://<claim>/<subpath>` mounted read-only) are named entries of `--logdir_spec` (split on commas and each
entry on its first colon, so `spec.parse` makes run names safe and refuses a path with a comma).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import fields
from kube import names
from kube.names import HASH_LENGTH, label_value, short_hash
from kube.resources import controller_reference

from .artifacts import SecretRef
from .conf import TensorboardConf
from .fetchplan import (
    ACCESS_KEY_ENV,
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
    is_folder_name,
    parse_plan,
)
from .spec import Identity, Logdir, TensorboardSpec

API_VERSION = "argoml.io/v1alpha1"
KIND = "Tensorboard"
LABEL_TENSORBOARD = "argoml.io/tensorboard"
ANNOTATION_SPEC_HASH = "argoml.io/spec-hash"
# Written by the API when a user opens the instance; the controller copies it into status.lastAccess.
ANNOTATION_LAST_ACCESS = "argoml.io/last-access"
CONTAINER = "tensorboard"
PORT = 6006
SERVICE_PORT = 80
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


# -- names ---------------------------------------------------------------------------------------------
def child_name(tensorboard_name: str) -> str:
    """`tb-<name>` for the Deployment and the Service; a DNS-1035 label however long or dotted the name is."""
    base = "tb-" + re.sub(r"[^a-z0-9-]+", "-", tensorboard_name.lower()).strip("-")
    if base == f"tb-{tensorboard_name}" and len(base) <= MAX_NAME_LENGTH:
        return base
    keep = MAX_NAME_LENGTH - HASH_LENGTH - 1
    return f"{base[:keep].rstrip('-')}-{short_hash(tensorboard_name)}"


def labels(tensorboard_name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "tensorboard",
        "app.kubernetes.io/managed-by": "argoml",
        LABEL_TENSORBOARD: label_value(tensorboard_name),
    }


def selector(tensorboard_name: str) -> dict[str, str]:
    return {LABEL_TENSORBOARD: label_value(tensorboard_name)}


def path_prefix(conf: TensorboardConf, namespace: str, name: str) -> str:
    """Where TensorBoard serves itself (`--path_prefix`), without the trailing slash it adds."""
    return f"{conf.path_prefix}/{namespace}/{name}"


def url(conf: TensorboardConf, namespace: str, name: str) -> str:
    """The instance's URL: behind the configured base URL, else the Service's in-cluster address."""
    prefix = path_prefix(conf, namespace, name)
    if conf.base_url:
        return f"{conf.base_url}{prefix}/"
    return f"http://{child_name(name)}.{namespace}.svc.{conf.cluster_domain}{prefix}/"


def owner_reference(identity: Identity) -> dict[str, Any]:
    return controller_reference(API_VERSION, KIND, identity.name, identity.uid)


def plan_configmap_name(tensorboard_name: str) -> str:
    """`tb-<name>-fetch-plan`: the ConfigMap of the Tensorboard's fetch plan (a valid ConfigMap name)."""
    name = child_name(tensorboard_name) + PLAN_SUFFIX
    problems = names.NameFormat.SUBDOMAIN.problems(name)
    if problems:
        message = f"the fetch plan's ConfigMap name {name!r} is invalid: {problems[0]}"
        raise fields.SpecError([fields.FieldError("metadata.name", message)])
    return name


# -- logdirs -------------------------------------------------------------------------------------------
def logdir_args(logdirs: Sequence[Logdir]) -> list[str]:
    """TensorBoard's logdir flag. Fetched runs are the sub-folders of one unnamed logdir, the emptyDir:
    TensorBoard names each run after its folder (the run's name) and finds folders added later on its next
    reload. Logdirs read in place (a PVC, where its claim is mounted) are named entries of
    `--logdir_spec` next to it, which TensorBoard lists as `<name>/<folder below it>`."""
    in_place = [
        f"{logdir.run}:{local}"
        for logdir, local in zip(logdirs, local_paths(logdirs), strict=True)
        if not logdir.fetched
    ]
    if not in_place:
        return [f"--logdir={FETCH_ROOT}"]
    entries = [FETCH_ROOT, *in_place] if any(logdir.fetched for logdir in logdirs) else in_place
    return [f"--logdir_spec={','.join(entries)}"]


def fetch_folders(logdirs: Sequence[Logdir]) -> list[str]:
    """The local folder of each fetched logdir: its run name (already unique and safe), or a number for a
    name that cannot be a folder (e.g. starting with a dot), never one another run took."""
    names_ = [logdir.run for logdir in logdirs if logdir.fetched]
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


def local_paths(logdirs: Sequence[Logdir]) -> list[str]:
    """Where the pod reads each logdir: fetched ones in their folder of the emptyDir."""
    paths: list[str] = []
    folders = iter(fetch_folders(logdirs))
    for logdir in logdirs:
        if logdir.fetched:
            paths.append(f"{FETCH_ROOT}/{next(folders)}")
        elif logdir.pvc is not None:
            paths.append(logdir.pvc.local_path)
        else:
            paths.append(logdir.path)
    return paths


def fetch_plan(spec: TensorboardSpec, conf: TensorboardConf) -> Plan | None:
    """What the pod's fetcher copies (None when every logdir is read in place)."""
    runs = tuple(
        RunSource(logdir.run, logdir.path, logdir.archive, local.rsplit("/", 1)[-1])
        for logdir, local in zip(spec.logdirs, local_paths(spec.logdirs), strict=True)
        if logdir.fetched
    )
    if not runs:
        return None
    access = S3Access()
    if any(run.url.startswith("s3://") for run in runs):
        store, default = spec.s3, conf.default_repository.s3
        endpoint = store.endpoint or default.endpoint
        host, secure = endpoint_parts(endpoint, store.insecure if store.endpoint else default.insecure)
        access = S3Access(host, secure, store.region or default.region, ACCESS_KEY_ENV, SECRET_KEY_ENV)
    gcs = GcsAccess()
    if any(run.url.startswith("gs://") for run in runs):
        gcs = GcsAccess(conf.gcs_endpoint, GCS_KEY_ENV)
    return Plan(runs, access, gcs)


def merge_plans(current: Plan | None, desired: Plan) -> Plan:
    """The plan to write: every run of `current` kept in its folder (TensorBoard already lists it, and a
    plan never drops a run it handed to a running pod), each desired run put in (replacing the run of the
    same folder), new folders after the old ones; the desired store access."""
    runs = {run.folder: run for run in (current.runs if current is not None else ())}
    for run in desired.runs:
        runs[run.folder] = run
    return Plan(tuple(runs.values()), desired.s3, desired.gcs)


def build_plan_configmap(identity: Identity, plan: Plan) -> dict[str, Any]:
    """The ConfigMap holding the fetch plan as `plan.json`, controlled by the Tensorboard."""
    data = {PLAN_KEY: encode_plan(plan)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(identity, plan_configmap_name(identity.name), data),
        "data": data,
    }


def plan_of_configmap(configmap: fields.RawDict | None) -> Plan | None:
    """The plan a ConfigMap holds, or None when there is none or it is not a plan (it is then rewritten)."""
    text = ((configmap or {}).get("data") or {}).get(PLAN_KEY)
    if not isinstance(text, str):
        return None
    try:
        return parse_plan(text)
    except PlanError:
        return None


# -- the Deployment ------------------------------------------------------------------------------------
def _resources(spec: TensorboardSpec, conf: TensorboardConf) -> dict[str, dict[str, Any]]:
    """Settings' requests and limits, overridden per resource by the spec's."""
    result = {}
    for kind, defaults in (("requests", conf.requests), ("limits", conf.limits)):
        merged = {**defaults, **spec.resources.get(kind, {})}
        if merged:
            result[kind] = merged
    return result


def _secret_env(name: str, ref: SecretRef) -> dict[str, Any]:
    # optional: a public bucket, or credentials from the node's or pod's cloud identity, need no Secret.
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key, "optional": True}}}


def fetch_env(spec: TensorboardSpec, plan: Plan, conf: TensorboardConf) -> list[dict[str, Any]]:
    """The S3 credentials as references to the Secret keys Argo's repository names (else the spawner's
    Secret): the kubelet fills them, nothing passes through our API or database."""
    env: list[dict[str, Any]] = []
    if plan.s3.access_key_env:
        access = spec.s3.access_key or SecretRef(conf.s3_credentials_secret, conf.s3_access_key_key)
        secret = spec.s3.secret_key or SecretRef(conf.s3_credentials_secret, conf.s3_secret_key_key)
        env += [_secret_env(plan.s3.access_key_env, access), _secret_env(plan.s3.secret_key_env, secret)]
    if plan.gcs.key_env:
        key = gcs_key(spec, conf)
        if key is not None:  # without one, the fetcher uses the pod's identity (workload identity)
            env.append(_secret_env(plan.gcs.key_env, key))
    return env


def gcs_key(spec: TensorboardSpec, conf: TensorboardConf) -> SecretRef | None:
    """`spec.gcs.serviceAccountKeySecret` (from Argo's repository), else the spawner's GCS Secret if set."""
    if spec.gcs_key is not None:
        return spec.gcs_key
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


def _volumes(logdirs: Sequence[Logdir]) -> tuple[list[dict], list[dict]]:
    """(volumes, volume mounts) for PVC logdirs, each claim mounted once, read-only."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    claims = {logdir.pvc.claim: logdir.pvc.mount_path for logdir in logdirs if logdir.pvc is not None}
    for index, (claim, mount_path) in enumerate(claims.items()):
        volume = f"logdir-{index}"
        volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}})
        mounts.append({"name": volume, "mountPath": mount_path, "readOnly": True})
    return volumes, mounts


def build_deployment(spec: TensorboardSpec, conf: TensorboardConf) -> dict[str, Any]:
    """The Deployment running TensorBoard for the spec's logdirs."""
    namespace, name = spec.identity.namespace, spec.identity.name
    prefix = path_prefix(conf, namespace, name)
    volumes, mounts = _volumes(spec.logdirs)
    plan = fetch_plan(spec, conf)
    init_containers: list[dict[str, Any]] = []
    sidecars: list[dict[str, Any]] = []
    pod_annotations: dict[str, str] = {}
    if plan is not None:
        volumes.append({"name": FETCH_VOLUME, "emptyDir": {}})
        volumes.append({"name": PLAN_VOLUME, "configMap": {"name": plan_configmap_name(name)}})
        mounts.append({"name": FETCH_VOLUME, "mountPath": FETCH_ROOT, "readOnly": True})
        plan_env = fetch_env(spec, plan, conf)
        init_containers.append(fetch_container(FETCH_CONTAINER, plan_env, conf, None))
        if spec.sync_seconds is not None:
            sidecars.append(fetch_container(SYNC_CONTAINER, plan_env, conf, spec.sync_seconds))
        else:
            digest = hashlib.sha256(encode_plan(plan).encode()).hexdigest()
            pod_annotations[ANNOTATION_PLAN_HASH] = digest[:16]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.image or conf.image,
        "command": ["tensorboard"],
        "args": [
            *logdir_args(spec.logdirs),
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
        "resources": _resources(spec, conf),
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
    pod_metadata: dict[str, Any] = {"labels": labels(name)}
    if pod_annotations:
        pod_metadata["annotations"] = pod_annotations
    deployment_spec = {
        "replicas": 1,
        "selector": {"matchLabels": selector(name)},
        "template": {"metadata": pod_metadata, "spec": pod_spec},
    }
    return _child("apps/v1", "Deployment", spec.identity, deployment_spec)


def build_service(identity: Identity) -> dict[str, Any]:
    """A ClusterIP Service on port 80 in front of the TensorBoard container."""
    service_spec = {
        "type": "ClusterIP",
        "selector": selector(identity.name),
        "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}],
    }
    return _child("v1", "Service", identity, service_spec)


def _child(api_version: str, kind: str, identity: Identity, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _metadata(identity, child_name(identity.name), spec),
        "spec": spec,
    }


def _metadata(identity: Identity, name: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """A child's metadata: its name, the Tensorboard's labels and controller reference, and the hash of
    `content`, what we asked for (the spec; a ConfigMap's data)."""
    child_labels = labels(identity.name)
    return {
        "name": name,
        "namespace": identity.namespace,
        "labels": child_labels,
        "annotations": {ANNOTATION_SPEC_HASH: spec_hash(child_labels, content)},
        "ownerReferences": [owner_reference(identity)],
    }


def spec_hash(child_labels: Mapping[str, str], spec: Mapping[str, Any]) -> str:
    """A digest of what we asked for, compared instead of the server's defaulted copy to detect drift."""
    text = json.dumps({"labels": child_labels, "spec": spec}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def desired_hash(child: fields.RawDict) -> str:
    return str(((child.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SPEC_HASH) or "")


def updated_child(current: fields.RawDict, desired: fields.RawDict) -> dict[str, Any]:
    """`desired` carrying what the server owns on `current` (resourceVersion, a Service's clusterIP), for a
    replace that keeps the object's identity."""
    body = copy.deepcopy(dict(desired))
    body["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
    current_spec = current.get("spec") or {}
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if field in current_spec and desired.get("kind") == "Service":
            body["spec"][field] = current_spec[field]
    return body


def is_controlled_by(child: fields.RawDict, identity: Identity) -> bool:
    return any(
        reference.get("controller") and reference.get("uid") == identity.uid
        for reference in (child.get("metadata") or {}).get("ownerReferences") or ()
    )
