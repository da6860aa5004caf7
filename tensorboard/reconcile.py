"""The reconcile loop of Tensorboards: build the Deployment and Service, create what is missing, replace
what drifted, and write the status. The only place that changes a Tensorboard's children.

The fetch plan lives in a ConfigMap: for a source still running (`spec.syncSeconds` set) each pass reads
the source again, adds the runs it recorded since and comes back after `syncSeconds`; the pod's sidecar
reads the refreshed plan and fetches them. The controller does not watch sources (that would cache every
Workflow of the cluster); this timer is how it learns of new artifacts. A plan never loses a run.

Safe to repeat: names are deterministic, 409 on create rereads, and a child is only touched when the
hash of what we asked for changed. A child of the same name that this Tensorboard does not control is
never adopted or overwritten: the Tensorboard fails with a message naming it.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.utils import timezone

from fields import SpecError
from kube.client import KubeClient, get_client
from kube.conditions import status_changed
from kube.errors import AlreadyExists, Invalid, NotFound
from kube.events import recorder_for
from kube.resources import CONFIGMAP, DEPLOYMENT, POD, SERVICE, ResourceType, label_selector

from .actions import SOURCE_KINDS, source_logdirs
from .conf import TensorboardConf, conf_from_settings
from .crd import TENSORBOARD
from .errors import SpawnError
from .fetchplan import Plan
from .manifests import (
    build_deployment,
    build_plan_configmap,
    build_service,
    desired_hash,
    fetch_plan,
    is_controlled_by,
    merge_plans,
    plan_configmap_name,
    plan_of_configmap,
    selector,
    updated_child,
)
from .spec import Identity, TensorboardSpec, parse, resync_after, with_source_runs
from .status import FAILED, READY, tensorboard_status

logger = logging.getLogger(__name__)

EVENT_CONTROLLER = "tensorboard"
KIND = TENSORBOARD.kind
TENSORBOARD_RESOURCE = TENSORBOARD.resource_type


class NotOurs(Exception):
    """A child's name is taken by an object this Tensorboard does not control."""


def reconcile_tensorboard(namespace: str, name: str) -> float | None:
    client = get_client()
    try:
        tensorboard = client.get(TENSORBOARD_RESOURCE, name, namespace)
    except NotFound:
        return None  # deleted: its Deployment and Service follow through their ownerReferences
    if (tensorboard.get("metadata") or {}).get("deletionTimestamp"):
        return None
    conf = conf_from_settings()
    converge(client, tensorboard, conf, timezone.now())
    return resync_after(tensorboard)


def source_entries(client: KubeClient, spec: TensorboardSpec, conf: TensorboardConf) -> list[dict]:
    """The logdirs the source records now (as the spawner collects them), for a Tensorboard that syncs;
    none otherwise, or when the source cannot be read (the plan then keeps what it has; the reason is
    logged)."""
    source = spec.source
    if spec.resync_after is None or source is None or source.kind not in SOURCE_KINDS or not source.name:
        return []
    identity = spec.identity
    try:
        return source_logdirs(client, conf, source.kind, identity.namespace, source.name).entries
    except SpawnError as error:
        logger.info(
            "Tensorboard %s/%s: its %s %s gives no runs now: %s",
            identity.namespace, identity.name, source.kind, source.name, error,
        )  # fmt: skip
        return []


def desired_plan(
    client: KubeClient, spec: TensorboardSpec, entries: list[dict], conf: TensorboardConf
) -> Plan | None:
    """The plan to write: the spec's runs, those the running source recorded since (`entries`), and every
    run the ConfigMap already holds. None when nothing is fetched."""
    plan = fetch_plan(with_source_runs(spec, entries), conf)
    if plan is None:
        return None
    identity = spec.identity
    try:
        current = client.get(CONFIGMAP, plan_configmap_name(identity.name), identity.namespace)
    except NotFound:
        return plan
    if not is_controlled_by(current, identity):
        return plan  # apply_child refuses it, naming the ConfigMap
    return merge_plans(plan_of_configmap(current), plan)


