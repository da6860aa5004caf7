"""The reconcile loop of Tensorboards: build the Deployment and Service, create what is missing, replace
what drifted, and write the status. The only place that changes a Tensorboard's children.

Safe to repeat: names are deterministic, 409 on create rereads, and a child is only touched when the
hash of what we asked for changed. A child of the same name that this Tensorboard does not control is
never adopted or overwritten: the Tensorboard fails with a message naming it.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.utils import timezone

from kube.client import KubeClient, get_client
from kube.conditions import status_changed
from kube.crds import TENSORBOARD
from kube.errors import AlreadyExists, Invalid, NotFound
from kube.events import recorder_for
from kube.queue import reconciler
from kube.resources import DEPLOYMENT, POD, SERVICE, ResourceType

from .conf import TensorboardConf, conf_from_settings
from .manifests import (
    SpecError,
    build_deployment,
    build_service,
    desired_hash,
    is_controlled_by,
    selector,
    updated_child,
)
from .status import FAILED, READY, tensorboard_status

logger = logging.getLogger(__name__)

EVENT_CONTROLLER = "tensorboard"
KIND = TENSORBOARD.kind
TENSORBOARD_RESOURCE = TENSORBOARD.resource_type


class NotOurs(Exception):
    """A child's name is taken by an object this Tensorboard does not control."""


@reconciler(KIND)
def reconcile_tensorboard(namespace: str, name: str) -> float | None:
    client = get_client()
    try:
        tensorboard = client.get(TENSORBOARD_RESOURCE, name, namespace)
    except NotFound:
        return None  # deleted: its Deployment and Service follow through their ownerReferences
    if (tensorboard.get("metadata") or {}).get("deletionTimestamp"):
        return None
    converge(client, tensorboard, conf_from_settings(), timezone.now())
    return None


def converge(client: KubeClient, tensorboard: dict[str, Any], conf: TensorboardConf, now: datetime) -> dict:
    """One pass: children made to match the spec, then the status; returns the status written (or kept)."""
    recorder = recorder_for(EVENT_CONTROLLER)
    problem: tuple[str, str] | None = None
    deployment: dict[str, Any] | None = None
    try:
        desired = [
            (DEPLOYMENT, build_deployment(tensorboard, conf)),
            (SERVICE, build_service(tensorboard, conf)),
        ]
    except SpecError as error:
        problem = ("InvalidSpec", str(error))
        recorder.warning(tensorboard, "InvalidSpec", str(error), action="Validate")
    else:
        try:
            applied = [apply_child(client, tensorboard, rtype, body) for rtype, body in desired]
            deployment = applied[0]
        except NotOurs as error:
            problem = ("NameConflict", str(error))
            recorder.warning(tensorboard, "NameConflict", str(error), action="Create")
        except Invalid as error:
            # The API server refused what the spec asked for (e.g. a malformed resource quantity): retrying
            # cannot help until the spec changes, which triggers a reconcile by itself.
            problem = ("ChildRejected", f"The API server refused a child of this Tensorboard: {error}")
            recorder.warning(tensorboard, "ChildRejected", problem[1], action="Create")
    pods = _pods(client, tensorboard) if deployment is not None else []
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


def _pods(client: KubeClient, tensorboard: dict[str, Any]) -> list[dict[str, Any]]:
    """The TensorBoard pods, whose fetcher's termination message says which runs could not be fetched."""
    label_selector = ",".join(f"{key}={value}" for key, value in selector(tensorboard).items())
    namespace = tensorboard["metadata"]["namespace"]
    return [
        pod
        for page in client.list_pages(POD, namespace, label_selector=label_selector)
        for pod in page.get("items") or ()
    ]


def apply_child(
    client: KubeClient, tensorboard: dict[str, Any], rtype: ResourceType, desired: dict[str, Any]
) -> dict[str, Any]:
    """The child as it is after making it match `desired`: created if missing, replaced if it drifted."""
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
    if not is_controlled_by(current, tensorboard):
        raise NotOurs(f"{rtype.kind} {namespace}/{name} exists and is not controlled by this Tensorboard.")
    if desired_hash(current) == desired_hash(desired):
        return current
    # A Conflict (someone wrote it meanwhile) raises: the queue retries from a fresh read.
    replaced = client.replace(rtype, updated_child(current, desired))
    recorder.normal(tensorboard, "SuccessfulUpdate", f"Updated {rtype.kind} {name}", action="Update")
    logger.info("replaced %s %s/%s: its spec drifted from the Tensorboard's", rtype.kind, namespace, name)
    return replaced
