"""The ReplicaSet controller: keeps `spec.replicas` active pods owned by each ReplicaSet, as kube-controller-
manager's does (pkg/controller/replicaset).

Pods are made from the template (named `<replicaset>-<5 chars>` by `generateName`, the template's labels,
annotations and finalizers, the ReplicaSet as controller owner); surplus pods are deleted in the upstream
order (unscheduled, pending, not ready, cheaper, doubled up on a node, ready for less time, restarted more,
newer first). Orphan pods the selector matches are adopted, owned pods it no longer matches are released.
Status: `replicas`, `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` (ready for
`minReadySeconds`, re-checked by a clock timer), `observedGeneration`, and the `ReplicaFailure` condition
while pods cannot be created (retried with a doubling back-off).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from kubesim.clock import parse_timestamp
from kubesim.errors import ApiError
from kubesim.kubelet import ownership
from kubesim.kubelet.resyncs import OwnerController
from kubesim.selectors import match_labels_selector
from kubesim.store import DELETED

log = logging.getLogger(__name__)

REPLICA_FAILURE = "ReplicaFailure"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def is_active(pod: dict[str, Any]) -> bool:
    """controller.FilterActivePods: neither finished nor being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def ready_since(pod: dict[str, Any]) -> float | None:
    """When the pod's Ready condition last turned True (epoch seconds), or None while it is not ready."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            if condition.get("status") != "True":
                return None
            since = condition.get("lastTransitionTime")
            return parse_timestamp(since).timestamp() if since else 0.0
    return None


def is_available(pod: dict[str, Any], min_ready_seconds: int, now: float) -> bool:
    """podutil.IsPodAvailable: ready, and for at least `minReadySeconds`."""
    since = ready_since(pod)
    return since is not None and (min_ready_seconds == 0 or since + min_ready_seconds <= now)


def replica_set_status(
    replica_set: dict[str, Any], pods: list[dict[str, Any]], now: float, failure: dict[str, Any] | None
) -> dict[str, Any]:
    """The status the controller writes (pure): counts over the active pods it owns; `failure` is the
    ReplicaFailure condition while creating pods fails (the old one is kept while it still fails)."""
    spec = replica_set.get("spec") or {}
    template_labels = match_labels_selector(
        {"matchLabels": ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}}
    )
    min_ready = int(spec.get("minReadySeconds") or 0)
    old = replica_set.get("status") or {}
    conditions = [c for c in old.get("conditions") or [] if c.get("type") != REPLICA_FAILURE]
    if failure is not None:
        kept = next((c for c in old.get("conditions") or [] if c.get("type") == REPLICA_FAILURE), None)
        conditions.append(kept or failure)
    status: dict[str, Any] = {
        "replicas": len(pods),
        "fullyLabeledReplicas": sum(1 for p in pods if template_labels.matches(p)),
        "readyReplicas": sum(1 for p in pods if ready_since(p) is not None),
        "availableReplicas": sum(1 for p in pods if is_available(p, min_ready, now)),
        "observedGeneration": replica_set["metadata"].get("generation", 1),
        "conditions": conditions,
    }
    return {k: v for k, v in status.items() if v or k == "replicas"}  # omitempty, replicas always


def deletion_order(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods in the order the controller deletes surplus ones (controller.ActivePodsWithRanks): not yet
    scheduled, Pending before Unknown before Running, not ready, lower deletion cost, doubled up on a node,
    ready for less time, more restarts, newer."""
    on_node = Counter(p["spec"].get("nodeName") for p in pods if (p.get("spec") or {}).get("nodeName"))

    def key(pod: dict[str, Any]) -> tuple[Any, ...]:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        since = ready_since(pod)
        cost = (pod["metadata"].get("annotations") or {}).get(DELETION_COST, "0")
        restarts = sum(int(s.get("restartCount") or 0) for s in status.get("containerStatuses") or [])
        created = pod["metadata"].get("creationTimestamp") or ""
        return (
            bool(node),
            _PHASE_RANK.get(status.get("phase", "Pending"), 0),
            since is not None,
            int(cost) if cost.lstrip("-").isdigit() else 0,
            -(on_node[node] if node else 0),
            -(since or 0.0),
            -restarts,
            _descending(created),
        )

    return sorted(pods, key=key)


def _descending(text: str) -> tuple[int, ...]:
    """Sorts newer timestamps first (an empty one before all)."""
    return tuple(-ord(c) for c in text) if text else (-(1 << 20),)