def converge(client: KubeClient, tensorboard: dict[str, Any], conf: TensorboardConf, now: datetime) -> dict:
    """One pass: children made to match the spec, then the status; returns the status written (or kept)."""
    recorder = recorder_for(EVENT_CONTROLLER)
    problem: tuple[str, str] | None = None
    deployment: dict[str, Any] | None = None
    pods: list[dict[str, Any]] = []
    try:
        spec = parse(tensorboard)
        plan = desired_plan(client, spec, source_entries(client, spec, conf), conf)
        desired = [
            # First: the pod mounts it. None when every logdir is read in place.
            (CONFIGMAP, build_plan_configmap(spec.identity, plan) if plan is not None else None),
            (DEPLOYMENT, build_deployment(spec, conf)),
            (SERVICE, build_service(spec.identity)),
        ]
    except SpecError as error:
        problem = ("InvalidSpec", str(error))
        recorder.warning(tensorboard, "InvalidSpec", str(error), action="Validate")
    else:
        try:
            applied = {
                rtype: apply_child(client, tensorboard, spec.identity, rtype, body)
                for rtype, body in desired
                if body is not None
            }
        except NotOurs as error:
            problem = ("NameConflict", str(error))
            recorder.warning(tensorboard, "NameConflict", str(error), action="Create")
        except Invalid as error:
            # The API server refused what the spec asked for (e.g. a malformed resource quantity): retrying
            # cannot help until the spec changes, which triggers a reconcile by itself.
            problem = ("ChildRejected", f"The API server refused a child of this Tensorboard: {error}")
            recorder.warning(tensorboard, "ChildRejected", problem[1], action="Create")
        else:
            deployment = applied[DEPLOYMENT]
            pods = _pods(client, spec.identity)
    status = tensorboard_status(tensorboard, deployment, conf, now, problem=problem, pods=pods)
    current = tensorboard.get("status") or {}
    if status_changed(current, status):
        metadata = tensorboard["metadata"]
        client.patch_status(TENSORBOARD_RESOURCE, metadata["name"], status, metadata["namespace"])
        if status["phase"] != current.get("phase") and status["phase"] in (READY, FAILED):
            note = (
                f"TensorBoard is serving at {status['url']}"
                if status["phase"] == READY
                else status["message"]
            )
            event = recorder.normal if status["phase"] == READY else recorder.warning
            event(tensorboard, status["phase"], note, action="Reconcile")
    return status


def _pods(client: KubeClient, identity: Identity) -> list[dict[str, Any]]:
    """The TensorBoard pods, whose fetcher's termination message says which runs could not be fetched."""
    pods = label_selector(selector(identity.name))
    return [
        pod
        for page in client.list_pages(POD, identity.namespace, label_selector=pods)
        for pod in page.get("items") or ()
    ]


def apply_child(
    client: KubeClient,
    tensorboard: dict[str, Any],
    identity: Identity,
    rtype: ResourceType,
    desired: dict[str, Any],
) -> dict[str, Any]:
    """The child as it is after making it match `desired`: created if missing, replaced if it drifted (events
    are recorded on `tensorboard`; `identity` is its parsed name, namespace and uid)."""
    metadata = desired["metadata"]
    name, namespace = metadata["name"], metadata["namespace"]
    recorder = recorder_for(EVENT_CONTROLLER)
    try:
        current = client.get(rtype, name, namespace)
    except NotFound:
        try:
            created = client.create(rtype, desired, namespace)
        except AlreadyExists:
            current = client.get(rtype, name, namespace)  # another run created it meanwhile
        else:
            recorder.normal(tensorboard, "SuccessfulCreate", f"Created {rtype.kind} {name}", action="Create")
            return created
    if not is_controlled_by(current, identity):
        raise NotOurs(f"{rtype.kind} {namespace}/{name} exists and is not controlled by this Tensorboard.")
    if desired_hash(current) == desired_hash(desired):
        return current
    # A Conflict (someone wrote it meanwhile) raises: the queue retries from a fresh read.
    replaced = client.replace(rtype, updated_child(current, desired))
    recorder.normal(tensorboard, "SuccessfulUpdate", f"Updated {rtype.kind} {name}", action="Update")
    logger.info("replaced %s %s/%s: its spec drifted from the Tensorboard's", rtype.kind, namespace, name)
    return replaced
