"""What the built-in kinds share: how one is declared, strategic-merge list keys of metadata and pod
templates, the Name and Age columns, and tolerant readers of spec and status."""

from __future__ import annotations

from typing import Any

from kubesim.resources import Column, ListMeta, PatchMeta, ResourceType

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


NAME = Column("Name", json_path=".metadata.name", format="name")


def builtin_kind(
    group: str,
    kind: str,
    namespaced: bool,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    *,
    plural: str = "",
    versions: tuple[str, ...] = ("v1",),
    columns: tuple[Column, ...] = (),
    patch_meta: PatchMeta | None = None,
    **details: Any,
) -> ResourceType:
    """A built-in kind as discovery names it: singular the kind in lower case, plural that plus `s` unless
    the English says otherwise, served at v1 unless told. `kubectl get` shows Name, then its `columns` (a
    create-only kind has none); strategic merge knows only metadata's lists unless `patch_meta` names more."""
    return ResourceType(
        group,
        versions,
        kind,
        plural or f"{kind.lower()}s",
        kind.lower(),
        namespaced,
        short_names,
        categories,
        columns={"*": (NAME, *columns)} if columns else {},
        patch_meta=with_metadata({}) if patch_meta is None else patch_meta,
        **details,
    )
