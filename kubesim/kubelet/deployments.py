"""The Deployment controller: a ReplicaSet per pod template, rolled out as kube-controller-manager does
(pkg/controller/deployment; the decisions are the pure functions of kubesim.kubelet.rollout).

Each sync claims the Deployment's ReplicaSets, then: a Deployment being deleted only has its status
written; a paused one, or one whose replicas changed, is scaled without a rollout (proportionally across
its active ReplicaSets); otherwise the new ReplicaSet (`<deployment>-<pod-template-hash>`, revision one
more than the others') is rolled out by RollingUpdate (within maxSurge/maxUnavailable) or Recreate (old
pods gone first), old revisions beyond `revisionHistoryLimit` are deleted, and the status is written with
the Available and Progressing conditions. A rollout without progress for `progressDeadlineSeconds` is
marked ProgressDeadlineExceeded by a clock timer. The ReplicaSet controller (kubesim.kubelet.replicasets)
makes the pods.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubesim.errors import ApiError
from kubesim.jsonutil import clone
from kubesim.kubelet import ownership, progress, rollout
from kubesim.kubelet.resyncs import OwnerController
from kubesim.kubelet.rollout import Rollout
from kubesim.store import DELETED

log = logging.getLogger(__name__)

DEPLOYMENTS, REPLICA_SETS = "deployments.apps", "replicasets.apps"


class _Requeue(Exception):
    """The sync stops here and runs again on the event its own write causes (or on a retry timer)."""


class DeploymentController(OwnerController):
    """Rolls out every Deployment through its ReplicaSets; `start()` subscribes, `stop()` ends it. A
    Deployment's re-sync is its progress-deadline check or a retry."""

    def start(self) -> None:
        self._subscriptions = self.store.list_then_watch(
            (DEPLOYMENTS, self._on_owner), (REPLICA_SETS, self._on_replica_set), ("pods", self._on_pod)
        )

    # --- events --------------------------------------------------------------------------------------

    def _on_replica_set(self, event_type: str, replica_set: dict[str, Any]) -> None:
        namespace = replica_set["metadata"].get("namespace", "")
        adoptable = event_type != DELETED
        for name in ownership.owners_to_sync(
            self.store, replica_set, "Deployment", DEPLOYMENTS, adoptable=adoptable
        ):
            self.reconcile(namespace, name)

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        """A Recreate rollout waits for the old pods to be gone: their deletions wake it."""
        owner = ownership.controller_of(pod)
        if event_type != DELETED or owner is None or owner.get("kind") != "ReplicaSet":
            return
        namespace = pod["metadata"].get("namespace", "")
        replica_set = self.store.get_or_none(REPLICA_SETS, owner["name"], namespace)
        if replica_set is None:
            return
        deployment = ownership.controller_of(replica_set)
        if deployment is not None and deployment.get("kind") == "Deployment":
            self.reconcile(namespace, deployment["name"])

    # --- one sync ------------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> None:
        with self._lock:
            deployment = self.store.get_or_none(DEPLOYMENTS, name, namespace)
            if deployment is None:
                return
            try:
                self._sync(deployment)
            except _Requeue:
                return

    def _sync(self, deployment: dict[str, Any]) -> None:
        namespace = deployment["metadata"].get("namespace", "")
        sets = ownership.claim(self.store, deployment, self.store.list(REPLICA_SETS, namespace)["items"])
        plan = Rollout.parse(deployment)
        if deployment["metadata"].get("deletionTimestamp"):
            deployment, new, old = self._new_and_old(deployment, plan, sets)
            self._write_status(deployment, plan, self._calculated(deployment, plan, old, new))
            return
        deployment = self._check_paused(deployment, plan)
        deployment, new, old = self._new_and_old(deployment, plan, sets)
        if plan.paused or rollout.is_scaling_event(plan, [*old, *([new] if new else [])]):
            self._scale_only(deployment, plan, new, old)
        elif plan.rolling:
            self._roll(deployment, plan, new, old)
        else:
            self._recreate(deployment, plan, new, old)

    def _new_and_old(
        self, deployment: dict[str, Any], plan: Rollout, sets: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]:
        """getAllReplicaSetsAndSyncRevision without creating: the new ReplicaSet if there is one (its
        annotations brought up to date; the Deployment takes its revision) and the old ones."""
        new = rollout.find_new(deployment, sets)
        old = [rs for rs in sets if new is None or rs["metadata"]["uid"] != new["metadata"]["uid"]]
        if new is not None:
            revision = rollout.max_revision(old) + 1
            annotations = rollout.new_annotations(deployment, new, revision, exists=True)
            min_ready = int((new.get("spec") or {}).get("minReadySeconds") or 0)
            if (
                annotations != (new["metadata"].get("annotations") or {})
                or min_ready != plan.min_ready_seconds
            ):
                return deployment, self._update_new(new, annotations, plan.min_ready_seconds), old
            status = clone(deployment.get("status") or {})
            if (
                plan.progress_deadline is not None
                and progress.get_condition(status, progress.PROGRESSING) is None
            ):
                found = f'Found new replica set "{new["metadata"]["name"]}"'
                progress.set_condition(
                    status,
                    progress.condition(
                        progress.PROGRESSING, "True", progress.FOUND_NEW_RS, found, self._now()
                    ),
                )
            deployment = self._record(deployment, plan, str(rollout.revision(new)), status)
            return deployment, new, old
        return deployment, None, old

    def _create_new(
        self, deployment: dict[str, Any], plan: Rollout, old: list[dict[str, Any]], revision: int
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The new ReplicaSet, made (getNewReplicaSet's create half): Progressing NewReplicaSetCreated; a
        name taken by a ReplicaSet with another template is a hash collision (collisionCount + 1)."""
        wanted = rollout.new_replica_set(deployment, ownership.controller_reference(deployment))
        wanted["spec"]["replicas"] = rollout.new_rs_replicas(plan, [*old, wanted], wanted)
        wanted["metadata"]["annotations"] = rollout.new_annotations(
            deployment, wanted, revision, exists=False
        )
        status = clone(deployment.get("status") or {})
        try:
            created = self.store.create(wanted)
        except ApiError as error:
            if error.reason != "AlreadyExists":
                self._failed_create(deployment, plan, wanted, error, status)
            existing = self._existing(wanted)
            if existing is None or not ownership.is_controlled_by(existing, deployment):
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                self._write_status(deployment, plan, status)
                raise _Requeue from None
            created = existing  # ours already, made by an earlier sync that did not get to record it
        else:
            if plan.progress_deadline is not None:
                message = f'Created new replica set "{created["metadata"]["name"]}"'
                progress.set_condition(
                    status,
                    progress.condition(
                        progress.PROGRESSING, "True", progress.NEW_RS_CREATED, message, self._now()
                    ),
                )
        self._resyncs.succeeded(deployment["metadata"]["uid"])
        deployment = self._record(deployment, plan, str(revision), status)
        return deployment, created

    def _failed_create(
        self,
        deployment: dict[str, Any],
        plan: Rollout,
        wanted: dict[str, Any],
        error: ApiError,
        status: dict[str, Any],
    ) -> None:
        """A refused ReplicaSet (a webhook, a quota): Progressing False, FailedRSCreate; retried later."""
        if plan.progress_deadline is not None:
            message = f'Failed to create new replica set "{wanted["metadata"]["name"]}": {error.message}'
            progress.set_condition(
                status,
                progress.condition(progress.PROGRESSING, "False", "FailedRSCreate", message, self._now()),
            )
            self._write_status(deployment, plan, status)
        self._resyncs.retry(deployment["metadata"]["uid"], self._resync(deployment))
        raise _Requeue from None

    def _existing(self, wanted: dict[str, Any]) -> dict[str, Any] | None:
        metadata = wanted["metadata"]
        try:
            existing = self.store.get(REPLICA_SETS, metadata["name"], metadata["namespace"])
        except ApiError:
            return None
        template = (existing.get("spec") or {}).get("template") or {}
        return existing if rollout.equal_ignoring_hash(template, wanted["spec"]["template"]) else None

    def _check_paused(self, deployment: dict[str, Any], plan: Rollout) -> dict[str, Any]:
        """checkPausedConditions: Progressing Unknown DeploymentPaused / DeploymentResumed, so a paused
        Deployment never times out."""
        if plan.progress_deadline is None:
            return deployment
        status = clone(deployment.get("status") or {})
        current = progress.get_condition(status, progress.PROGRESSING) or {}
        if current.get("reason") == progress.TIMED_OUT:
            return deployment
        was_paused = current.get("reason") == progress.PAUSED
        if plan.paused and not was_paused:
            change = (progress.PAUSED, "Deployment is paused")
        elif not plan.paused and was_paused:
            change = (progress.RESUMED, "Deployment is resumed")
        else:
            return deployment
        progress.set_condition(
            status, progress.condition(progress.PROGRESSING, "Unknown", *change, self._now())
        )
        return self._write_status(deployment, plan, status)

    # --- strategies ----------------------------------------------------------------------------------

    def _scale_only(
        self, deployment: dict[str, Any], plan: Rollout, new: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> None:
        """sync: scale the ReplicaSets for `spec.replicas` without rolling out; a paused Deployment also
        drops history beyond its limit."""
        status_replicas = int((deployment.get("status") or {}).get("replicas") or 0)
        sizes, annotate = rollout.proportional_sizes(plan, new, old, status_replicas)
        scaled = {}
        for rs in [*([new] if new else []), *old]:
            name = rs["metadata"]["name"]
            if name in sizes:
                scaled[name] = self._scale(rs, sizes[name], plan, annotate_unchanged=annotate)
        new = scaled.get(new["metadata"]["name"], new) if new else None
        old = [scaled.get(rs["metadata"]["name"], rs) for rs in old]
        if plan.paused:
            self._clean_history(plan, old)
        self._write_status(deployment, plan, self._calculated(deployment, plan, old, new))

    def _roll(
        self, deployment: dict[str, Any], plan: Rollout, new: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> None:
        """rolloutRolling: grow the new ReplicaSet within maxSurge, else shrink old ones within
        maxUnavailable (unhealthy pods first); once complete, drop history beyond the limit."""
        if new is None:
            deployment, new = self._create_new(deployment, plan, old, rollout.max_revision(old) + 1)
        if rollout.replicas(new) != plan.replicas:
            target = min(plan.replicas, rollout.new_rs_replicas(plan, [*old, new], new))
            if target != rollout.replicas(new):
                new = self._scale(new, target, plan)
                self._finish(deployment, plan, old, new)
                return
        live = rollout.active(old)
        if rollout.total_replicas(live) > 0:
            room = rollout.old_scale_down_room(plan, [*old, new], new)
            if room > 0:
                cleaned = rollout.unhealthy_cleanup(live, room)
                live = [
                    self._scale(rs, cleaned[rs["metadata"]["name"]], plan)
                    if rs["metadata"]["name"] in cleaned
                    else rs
                    for rs in live
                ]
                shrunk = rollout.rolling_scale_down(plan, [*live, new], live)
                if cleaned or shrunk:
                    for rs in live:
                        if rs["metadata"]["name"] in shrunk:
                            self._scale(rs, shrunk[rs["metadata"]["name"]], plan)
                    self._finish(deployment, plan, self._refreshed(old), new)
                    return
        if progress.complete(plan, deployment.get("status") or {}):
            self._clean_history(plan, old)
        self._finish(deployment, plan, old, new)

    def _recreate(
        self, deployment: dict[str, Any], plan: Rollout, new: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> None:
        """rolloutRecreate: scale the old ReplicaSets to 0, wait until none of their pods is left, then
        make and scale up the new one."""
        scaled_down = [self._scale(rs, 0, plan) for rs in rollout.active(old)]
        if scaled_down:
            self._finish(deployment, plan, self._refreshed(old), new)
            return
        if self._old_pods_running(deployment["metadata"].get("namespace", ""), new, old):
            self._finish(deployment, plan, old, new)
            return
        if new is None:
            deployment, new = self._create_new(deployment, plan, old, rollout.max_revision(old) + 1)
        new = self._scale(new, plan.replicas, plan)
        if progress.complete(plan, deployment.get("status") or {}):
            self._clean_history(plan, old)
        self._finish(deployment, plan, old, new)

    def _old_pods_running(
        self, namespace: str, new: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> bool:
        """oldPodsRunning: an old ReplicaSet still counts pods, or one of its pods has not finished."""
        if rollout.actual_replicas(old) > 0:
            return True
        old_uids = {rs["metadata"]["uid"] for rs in old} - ({new["metadata"]["uid"]} if new else set())
        for pod in self.store.list("pods", namespace)["items"] if old_uids else []:
            owner = ownership.controller_of(pod)
            phase = (pod.get("status") or {}).get("phase")
            if owner is not None and owner.get("uid") in old_uids and phase not in ("Succeeded", "Failed"):
                return True
        return False

    def _finish(
        self, deployment: dict[str, Any], plan: Rollout, old: list[dict[str, Any]], new: dict[str, Any] | None
    ) -> None:
        """syncRolloutStatus, then a timer for the progress deadline while the rollout has not finished."""
        now = self._now()
        status = progress.rollout_status(plan, deployment, [*old, *([new] if new else [])], new, now)
        self._write_status(deployment, plan, status)
        delay = progress.recheck_after(plan, status, now)
        if delay is not None:
            self._resyncs.arm(deployment["metadata"]["uid"], delay, self._resync(deployment))

    # --- writes --------------------------------------------------------------------------------------

    def _calculated(
        self, deployment: dict[str, Any], plan: Rollout, old: list[dict[str, Any]], new: dict[str, Any] | None
    ) -> dict[str, Any]:
        sets = [*old, *([new] if new else [])]
        return progress.omit_empty(progress.calculate_status(plan, deployment, sets, new, self._now()))

    def _scale(
        self, rs: dict[str, Any], size: int, plan: Rollout, *, annotate_unchanged: bool = False
    ) -> dict[str, Any]:
        """scaleReplicaSet(AndRecordEvent): the new size and the Deployment's replicas annotations."""
        annotations = rollout.replicas_annotations(plan)
        same_size = rollout.replicas(rs) == size
        current = rs["metadata"].get("annotations") or {}
        if same_size and (not annotate_unchanged or all(current.get(k) == v for k, v in annotations.items())):
            return rs

        def change(stored: dict[str, Any]) -> dict[str, Any] | None:
            if stored["metadata"]["uid"] != rs["metadata"]["uid"]:
                return None
            stored["spec"]["replicas"] = size
            stored["metadata"]["annotations"] = {
                **(stored["metadata"].get("annotations") or {}),
                **annotations,
            }
            return stored

        return self._mutate_set(rs, change)

    def _update_new(self, rs: dict[str, Any], annotations: dict[str, str], min_ready: int) -> dict[str, Any]:
        def change(stored: dict[str, Any]) -> dict[str, Any] | None:
            if stored["metadata"]["uid"] != rs["metadata"]["uid"]:
                return None
            stored["metadata"]["annotations"] = annotations
            if min_ready:
                stored["spec"]["minReadySeconds"] = min_ready
            else:
                stored["spec"].pop("minReadySeconds", None)
            return stored

        return self._mutate_set(rs, change)

    def _mutate_set(self, rs: dict[str, Any], change: Any) -> dict[str, Any]:
        metadata = rs["metadata"]
        try:
            return self.store.mutate_object(REPLICA_SETS, rs, change, field_manager="deployment-controller")
        except ApiError as error:
            log.debug("kubesim deployments: could not update %s: %s", metadata["name"], error)
            raise _Requeue from None

    def _refreshed(self, sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [current for rs in sets if (current := ownership.fresh(self.store, rs)) is not None]

    def _clean_history(self, plan: Rollout, old: list[dict[str, Any]]) -> None:
        for rs in rollout.history_to_delete(plan, old):
            metadata = rs["metadata"]
            try:
                self.store.delete(REPLICA_SETS, metadata["name"], metadata.get("namespace"))
            except ApiError as error:
                log.debug("kubesim deployments: could not delete %s: %s", metadata["name"], error)

    def _record(
        self, deployment: dict[str, Any], plan: Rollout, revision: str, status: dict[str, Any]
    ) -> dict[str, Any]:
        """SetDeploymentRevision (an annotation) and the status, each written only if it changed."""
        metadata = deployment["metadata"]
        if (metadata.get("annotations") or {}).get(rollout.REVISION) != revision:

            def change(stored: dict[str, Any]) -> dict[str, Any] | None:
                if stored["metadata"]["uid"] != metadata["uid"]:
                    return None
                stored["metadata"]["annotations"] = {
                    **(stored["metadata"].get("annotations") or {}),
                    rollout.REVISION: revision,
                }
                return stored

            try:
                deployment = self.store.mutate_object(
                    DEPLOYMENTS, deployment, change, field_manager="deployment-controller"
                )
            except ApiError as error:
                log.debug("kubesim deployments: revision of %s not written: %s", metadata["name"], error)
                raise _Requeue from None
        return self._write_status(deployment, plan, status)

    def _write_status(
        self, deployment: dict[str, Any], plan: Rollout, status: dict[str, Any]
    ) -> dict[str, Any]:
        """Write the status unless it is unchanged, or the Deployment changed since this sync read it (the
        sync that change causes writes it instead)."""
        metadata = deployment["metadata"]
        if status == (deployment.get("status") or {}):
            return deployment

        def change(stored: dict[str, Any]) -> dict[str, Any] | None:
            same = stored["metadata"]["uid"] == metadata["uid"]
            if not same or int(stored["metadata"].get("generation") or 1) != plan.generation:
                return None
            stored["status"] = status
            return stored

        try:
            return self.store.mutate_object(
                DEPLOYMENTS, deployment, change, subresource="status", field_manager="deployment-controller"
            )
        except ApiError as error:
            log.debug("kubesim deployments: status of %s not written: %s", metadata["name"], error)
            raise _Requeue from None

    def _resync(self, deployment: dict[str, Any]) -> Callable[[], None]:
        namespace, name = deployment["metadata"].get("namespace", ""), deployment["metadata"]["name"]
        return lambda: self.reconcile(namespace, name)

    def _now(self) -> datetime:
        return self.store.clock.now()
