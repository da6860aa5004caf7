"""Create or update our CRDs in a cluster: idempotent, so it can run on every deploy."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kube.client import KubeClient
from kube.conditions import is_true
from kube.errors import AlreadyExists, Conflict, NotFound
from kube.resources import CRD

from .definition import CustomResource

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"
_ATTEMPTS = 3


def install(client: KubeClient, resources: Iterable[CustomResource]) -> list[tuple[str, str]]:
    """Apply every CRD; returns (name, created | updated | unchanged) in order."""
    return [(resource.name, install_one(client, resource.manifest())) for resource in resources]


def install_one(client: KubeClient, manifest: dict[str, Any]) -> str:
    """Create the CRD, or replace its spec when the cluster's differs from ours.

    Replace (not a merge patch) so a field removed from the declaration is removed from the cluster too;
    it carries the resourceVersion read just before, and a conflict (someone else wrote meanwhile) rereads.
    """
    name = manifest["metadata"]["name"]
    for _attempt in range(_ATTEMPTS):
        try:
            current = client.get(CRD, name)
        except NotFound:
            try:
                client.create(CRD, manifest)
                return CREATED
            except AlreadyExists:
                continue
        if up_to_date(current, manifest):
            return UNCHANGED
        desired = {
            **manifest,
            "metadata": {
                **current["metadata"],
                "labels": {**(current["metadata"].get("labels") or {}), **manifest["metadata"]["labels"]},
            },
        }
        try:
            client.replace(CRD, desired)
            return UPDATED
        except Conflict:
            continue
    raise Conflict(f"CRD {name} kept changing while it was being updated ({_ATTEMPTS} attempts)")


def up_to_date(current: dict[str, Any], manifest: dict[str, Any]) -> bool:
    """Whether the cluster's CRD already says what ours says.

    The server adds defaults at the top of the spec (e.g. `conversion`), so those keys are compared only
    when we set them; `versions` (schemas, columns, subresources) must be equal, so a field removed from a
    declaration counts as a change.
    """
    spec = current.get("spec") or {}
    labels = current["metadata"].get("labels") or {}
    return all(spec.get(key) == value for key, value in manifest["spec"].items()) and all(
        labels.get(key) == value for key, value in manifest["metadata"]["labels"].items()
    )


def wait_established(
    client: KubeClient,
    names: Iterable[str],
    timeout: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Wait until the apiserver serves each CRD (condition Established); returns those still not served."""
    waiting = list(names)
    deadline = clock() + timeout
    while waiting:
        waiting = [
            name
            for name in waiting
            if not is_true(client.get(CRD, name).get("status", {}).get("conditions"), "Established")
        ]
        if not waiting or clock() >= deadline:
            break
        sleep(0.2)
    return waiting
