"""Controller references, as kube-controller-manager's ControllerRefManager keeps them: who controls an
object, and claiming the objects a selector matches (adopting orphans, releasing what no longer matches)."""

from __future__ import annotations

import logging
from typing import Any

from kubesim.errors import ApiError
from kubesim.selectors import match_labels_selector
from kubesim.store import Store

log = logging.getLogger(__name__)


def controller_reference(owner: dict[str, Any]) -> dict[str, Any]:
    """metav1.NewControllerRef: the owner as the controller of an object it makes."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object's controller reference (metav1.GetControllerOf), if it has one."""
    for reference in obj["metadata"].get("ownerReferences") or []:
        if reference.get("controller"):
            return dict(reference)
    return None


def is_controlled_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    reference = controller_of(obj)
    return reference is not None and reference.get("uid") == owner["metadata"]["uid"]


def selects(owner: dict[str, Any], obj: dict[str, Any]) -> bool:
    """Whether the owner's `spec.selector` matches the object; an empty or missing selector matches nothing
    here (the API server refuses those for the workloads that claim objects)."""
    selector = (owner.get("spec") or {}).get("selector")
    if not selector:
        return False
    try:
        return match_labels_selector(selector).matches(obj)
    except ApiError:
        return False


def owners_to_sync(
    store: Store, obj: dict[str, Any], kind: str, resource: str, *, adoptable: bool
) -> list[str]:
    """The names of the `kind` objects (served at `resource`) that sync after `obj` changed: its controller
    if it is one of them; for an orphan that may still be adopted, every one whose selector matches it."""
    owner = controller_of(obj)
    if owner is not None:
        return [owner["name"]] if owner.get("kind") == kind else []
    if not adoptable:
        return []
    namespace = obj["metadata"].get("namespace", "")
    return [o["metadata"]["name"] for o in store.list(resource, namespace)["items"] if selects(o, obj)]


def claim(store: Store, owner: dict[str, Any], candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates the owner controls once claimed (ClaimObject): its own that still match are kept,
    its own that no longer match are released, orphans that match are adopted — unless the owner (or the
    orphan) is being deleted. Objects controlled by another owner are ignored."""
    deleting = bool(owner["metadata"].get("deletionTimestamp"))
    claimed = []
    for obj in candidates:
        reference = controller_of(obj)
        if reference is not None:
            if reference.get("uid") != owner["metadata"]["uid"]:
                continue
            if selects(owner, obj):
                claimed.append(obj)
            elif not deleting:
                _release(store, owner, obj)
            continue
        if deleting or obj["metadata"].get("deletionTimestamp") or not selects(owner, obj):
            continue
        adopted = _adopt(store, owner, obj)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


def _resource_of(obj: dict[str, Any]) -> str:
    return "pods" if obj["kind"] == "Pod" else "replicasets.apps"


def _adopt(store: Store, owner: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any] | None:
    metadata = obj["metadata"]

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        if current["metadata"]["uid"] != metadata["uid"] or controller_of(current) is not None:
            return None
        references = current["metadata"].setdefault("ownerReferences", [])
        references.append(controller_reference(owner))
        return current

    try:
        adopted = store.mutate(
            _resource_of(obj), metadata["name"], change, namespace=metadata.get("namespace", "")
        )
    except ApiError as error:
        log.debug("kubesim: could not adopt %s: %s", metadata["name"], error)
        return None
    return adopted if is_controlled_by(adopted, owner) else None


def _release(store: Store, owner: dict[str, Any], obj: dict[str, Any]) -> None:
    metadata, uid = obj["metadata"], owner["metadata"]["uid"]

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        references = current["metadata"].get("ownerReferences") or []
        kept = [r for r in references if r.get("uid") != uid]
        if len(kept) == len(references):
            return None
        current["metadata"]["ownerReferences"] = kept
        return current

    try:
        store.mutate(_resource_of(obj), metadata["name"], change, namespace=metadata.get("namespace", ""))
    except ApiError as error:
        log.debug("kubesim: could not release %s: %s", metadata["name"], error)


def delete_pod(store: Store, pod: dict[str, Any], controller: str) -> None:
    """A controller deletes one of its pods; a refusal is only logged, as the next sync sees the pod again."""
    metadata = pod["metadata"]
    try:
        store.delete("pods", metadata["name"], metadata.get("namespace"))
    except ApiError as error:
        log.debug("kubesim %s: could not delete pod %s: %s", controller, metadata["name"], error)


def fresh(store: Store, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object as stored now, or None once it is gone (or was replaced by another of the same name)."""
    metadata = obj["metadata"]
    try:
        current = store.get(_resource_of(obj), metadata["name"], metadata.get("namespace"))
    except ApiError:
        return None
    return current if current["metadata"]["uid"] == metadata["uid"] else None
