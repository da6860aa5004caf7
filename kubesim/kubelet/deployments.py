"""A ReplicaSet-less Deployment controller: each Deployment owns its pods directly, enough to become Ready.

Pods are named `<deployment>-<pod-template-hash>-<5 chars>` and labelled like the template plus
`pod-template-hash`, as the real controllers name them, but owned by the Deployment itself. A template change
replaces every pod at once (Recreate); failed pods are replaced. Status reports replicas, updated, ready and
available counts with the Available and Progressing conditions.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from kubesim.errors import ApiError
from kubesim.store import DELETED, Store, Subscription

log = logging.getLogger(__name__)

POD_TEMPLATE_HASH = "pod-template-hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.SafeEncodeString alphabet


def _fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def template_hash(template: dict[str, Any]) -> str:
    """A stable, label-safe hash of a pod template (what `pod-template-hash` holds)."""
    digits = str(_fnv32a(json.dumps(template, sort_keys=True, separators=(",", ":"))))
    return "".join(_SAFE[int(d) % len(_SAFE)] for d in digits)


def _controller_uid(pod: dict[str, Any]) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Deployment":
            return str(ref.get("uid"))
    return None


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def deployment_status(
    deployment: dict[str, Any], pods: list[dict[str, Any]], wanted_hash: str, now: str
) -> dict[str, Any]:
    """The Deployment's status from the pods it owns (pure)."""
    desired = int((deployment.get("spec") or {}).get("replicas", 1))
    updated = [p for p in pods if p["metadata"].get("labels", {}).get(POD_TEMPLATE_HASH) == wanted_hash]
    ready = [p for p in pods if _ready(p)]
    available = len(ready) >= desired
    old_conditions = {c["type"]: c for c in (deployment.get("status") or {}).get("conditions") or []}

    def condition(kind: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
        value = "True" if ok else "False"
        before = old_conditions.get(kind) or {}
        since = before.get("lastTransitionTime") if before.get("status") == value else now
        return {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastUpdateTime": now,
            "lastTransitionTime": since or now,
        }

    name = deployment["metadata"]["name"]
    status: dict[str, Any] = {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": len(pods),
        "updatedReplicas": len(updated),
        "readyReplicas": len(ready),
        "availableReplicas": len(ready),
        "conditions": [
            condition(
                "Available",
                available,
                "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if available
                else "Deployment does not have minimum availability.",
            ),
            condition(
                "Progressing",
                True,
                "NewReplicaSetAvailable" if available else "ReplicaSetUpdated",
                f'ReplicaSet "{name}-{wanted_hash}" has successfully progressed.'
                if available
                else f'ReplicaSet "{name}-{wanted_hash}" is progressing.',
            ),
        ],
    }
    if len(pods) > len(ready):
        status["unavailableReplicas"] = len(pods) - len(ready)
    return {k: v for k, v in status.items() if v != 0 or k in ("observedGeneration", "replicas")}


class DeploymentController:
    """Keeps `spec.replicas` pods of the current template for every Deployment."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._subscriptions: list[Subscription] = []

    def start(self) -> None:
        self._subscriptions = [
            self.store.subscribe(self._on_deployment, resource="deployments.apps"),
            self.store.subscribe(self._on_pod, resource="pods"),
        ]
        for deployment in self.store.list("deployments.apps")["items"]:
            self._on_deployment("ADDED", deployment)

    def stop(self) -> None:
        for subscription in self._subscriptions:
            subscription.cancel()

    def _on_deployment(self, event_type: str, deployment: dict[str, Any]) -> None:
        if event_type != DELETED:
            metadata = deployment["metadata"]
            self.reconcile(metadata.get("namespace", ""), metadata["name"])

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        owner_uid = _controller_uid(pod)
        if owner_uid is None:
            return
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("uid") == owner_uid:
                self.reconcile(pod["metadata"].get("namespace", ""), ref["name"])

    def reconcile(self, namespace: str, name: str) -> None:
        try:
            deployment = self.store.get("deployments.apps", name, namespace)
        except ApiError:
            return
        if deployment["metadata"].get("deletionTimestamp"):
            return
        uid = deployment["metadata"]["uid"]
        template = (deployment.get("spec") or {}).get("template") or {}
        wanted_hash = template_hash(template)
        owned = [p for p in self.store.list("pods", namespace)["items"] if _controller_uid(p) == uid]
        live = [p for p in owned if not p["metadata"].get("deletionTimestamp")]
        keep = []
        for pod in live:
            stale = pod["metadata"].get("labels", {}).get(POD_TEMPLATE_HASH) != wanted_hash
            failed = (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")
            if stale or failed:
                self._delete(pod)
            else:
                keep.append(pod)
        desired = int((deployment.get("spec") or {}).get("replicas", 1))
        keep.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""))
        for pod in keep[desired:]:
            self._delete(pod)
        keep = keep[:desired]
        for _ in range(desired - len(keep)):
            keep.append(self._create_pod(deployment, template, wanted_hash))
        self._write_status(namespace, name, uid, keep, wanted_hash)

    def _delete(self, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        try:
            self.store.delete("pods", metadata["name"], metadata.get("namespace"))
        except ApiError as error:
            log.debug("kubesim deployments: could not delete pod %s: %s", metadata["name"], error)

    def _create_pod(
        self, deployment: dict[str, Any], template: dict[str, Any], pod_hash: str
    ) -> dict[str, Any]:
        metadata = deployment["metadata"]
        template_metadata = template.get("metadata") or {}
        suffix = "".join(secrets.choice(_SAFE) for _ in range(5))
        annotations = dict(template_metadata.get("annotations") or {})
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{metadata['name']}-{pod_hash}-{suffix}",
                "generateName": f"{metadata['name']}-{pod_hash}-",
                "namespace": metadata.get("namespace", ""),
                "labels": {**(template_metadata.get("labels") or {}), POD_TEMPLATE_HASH: pod_hash},
                **({"annotations": annotations} if annotations else {}),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": metadata["name"],
                        "uid": metadata["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        return self.store.create(pod)

    def _write_status(
        self, namespace: str, name: str, uid: str, pods: list[dict[str, Any]], wanted_hash: str
    ) -> None:
        now = self.store.clock.timestamp()

        def change(deployment: dict[str, Any]) -> dict[str, Any] | None:
            if deployment["metadata"]["uid"] != uid:
                return None
            current = [self._fresh(p) for p in pods]
            status = deployment_status(deployment, [p for p in current if p is not None], wanted_hash, now)
            if _same_counts(deployment.get("status") or {}, status):
                return None
            deployment["status"] = status
            return deployment

        try:
            self.store.mutate(
                "deployments.apps",
                name,
                change,
                namespace=namespace,
                subresource="status",
                field_manager="deployment-controller",
            )
        except ApiError as error:
            log.debug("kubesim deployments: status of %s/%s not written: %s", namespace, name, error)

    def _fresh(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        metadata = pod["metadata"]
        try:
            return self.store.get("pods", metadata["name"], metadata.get("namespace"))
        except ApiError:
            return None


def _same_counts(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a status rewrite would only refresh timestamps (skip it: no event storms)."""

    def counts(status: dict[str, Any]) -> tuple[Any, ...]:
        conditions = tuple((c.get("type"), c.get("status")) for c in status.get("conditions") or [])
        fields = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
        return (*(status.get(f) for f in fields), status.get("unavailableReplicas"), conditions)

    return counts(old) == counts(new)