def pod_for(replica_set: dict[str, Any]) -> dict[str, Any]:
    """A pod from the ReplicaSet's template (controller.GetPodFromTemplate; pure)."""
    metadata = replica_set["metadata"]
    template = (replica_set.get("spec") or {}).get("template") or {}
    template_metadata = template.get("metadata") or {}
    pod_metadata: dict[str, Any] = {
        "generateName": f"{metadata['name']}-",
        "namespace": metadata.get("namespace", ""),
        "labels": dict(template_metadata.get("labels") or {}),
        "ownerReferences": [ownership.controller_reference(replica_set)],
    }
    for field in ("annotations", "finalizers"):
        if template_metadata.get(field):
            pod_metadata[field] = template_metadata[field]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": template.get("spec") or {}}


class ReplicaSetController(OwnerController):
    """Keeps every ReplicaSet's pods; `start()` subscribes, `stop()` ends it. A ReplicaSet's re-sync is a
    minReadySeconds re-check or a retry."""

    def start(self) -> None:
        self._subscriptions = self.store.list_then_watch(
            ("replicasets.apps", self._on_owner), ("pods", self._on_pod)
        )

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        """A pod changed: its owner syncs; an orphan may be adopted by a ReplicaSet that selects it."""
        namespace = pod["metadata"].get("namespace", "")
        adoptable = event_type != DELETED and is_active(pod)
        for name in ownership.owners_to_sync(
            self.store, pod, "ReplicaSet", "replicasets.apps", adoptable=adoptable
        ):
            self.reconcile(namespace, name)

    def reconcile(self, namespace: str, name: str) -> None:
        with self._lock:
            replica_set = self.store.get_or_none("replicasets.apps", name, namespace)
            if replica_set is None:
                return
            pods = ownership.claim(
                self.store,
                replica_set,
                [p for p in self.store.list("pods", namespace)["items"] if is_active(p)],
            )
            failure = None
            if not replica_set["metadata"].get("deletionTimestamp"):
                pods, failure = self._manage(replica_set, pods)
            self._write_status(replica_set, pods, failure)
            self._recheck_availability(replica_set, pods)

    def _manage(
        self, replica_set: dict[str, Any], pods: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Create or delete pods towards `spec.replicas`; a refused create becomes the failure condition."""
        wanted = int((replica_set.get("spec") or {}).get("replicas", 1))
        uid = replica_set["metadata"]["uid"]
        for pod in deletion_order(pods)[: max(0, len(pods) - wanted)]:
            ownership.delete_pod(self.store, pod, "replicasets")
            pods = [p for p in pods if p["metadata"]["uid"] != pod["metadata"]["uid"]]
        for _ in range(wanted - len(pods)):
            try:
                pods.append(self.store.create(pod_for(replica_set)))
            except ApiError as error:
                log.debug("kubesim replicasets: could not create a pod of %s: %s", uid, error)
                self._resyncs.retry(uid, self._resync(replica_set))
                now = self.store.clock.timestamp()
                return pods, {
                    "type": REPLICA_FAILURE,
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": error.message,
                    "lastTransitionTime": now,
                }
        self._resyncs.succeeded(uid)
        return pods, None

    def _recheck_availability(self, replica_set: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        """With `minReadySeconds`, sync again when the next ready pod becomes available."""
        min_ready = int((replica_set.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.store.clock.time()
        pending = [
            since + min_ready - now
            for p in pods
            if (since := ready_since(p)) is not None and since + min_ready > now
        ]
        metadata = replica_set["metadata"]
        if min_ready and pending and not self._resyncs.retrying(metadata["uid"]):
            self._resyncs.arm(metadata["uid"], min(pending), self._resync(replica_set))

    def _resync(self, replica_set: dict[str, Any]) -> Callable[[], None]:
        namespace, name = replica_set["metadata"].get("namespace", ""), replica_set["metadata"]["name"]
        return lambda: self.reconcile(namespace, name)

    def _write_status(
        self, replica_set: dict[str, Any], pods: list[dict[str, Any]], failure: dict[str, Any] | None
    ) -> None:
        metadata = replica_set["metadata"]
        current = [
            p for p in (ownership.fresh(self.store, p) for p in pods) if p is not None and is_active(p)
        ]
        now = self.store.clock.time()

        def change(stored: dict[str, Any]) -> dict[str, Any] | None:
            if stored["metadata"]["uid"] != metadata["uid"]:
                return None
            status = replica_set_status(stored, current, now, failure)
            if status == (stored.get("status") or {}):
                return None
            stored["status"] = status
            return stored

        try:
            self.store.mutate_object(
                "replicasets.apps",
                replica_set,
                change,
                subresource="status",
                field_manager="replicaset-controller",
            )
        except ApiError as error:
            log.debug("kubesim replicasets: status of %s not written: %s", metadata["name"], error)
