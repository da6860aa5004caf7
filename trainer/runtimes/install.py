"""Apply the ready-made ClusterTrainingRuntimes (`trainer.runtimes.catalog`) to a cluster: create what is
missing, update what differs, and leave alone a runtime someone else installed (Kubeflow Trainer's own, most
likely). Idempotent, so `manage.py install_runtimes` and the chart's Job can run on every deploy."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kube.client import KubeClient
from kube.errors import AlreadyExists, Conflict, NotFound
from trainer.runtimes import crd

RUNTIMES = crd.CLUSTER_TRAINING_RUNTIME.resource_type
#: The label that marks a runtime as installed by us; one without it is another installer's to change.
OWNER_LABEL = "app.kubernetes.io/part-of"
OWNER = "argoml"
CREATED, UPDATED, UNCHANGED, NOT_OURS = "created", "updated", "unchanged", "kept: not installed by Argo-ML"
_ATTEMPTS = 3
NO_CRD = (
    "the cluster does not serve ClusterTrainingRuntimes (trainer.kubeflow.org/v1alpha1): install the CRDs "
    "first (manage.py install_crds --trainer, or the chart's trainer.installCRDs)"
)


@dataclass(frozen=True)
class Outcome:
    name: str
    outcome: str
    dry_run: bool = False

    def __str__(self) -> str:
        verb = {CREATED: "would be created", UPDATED: "would be updated"}.get(self.outcome, self.outcome)
        return f"clustertrainingruntime/{self.name} {verb if self.dry_run else self.outcome}"


def labelled(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest with our owner label."""
    desired = copy.deepcopy(manifest)
    desired.setdefault("metadata", {}).setdefault("labels", {})[OWNER_LABEL] = OWNER
    return desired


def says_all_of(current: Any, desired: Any) -> bool:
    """Whether `current` already says everything `desired` says: what the apiserver added (defaults such as
    a replicated job's `replicas: 1`) is not a difference, so an unchanged runtime is not written again."""
    if isinstance(desired, dict):
        return isinstance(current, dict) and all(
            key in current and says_all_of(current[key], value) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(current) == len(desired)
            and all(says_all_of(have, want) for have, want in zip(current, desired, strict=True))
        )
    return bool(current == desired)


def is_ours(current: dict[str, Any]) -> bool:
    return (current.get("metadata", {}).get("labels") or {}).get(OWNER_LABEL) == OWNER


def up_to_date(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    return says_all_of(current.get("spec"), desired.get("spec")) and says_all_of(
        current.get("metadata", {}).get("labels") or {}, desired["metadata"].get("labels") or {}
    )


def updated(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """`desired` over the cluster's metadata: its finalizers (a runtime in use keeps its own), labels and
    annotations others set, and the resourceVersion that makes the replace fail on a concurrent write."""
    metadata = current["metadata"]
    return {
        **desired,
        "metadata": {
            **metadata,
            "labels": {**(metadata.get("labels") or {}), **desired["metadata"].get("labels", {})},
            "annotations": {
                **(metadata.get("annotations") or {}),
                **(desired["metadata"].get("annotations") or {}),
            },
        },
    }


def apply(
    client: KubeClient, manifest: dict[str, Any], *, dry_run: bool = False, adopt: bool = False
) -> Outcome:
    """Create the runtime, or replace it when the cluster's differs; `adopt` takes over one we did not
    install. With `dry_run` nothing is written."""
    desired = labelled(manifest)
    name = desired["metadata"]["name"]
    for _attempt in range(_ATTEMPTS):
        try:
            current = client.get(RUNTIMES, name)
        except NotFound:
            if dry_run:
                return Outcome(name, CREATED, dry_run)
            try:
                client.create(RUNTIMES, desired)
            except AlreadyExists:
                continue
            except NotFound as error:  # the collection itself is missing
                raise NotFound(NO_CRD, reason=error.reason, body=error.body) from error
            return Outcome(name, CREATED)
        if not is_ours(current) and not adopt:
            return Outcome(name, NOT_OURS, dry_run)
        if up_to_date(current, desired):
            return Outcome(name, UNCHANGED, dry_run)
        if dry_run:
            return Outcome(name, UPDATED, dry_run)
        try:
            client.replace(RUNTIMES, updated(current, desired))
        except Conflict:
            continue
        return Outcome(name, UPDATED)
    raise Conflict(
        f"ClusterTrainingRuntime {name} kept changing while it was being updated ({_ATTEMPTS} attempts)"
    )


def install(
    client: KubeClient, manifests: Iterable[dict[str, Any]], *, dry_run: bool = False, adopt: bool = False
) -> list[Outcome]:
    return [apply(client, manifest, dry_run=dry_run, adopt=adopt) for manifest in manifests]
