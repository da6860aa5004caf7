"""The disruption controller: the status of every PodDisruptionBudget, as kube-controller-manager's
(pkg/controller/disruption) computes it, so that the eviction subresource (kubesim.kubelet.eviction) can
honour it.

`expectedPods` is the scale of the pods' controllers (a Deployment for its ReplicaSets' pods, a
ReplicaSet, StatefulSet, ReplicationController, or any kind with a `scale` subresource) — or, for an integer
`minAvailable`, the number of pods; `desiredHealthy` follows from `minAvailable`/`maxUnavailable`;
`currentHealthy` counts the ready pods not being deleted nor recently evicted (`disruptedPods`, forgotten
after two minutes); `disruptionsAllowed` is their difference (0 while nothing is expected). A pod whose
controller cannot be found fails the sync safe: no disruption allowed, condition SyncFailed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubesim.clock import format_timestamp, parse_timestamp
from kubesim.errors import ApiError
from kubesim.kubelet import ownership, rollout
from kubesim.kubelet.replicasets import ready_since
from kubesim.kubelet.resyncs import Resyncs
from kubesim.scale import scale_of
from kubesim.selectors import match_labels_selector
from kubesim.store import Store, Subscriptions

log = logging.getLogger(__name__)

BUDGETS = "poddisruptionbudgets.policy"
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"
DELETION_TIMEOUT = 120.0  # how long an evicted pod counts as gone before it is deleted
# Kinds whose changes may change a budget's expected pods (their scale).
SCALED = ("replicasets.apps", "deployments.apps", "statefulsets.apps", "replicationcontrollers")

Scale = tuple[str, int]  # (controller uid, its replicas)


def selects(budget: dict[str, Any], pod: dict[str, Any]) -> bool:
    """policy/v1: a missing selector matches no pod, an empty one every pod of the namespace."""
    selector = (budget.get("spec") or {}).get("selector")
    if selector is None:
        return False
    try:
        return match_labels_selector(selector).matches(pod)
    except ApiError:
        return False


def expected_and_desired(
    budget: dict[str, Any], pods: list[dict[str, Any]], scale: Callable[[dict[str, Any]], Scale | None]
) -> tuple[int, int]:
    """getExpectedPodCount: (expectedPods, desiredHealthy). `scale(pod)` is the scale of the pod's
    controller; a pod with a controller `scale` cannot find raises LookupError."""
    spec = budget.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        expected = _expected_scale(pods, scale)
        unavailable = rollout.scaled_value(spec["maxUnavailable"], expected, round_up=True)
        return expected, max(0, expected - unavailable)
    minimum = spec.get("minAvailable")
    if isinstance(minimum, int):
        return len(pods), minimum
    if minimum is not None:
        expected = _expected_scale(pods, scale)
        return expected, rollout.scaled_value(minimum, expected, round_up=True)
    return 0, 0


def _expected_scale(pods: list[dict[str, Any]], scale: Callable[[dict[str, Any]], Scale | None]) -> int:
    """The replicas of the pods' controllers, each counted once; pods without a controller are ignored."""
    scales: dict[str, int] = {}
    for pod in pods:
        if ownership.controller_of(pod) is None:
            continue
        found = scale(pod)
        if found is None:
            raise LookupError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        scales[found[0]] = found[1]
    return sum(scales.values())


def still_disrupted(budget: dict[str, Any], pods: list[dict[str, Any]], now: float) -> dict[str, str]:
    """buildDisruptedPodMap: the evicted pods that still exist, are not yet being deleted and were
    evicted less than DELETION_TIMEOUT ago."""
    recorded = (budget.get("status") or {}).get("disruptedPods") or {}
    kept = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        if name not in recorded or pod["metadata"].get("deletionTimestamp"):
            continue
        if parse_timestamp(recorded[name]).timestamp() + DELETION_TIMEOUT >= now:
            kept[name] = recorded[name]
    return kept


def current_healthy(pods: list[dict[str, Any]], disrupted: dict[str, str]) -> int:
    """countHealthyPods: ready, neither being deleted nor recently evicted."""
    return sum(
        1
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and pod["metadata"]["name"] not in disrupted
        and ready_since(pod) is not None
    )


def set_condition(conditions: list[dict[str, Any]], new: dict[str, Any], now: str) -> list[dict[str, Any]]:
    """apimeta.SetStatusCondition: the transition time moves only when the status does."""
    old = next((c for c in conditions if c.get("type") == new["type"]), None)
    since = (
        old.get("lastTransitionTime", now) if old is not None and old.get("status") == new["status"] else now
    )
    merged = {**new, "lastTransitionTime": since}
    if old is None:
        return [*conditions, merged]
    return [merged if c.get("type") == new["type"] else c for c in conditions]


def allowed_condition(status: dict[str, Any], now: str) -> list[dict[str, Any]]:
    """UpdateDisruptionAllowedCondition: True SufficientPods while disruptions are allowed, else False
    InsufficientPods."""
    allowed = status["disruptionsAllowed"] > 0
    condition = {
        "type": DISRUPTION_ALLOWED,
        "status": "True" if allowed else "False",
        "observedGeneration": status.get("observedGeneration", 0),
        "reason": SUFFICIENT if allowed else INSUFFICIENT,
        "message": "",
    }
    return set_condition(status.get("conditions") or [], condition, now)


