"""Deletion: preconditions, finalizers and deletionTimestamp, ownerReference cascade, namespace teardown.

Garbage collection runs synchronously inside the delete (and inside the update that removes a last
finalizer), so a cascade is complete when the call returns; it bypasses admission, as the real GC's
deletes are not what our webhooks look at.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubesim.clock import format_timestamp
from kubesim.errors import ApiError, bad_request, conflict, not_found
from kubesim.jsonutil import clone
from kubesim.resources import ResourceType
from kubesim.store.base import AdmissionRequest, ObjectKey, StoreBase, WriteOptions
from kubesim.store.events import DELETED, MODIFIED

FOREGROUND, BACKGROUND, ORPHAN = "Foreground", "Background", "Orphan"
_FOREGROUND_FINALIZER = "foregroundDeletion"


class DeletionMixin(StoreBase):
    def delete(
        self,
        resource: str | ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str | None = None,
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
        options: WriteOptions | None = None,
    ) -> dict[str, Any]:
        """Delete (or start deleting) an object; returns its last state.

        `propagation` is Background (default), Foreground or Orphan. Objects with finalizers only get a
        deletionTimestamp and go once the finalizers are removed. Resources listed in `graceful_deletion`
        (a simulated kubelet adds "pods") are only marked while bound to a node and running; a second
        delete with `grace_period_seconds=0` removes them.
        """
        resource = self.resource(resource)
        options = options or WriteOptions()
        namespace = (namespace or "default") if resource.namespaced else ""
        policy = propagation or BACKGROUND
        if policy not in (FOREGROUND, BACKGROUND, ORPHAN):
            raise bad_request(
                f'propagationPolicy: Unsupported value: "{policy}": '
                'supported values: "Foreground", "Background", "Orphan"'
            )
        with self.lock:
            current = self._snapshot(resource, namespace, name)
        if current is None:
            raise not_found(resource.plural, resource.group, name)
        self._check_preconditions(resource, current, preconditions or {})
        request = AdmissionRequest(
            "DELETE",
            resource,
            namespace,
            name,
            None,
            current,
            "",
            options.dry_run,
            options.user_agent,
            options.warnings,
            options.user,
        )
        self._run_admission(request, self._admission)  # type: ignore[attr-defined]
        if options.dry_run:
            return current
        with self.lock:
            current = self._snapshot(resource, namespace, name)
            if current is None:
                raise not_found(resource.plural, resource.group, name)
            self._check_preconditions(resource, current, preconditions or {})
            if self._graceful(resource, current, grace_period_seconds):
                return self._mark_graceful(resource, current, grace_period_seconds)
            return self._delete_locked(resource, current, policy)

    def _graceful(self, resource: ResourceType, obj: dict[str, Any], grace: int | None) -> bool:
        """Whether a delete only starts a graceful termination (as for pods a kubelet runs)."""
        if resource.key not in self.graceful_deletion or grace == 0:
            return False
        bound = bool((obj.get("spec") or {}).get("nodeName"))
        finished = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        return bound and not finished and obj["metadata"].get("deletionGracePeriodSeconds") != 0

    def _mark_graceful(
        self, resource: ResourceType, obj: dict[str, Any], grace: int | None
    ) -> dict[str, Any]:
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        seconds = (
            grace
            if grace is not None
            else int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        )
        marked = clone(obj)
        marked["metadata"]["deletionTimestamp"] = format_timestamp(
            datetime.fromtimestamp(self.clock.time() + seconds, UTC)
        )
        marked["metadata"]["deletionGracePeriodSeconds"] = seconds
        return self._commit(resource, MODIFIED, marked, obj)

    def delete_collection(
        self,
        resource: str | ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation: str | None = None,
        options: WriteOptions | None = None,
    ) -> list[dict[str, Any]]:
        resource = self.resource(resource)
        listed = self.list(resource, namespace, label_selector=label_selector, field_selector=field_selector)  # type: ignore[attr-defined]
        return self.delete_each(resource, listed["items"], propagation=propagation, options=options)

    def delete_each(
        self,
        resource: str | ResourceType,
        items: list[dict[str, Any]],
        *,
        propagation: str | None = None,
        options: WriteOptions | None = None,
    ) -> list[dict[str, Any]]:
        """Delete the listed objects, as a DELETE on their collection does: one gone meanwhile is skipped."""
        deleted = []
        for item in items:
            metadata = item["metadata"]
            try:
                deleted.append(
                    self.delete(
                        resource,
                        metadata["name"],
                        metadata.get("namespace"),
                        propagation=propagation,
                        options=options,
                    )
                )
            except ApiError as error:
                if error.code != 404:
                    raise
        return deleted

    def _check_preconditions(
        self, resource: ResourceType, obj: dict[str, Any], preconditions: dict[str, str]
    ) -> None:
        metadata = obj["metadata"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        if uid and uid != metadata["uid"]:
            raise conflict(
                resource.plural,
                resource.group,
                metadata["name"],
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {metadata['uid']}",
            )
        if rv and rv != metadata["resourceVersion"]:
            raise conflict(
                resource.plural,
                resource.group,
                metadata["name"],
                f"Precondition failed: ResourceVersion in precondition: {rv}, "
                f"ResourceVersion in object meta: {metadata['resourceVersion']}",
            )

    # --- under the lock --------------------------------------------------------------------------------

    def _delete_locked(self, resource: ResourceType, obj: dict[str, Any], policy: str) -> dict[str, Any]:
        metadata = obj["metadata"]
        if policy == ORPHAN:
            self._orphan_dependents(metadata["uid"])
        finalizers = list(metadata.get("finalizers") or [])
        is_namespace = resource.key == "namespaces"
        if (
            policy == FOREGROUND
            and self._dependents.get(metadata["uid"])
            and _FOREGROUND_FINALIZER not in finalizers
        ):
            finalizers.append(_FOREGROUND_FINALIZER)
        if metadata.get("deletionTimestamp"):
            if not finalizers and not is_namespace:
                return self._remove(resource, obj)  # e.g. the kubelet finishing a graceful pod deletion
            if finalizers == list(metadata.get("finalizers") or []):
                return obj
        elif not finalizers and not is_namespace:
            return self._remove(resource, obj)
        marked = clone(obj)
        if not metadata.get("deletionTimestamp") and (metadata.get("generation") or 0) > 0:
            # As the apiserver's markAsDeleting: the first mark of a kind without graceful deletion is a
            # new generation, so controllers that compare generations see the deletion start.
            marked["metadata"]["generation"] = metadata["generation"] + 1
        marked["metadata"].setdefault("deletionTimestamp", self.clock.timestamp())
        marked["metadata"].setdefault("deletionGracePeriodSeconds", 0)
        marked["metadata"]["finalizers"] = finalizers
        if not finalizers:
            marked["metadata"].pop("finalizers")
        if is_namespace:
            marked.setdefault("status", {})["phase"] = "Terminating"
        committed = self._commit(resource, MODIFIED, marked, obj)
        if is_namespace:
            self._empty_namespace(metadata["name"])
            return self._finish_namespace(metadata["name"]) or committed
        if _FOREGROUND_FINALIZER in finalizers:
            for key in list(self._dependents.get(metadata["uid"], ())):
                self._delete_key(key, FOREGROUND)
            self._finish_foreground(metadata["uid"])
        return self._by_key((resource.key, metadata.get("namespace", ""), metadata["name"])) or committed

    def _remove(self, resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Remove an object for good (DELETED event), then let the garbage collector react."""
        gone_obj = clone(obj)
        self._commit(resource, DELETED, gone_obj, obj)
        metadata = gone_obj["metadata"]
        if resource.key == "customresourcedefinitions.apiextensions.k8s.io":
            self._drop_custom_resources(gone_obj)
        self._collect_dependents(metadata["uid"])
        for ref in metadata.get("ownerReferences") or []:
            self._finish_foreground(ref.get("uid", ""))
        namespace = metadata.get("namespace", "")
        if namespace:
            self._finish_namespace(namespace)
        return gone_obj

    def _delete_key(self, key: ObjectKey, policy: str) -> None:
        resource = self.registry.by_key(key[0])
        obj = self._by_key(key)
        if resource is not None and obj is not None:
            self._delete_locked(resource, obj, policy)

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background cascade: dependents whose owners are all gone are deleted; others lose the reference."""
        for key in list(self._dependents.pop(owner_uid, ())):
            obj = self._by_key(key)
            resource = self.registry.by_key(key[0])
            if obj is None or resource is None:
                continue
            refs = obj["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") in self._by_uid for ref in refs if ref.get("uid") != owner_uid):
                self._drop_owner_reference(resource, obj, owner_uid)
            else:
                self._delete_locked(resource, obj, BACKGROUND)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for key in list(self._dependents.get(owner_uid, ())):
            obj = self._by_key(key)
            resource = self.registry.by_key(key[0])
            if obj is not None and resource is not None:
                self._drop_owner_reference(resource, obj, owner_uid)

    def _drop_owner_reference(self, resource: ResourceType, obj: dict[str, Any], owner_uid: str) -> None:
        changed = clone(obj)
        refs = [
            ref for ref in changed["metadata"].get("ownerReferences") or [] if ref.get("uid") != owner_uid
        ]
        if refs:
            changed["metadata"]["ownerReferences"] = refs
        else:
            changed["metadata"].pop("ownerReferences", None)
        self._commit(resource, MODIFIED, changed, obj)

    def _blocking_dependents(self, owner_uid: str) -> list[ObjectKey]:
        """Dependents whose reference to the owner sets `blockOwnerDeletion: true` (blockingDependents)."""
        found = []
        for key in self._dependents.get(owner_uid, ()):
            obj = self._by_key(key)
            refs = (obj or {}).get("metadata", {}).get("ownerReferences") or []
            if any(ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion") is True for ref in refs):
                found.append(key)
        return found

    def _finish_foreground(self, owner_uid: str) -> None:
        """An owner in foreground deletion goes once no dependent blocks it: every dependent was deleted,
        but one that is still finalizing holds the owner only with `blockOwnerDeletion: true`."""
        key = self._by_uid.get(owner_uid)
        owner = self._by_key(key) if key else None
        resource = self.registry.by_key(key[0]) if key else None
        if owner is None or resource is None or self._blocking_dependents(owner_uid):
            return
        finalizers = owner["metadata"].get("finalizers") or []
        if _FOREGROUND_FINALIZER not in finalizers:
            return
        changed = clone(owner)
        remaining = [f for f in finalizers if f != _FOREGROUND_FINALIZER]
        changed["metadata"]["finalizers"] = remaining
        if not remaining:
            changed["metadata"].pop("finalizers")
        committed = self._commit(resource, MODIFIED, changed, owner)
        if not remaining:
            self._remove(resource, committed)

    def _empty_namespace(self, namespace: str) -> None:
        for resource_key, buckets in list(self._objects.items()):
            resource = self.registry.by_key(resource_key)
            for obj in list(buckets.get(namespace, {}).values()) if resource else []:
                if self._by_key((resource_key, namespace, obj["metadata"]["name"])) is obj:
                    self._delete_locked(resource, obj, BACKGROUND)  # type: ignore[arg-type]

    def _finish_namespace(self, namespace: str) -> dict[str, Any] | None:
        """A terminating namespace is removed once nothing is left in it."""
        resource = self.registry.by_key("namespaces")
        ns_obj = self._objects.get("namespaces", {}).get("", {}).get(namespace)
        if resource is None or ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return None
        if self._count(namespace) or ns_obj["metadata"].get("finalizers"):
            return None
        return self._remove(resource, ns_obj)

    def _drop_custom_resources(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        key = f"{(spec.get('names') or {}).get('plural', '')}.{spec.get('group', '')}"
        resource = self.registry.by_key(key)
        if resource is None:
            return
        for buckets in list(self._objects.get(key, {}).values()):
            for obj in list(buckets.values()):
                self._remove(resource, obj)
        self._objects.pop(key, None)
        self._order.pop(key, None)
        for watcher in list(self._watchers.pop(key, ())):
            watcher.close()
        self.registry.remove(key)
