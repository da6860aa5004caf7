"""CustomResourceDefinitions: validating a CRD and turning it into the ResourceType it serves."""

from __future__ import annotations

from typing import Any

from kubesim.errors import Cause
from kubesim.resources import Column, ResourceType, ScalePaths


def crd_causes(crd: dict[str, Any]) -> list[Cause]:
    """The apiextensions validation that matters for serving: names, scope, versions, schemas."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes = []
    group, plural = spec.get("group", ""), names.get("plural", "")
    if not group or "." not in group:
        causes.append(
            Cause("spec.group", f'Invalid value: "{group}": should be a domain with at least one dot')
        )
    for field_name in ("plural", "kind"):
        if not names.get(field_name):
            causes.append(Cause(f"spec.names.{field_name}", "Required value", "FieldValueRequired"))
    if plural and plural != plural.lower():
        causes.append(Cause("spec.names.plural", f'Invalid value: "{plural}": must be lowercase'))
    expected = f"{plural}.{group}"
    if crd.get("metadata", {}).get("name") != expected:
        causes.append(
            Cause(
                "metadata.name",
                f'Invalid value: "{crd.get("metadata", {}).get("name")}": '
                'must be spec.names.plural+"."+spec.group',
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            Cause(
                "spec.scope",
                f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
                "FieldValueNotSupported",
            )
        )
    versions = spec.get("versions") or []
    if not versions:
        causes.append(Cause("spec.versions", "Required value", "FieldValueRequired"))
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            Cause("spec.versions", "Invalid value: must have exactly one version marked as storage version")
        )
    for index, version in enumerate(versions):
        if not ((version.get("schema") or {}).get("openAPIV3Schema")):
            causes.append(
                Cause(
                    f"spec.versions[{index}].schema.openAPIV3Schema",
                    "Required value: schemas are required",
                    "FieldValueRequired",
                )
            )
    return causes


def _columns(version: dict[str, Any]) -> tuple[Column, ...]:
    name = Column(
        "Name",
        json_path=".metadata.name",
        format="name",
        description="Name must be unique within a namespace.",
    )
    printer = version.get("additionalPrinterColumns")
    if not printer:
        return (name, Column("Age", "date", json_path=".metadata.creationTimestamp"))
    return (
        name,
        *(
            Column(
                column.get("name", ""),
                column.get("type", "string"),
                json_path=column.get("jsonPath", ""),
                format=column.get("format", ""),
                description=column.get("description", ""),
                priority=int(column.get("priority", 0)),
            )
            for column in printer
        ),
    )


def resource_from_crd(crd: dict[str, Any]) -> ResourceType:
    spec = crd["spec"]
    names = spec["names"]
    served = [v for v in spec["versions"] if v.get("served", True)]
    served.sort(key=lambda v: not v.get("storage"))
    return ResourceType(
        group=spec["group"],
        versions=tuple(v["name"] for v in served),
        kind=names["kind"],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        namespaced=spec["scope"] == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        has_status=any("status" in (v.get("subresources") or {}) for v in served),
        columns={v["name"]: _columns(v) for v in served},
        schemas={v["name"]: v["schema"]["openAPIV3Schema"] for v in served},
        builtin=False,
        scale=_scale_paths(served),
        field_labels=tuple(
            selectable["jsonPath"].lstrip(".")
            for version in served
            for selectable in version.get("selectableFields") or []
            if selectable.get("jsonPath")
        ),
    )


def _scale_paths(served: list[dict[str, Any]]) -> ScalePaths | None:
    """The first served version's `subresources.scale` (all versions share the stored object here)."""
    for version in served:
        scale = (version.get("subresources") or {}).get("scale")
        if scale is not None:
            return ScalePaths(
                scale.get("specReplicasPath", ".spec.replicas"),
                scale.get("statusReplicasPath", ".status.replicas"),
                scale.get("labelSelectorPath") or "",
            )
    return None


def crd_status(crd: dict[str, Any], now: str) -> dict[str, Any]:
    names = crd["spec"]["names"]
    accepted = {
        "plural": names["plural"],
        "kind": names["kind"],
        "singular": names.get("singular") or names["kind"].lower(),
        "listKind": names.get("listKind") or f"{names['kind']}List",
    }
    for optional in ("shortNames", "categories"):
        if names.get(optional):
            accepted[optional] = names[optional]
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": now,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": now,
        },
    ]
    stored = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
    return {"acceptedNames": accepted, "conditions": conditions, "storedVersions": stored}