def budget_status(
    budget: dict[str, Any], pods: list[dict[str, Any]], expected: int, desired: int, now: float
) -> dict[str, Any]:
    """updatePdbStatus (pure): the counts and the DisruptionAllowed condition."""
    disrupted = still_disrupted(budget, pods, now)
    healthy = current_healthy(pods, disrupted)
    allowed = healthy - desired
    status: dict[str, Any] = {
        "observedGeneration": budget["metadata"].get("generation", 1),
        "disruptionsAllowed": allowed if expected > 0 and allowed > 0 else 0,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": (budget.get("status") or {}).get("conditions") or [],
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    status["conditions"] = allowed_condition(status, format_timestamp_at(now))
    return status


def failed_status(budget: dict[str, Any], message: str, now: float) -> dict[str, Any]:
    """failSafe: nothing may be disrupted while the budget cannot be computed."""
    status = {**(budget.get("status") or {}), "disruptionsAllowed": 0}
    for field in ("currentHealthy", "desiredHealthy", "expectedPods"):
        status.setdefault(field, 0)
    condition = {
        "type": DISRUPTION_ALLOWED,
        "status": "False",
        "observedGeneration": status.get("observedGeneration", 0),
        "reason": SYNC_FAILED,
        "message": message,
    }
    status["conditions"] = set_condition(status.get("conditions") or [], condition, format_timestamp_at(now))
    return status


def format_timestamp_at(epoch: float) -> str:
    from datetime import UTC, datetime

    return format_timestamp(datetime.fromtimestamp(epoch, UTC))


class DisruptionController:
    """Keeps every PodDisruptionBudget's status; `start()` subscribes, `stop()` ends it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.RLock()
        self._subscriptions = Subscriptions()
        self._resyncs = Resyncs(store.clock)  # by budget uid: when a recorded eviction expires

    def start(self) -> None:
        self._subscriptions = self.store.list_then_watch(
            (BUDGETS, self._on_budget),
            ("pods", self._on_namespace_change),
            *((kind, self._on_namespace_change) for kind in SCALED),
        )

    def stop(self) -> None:
        self._subscriptions.cancel()
        self._resyncs.cancel_all()

    def _on_budget(self, event_type: str, budget: dict[str, Any]) -> None:
        if event_type != "DELETED":
            self.sync(budget["metadata"].get("namespace", ""), budget["metadata"]["name"])

    def _on_namespace_change(self, _event_type: str, obj: dict[str, Any]) -> None:
        namespace = obj["metadata"].get("namespace", "")
        for budget in self.store.list(BUDGETS, namespace)["items"]:
            self.sync(namespace, budget["metadata"]["name"])

    def sync(self, namespace: str, name: str) -> None:
        with self._lock:
            budget = self.store.get_or_none(BUDGETS, name, namespace)
            if budget is None:
                return
            pods = [p for p in self.store.list("pods", namespace)["items"] if selects(budget, p)]
            now = self.store.clock.time()
            try:
                expected, desired = expected_and_desired(budget, pods, self._scale)
            except LookupError as error:
                self._write(budget, failed_status(budget, str(error), now))
                return
            status = budget_status(budget, pods, expected, desired, now)
            self._write(budget, status)
            self._recheck(budget, status)

    def _scale(self, pod: dict[str, Any]) -> Scale | None:
        """The finders: a ReplicaSet's Deployment (else the ReplicaSet), a StatefulSet or
        ReplicationController, or any kind with a `scale` subresource."""
        reference = ownership.controller_of(pod)
        if reference is None:
            return None
        namespace = pod["metadata"].get("namespace", "")
        owner = self._owner(reference, namespace)
        if owner is None:
            return None
        if owner["kind"] == "ReplicaSet" and (parent := ownership.controller_of(owner)) is not None:
            deployment = self._owner(parent, namespace) if parent.get("kind") == "Deployment" else None
            if deployment is not None:
                return deployment["metadata"]["uid"], int(deployment["spec"].get("replicas", 1))
        resource = self.store.registry.for_kind(owner["apiVersion"], owner["kind"])
        if resource is None or resource.scale is None:
            return None
        try:
            return owner["metadata"]["uid"], int(scale_of(owner, resource.scale)["spec"]["replicas"])
        except ApiError:
            return None

    def _owner(self, reference: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        resource = self.store.registry.for_kind(
            str(reference.get("apiVersion", "")), str(reference.get("kind", ""))
        )
        if resource is None:
            return None
        owner = self.store.get_or_none(resource, str(reference.get("name", "")), namespace)
        return owner if owner is not None and owner["metadata"]["uid"] == reference.get("uid") else None

    def _write(self, budget: dict[str, Any], status: dict[str, Any]) -> None:
        metadata = budget["metadata"]

        def change(stored: dict[str, Any]) -> dict[str, Any] | None:
            if stored["metadata"]["uid"] != metadata["uid"] or _same(stored.get("status") or {}, status):
                return None
            stored["status"] = status
            return stored

        try:
            self.store.mutate_object(
                BUDGETS, budget, change, subresource="status", field_manager="disruption-controller"
            )
        except ApiError as error:
            log.debug("kubesim disruption: status of %s not written: %s", metadata["name"], error)

    def _recheck(self, budget: dict[str, Any], status: dict[str, Any]) -> None:
        """Sync again when the oldest recorded eviction expires (a pod that was not deleted after all)."""
        metadata = budget["metadata"]
        self._resyncs.forget(metadata["uid"])
        recorded = status.get("disruptedPods") or {}
        if not recorded:
            return
        due = min(parse_timestamp(when).timestamp() for when in recorded.values()) + DELETION_TIMEOUT
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        delay = max(0.0, due - self.store.clock.time()) + 1.0
        self._resyncs.arm(metadata["uid"], delay, lambda: self.sync(namespace, name))


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Equal but for condition transition times (which only a status change moves)."""
    return old == new
