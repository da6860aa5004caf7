"""A dynamic provisioner for the process kubelet: every PersistentVolumeClaim gets a local directory.

As a cluster's default StorageClass does, it binds each pending claim to a new PersistentVolume
(`pvc-<claim uid>`, a hostPath directory under the sandbox root, reclaim policy Delete), so pods of one job,
Argo steps and TensorBoards that name the claim share its files. When the claim goes, so do the volume and
its directory.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path
from typing import Any

from kubesim.errors import ApiError
from kubesim.kubelet.process.volumes import ClaimDirectory
from kubesim.store import DELETED, Store, Subscriptions

log = logging.getLogger(__name__)

STORAGE_CLASS = "standard"
PROVISIONER = "kubesim.argoml.io/local-path"


def volume_directory(root: Path, claim_uid: str) -> Path:
    return root / "volumes" / f"pvc-{claim_uid}"


def claim_directory_reader(store: Store, root: Path) -> ClaimDirectory:
    """(namespace, claim) → the bound volume's directory, or None while the claim is not bound."""

    def find(namespace: str, claim: str) -> str | None:
        try:
            found = store.get("persistentvolumeclaims", claim, namespace)
            volume = store.get("persistentvolumes", str((found.get("spec") or {}).get("volumeName") or ""))
        except ApiError:
            return None
        path = ((volume.get("spec") or {}).get("hostPath") or {}).get("path")
        return str(path) if path and str(path).startswith(str(root)) else None

    return find


class Provisioner:
    """Binds pending claims to new local volumes; deletes a claim's volume with it."""

    def __init__(self, store: Store, root: Path) -> None:
        self.store = store
        self.root = root
        self._subscriptions = Subscriptions()

    def start(self) -> None:
        storage_class = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": STORAGE_CLASS,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": PROVISIONER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
        }
        with contextlib.suppress(ApiError):
            self.store.create(storage_class)
        self._subscriptions = self.store.list_then_watch(("persistentvolumeclaims", self._on_claim))

    def stop(self) -> None:
        self._subscriptions.cancel()

    def _on_claim(self, event_type: str, claim: dict[str, Any]) -> None:
        metadata, spec = claim["metadata"], claim.get("spec") or {}
        uid = str(metadata["uid"])
        if event_type == DELETED:
            with contextlib.suppress(ApiError):
                self.store.delete("persistentvolumes", f"pvc-{uid}")
            shutil.rmtree(volume_directory(self.root, uid), ignore_errors=True)
            return
        if spec.get("volumeName") or metadata.get("deletionTimestamp"):
            return
        try:
            self._bind(claim)
        except ApiError as error:
            log.warning(
                "kubesim provisioner: claim %s/%s not bound: %s",
                metadata.get("namespace"),
                metadata["name"],
                error,
            )

    def _bind(self, claim: dict[str, Any]) -> None:
        metadata, spec = claim["metadata"], claim.get("spec") or {}
        uid, namespace = str(metadata["uid"]), str(metadata.get("namespace", ""))
        directory = volume_directory(self.root, uid)
        directory.mkdir(parents=True, exist_ok=True)
        capacity = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        access_modes = spec.get("accessModes") or ["ReadWriteOnce"]
        name = f"pvc-{uid}"
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
            "spec": {
                "capacity": {"storage": capacity},
                "accessModes": access_modes,
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": spec.get("storageClassName") or STORAGE_CLASS,
                "hostPath": {"path": str(directory), "type": "Directory"},
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": namespace,
                    "name": metadata["name"],
                    "uid": uid,
                },
            },
        }
        with contextlib.suppress(ApiError):
            self.store.create(volume)
        self.store.mutate(
            self.store.resource("persistentvolumes"),
            name,
            _phase("Bound"),
            subresource="status",
            field_manager="kube-controller-manager",
        )

        def bind(found: dict[str, Any]) -> dict[str, Any] | None:
            if found["metadata"]["uid"] != uid or (found.get("spec") or {}).get("volumeName"):
                return None
            found["spec"]["volumeName"] = name
            found["spec"].setdefault("storageClassName", STORAGE_CLASS)
            return found

        claims = self.store.resource("persistentvolumeclaims")
        self.store.mutate(
            claims, metadata["name"], bind, namespace=namespace, field_manager="kube-controller-manager"
        )

        def bound(found: dict[str, Any]) -> dict[str, Any]:
            found["status"] = {
                "phase": "Bound",
                "accessModes": access_modes,
                "capacity": {"storage": capacity},
            }
            return found

        self.store.mutate(
            claims,
            metadata["name"],
            bound,
            namespace=namespace,
            subresource="status",
            field_manager="kube-controller-manager",
        )


def _phase(phase: str) -> Any:
    def change(found: dict[str, Any]) -> dict[str, Any]:
        found["status"] = {"phase": phase}
        return found

    return change
