"""What the built-in kinds share: strategic-merge list keys of metadata and pod templates, the Name and Age
columns, and tolerant readers of spec and status."""

from __future__ import annotations

from typing import Any

from kubesim.resources import Column, ListMeta, PatchMeta

AGE = Column("Age", "date", json_path=".metadata.creationTimestamp")

METADATA_META: PatchMeta = {
    "finalizers": ListMeta(strategy="merge"),
    "ownerReferences": ListMeta(merge_key="uid", strategy="merge"),
}

CONTAINER_META: PatchMeta = {
    "env": ListMeta(merge_key="name", strategy="merge"),
    "ports": ListMeta(merge_key="containerPort", strategy="merge"),
    "volumeMounts": ListMeta(merge_key="mountPath", strategy="merge"),
    "volumeDevices": ListMeta(merge_key="devicePath", strategy="merge"),
}

POD_SPEC_META: PatchMeta = {
    "containers": ListMeta(merge_key="name", strategy="merge", item=CONTAINER_META),
    "initContainers": ListMeta(merge_key="name", strategy="merge", item=CONTAINER_META),
    "ephemeralContainers": ListMeta(merge_key="name", strategy="merge", item=CONTAINER_META),
    "volumes": ListMeta(merge_key="name", strategy="merge"),
    "imagePullSecrets": ListMeta(merge_key="name", strategy="merge"),
    "hostAliases": ListMeta(merge_key="ip", strategy="merge"),
    "topologySpreadConstraints": ListMeta(merge_key="topologyKey", strategy="merge"),
}

TEMPLATE_META: PatchMeta = {"metadata": METADATA_META, "spec": POD_SPEC_META}


def with_metadata(meta: PatchMeta) -> PatchMeta:
    return {"metadata": METADATA_META, **meta}


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def columns_with_name(*columns: Column) -> dict[str, tuple[Column, ...]]:
    return {"*": (Column("Name", json_path=".metadata.name", format="name"), *columns)}
