"""What a custom resource kind is made of, and the CustomResourceDefinition manifest built from it."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from kube.resources import ResourceType

from .schema import Schema, obj, string, structural_problems

GROUP = "argoml.io"
VERSION = "v1alpha1"
CATEGORY = "argoml"  # `kubectl get argoml` lists every kind of ours
COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
NAMESPACED, CLUSTER = "Namespaced", "Cluster"
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_LOWER = re.compile(r"^[a-z][a-z0-9]*$")


@dataclass(frozen=True)
class PrinterColumn:
    """One column of `kubectl get`: a JSONPath into the object, shown as `type`."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0  # 0: always shown; 1: only with `-o wide`

    def __post_init__(self) -> None:
        if self.type not in COLUMN_TYPES:
            raise ValueError(f"column {self.name!r}: type must be one of {COLUMN_TYPES}, not {self.type!r}")
        if not self.json_path.startswith("."):
            raise ValueError(f"column {self.name!r}: jsonPath must start with '.', got {self.json_path!r}")

    def manifest(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            column["description"] = self.description
        if self.priority:
            column["priority"] = self.priority
        return column


AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True)
class Scale:
    """The `scale` subresource: where `kubectl scale` and a HorizontalPodAutoscaler read and write replicas.
    Paths are dotted JSON paths without array notation, as the apiserver requires."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str = ""

    def __post_init__(self) -> None:
        for field, path in (
            ("specReplicasPath", self.spec_replicas_path),
            ("statusReplicasPath", self.status_replicas_path),
            ("labelSelectorPath", self.label_selector_path),
        ):
            if path and (not path.startswith(".") or "[" in path):
                raise ValueError(f"scale {field} must be a dotted path starting with '.', got {path!r}")
        if not self.spec_replicas_path.startswith(".spec."):
            raise ValueError(f"scale specReplicasPath must be under .spec, got {self.spec_replicas_path!r}")

    def manifest(self) -> dict[str, Any]:
        scale = {"specReplicasPath": self.spec_replicas_path, "statusReplicasPath": self.status_replicas_path}
        if self.label_selector_path:
            scale["labelSelectorPath"] = self.label_selector_path
        return scale


@dataclass(frozen=True)
class CustomResource:
    """A kind in group argoml.io, version v1alpha1 unless given (Kubeflow's kinds are served as
    `kubeflow.org/v1` too, see `served_as`): namespaced with the status subresource unless told otherwise
    (Trainer's runtimes are cluster-scoped or have no status)."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    description: str
    spec: Schema
    status: Schema | None  # None: no status field and no status subresource
    columns: tuple[PrinterColumn, ...]
    categories: tuple[str, ...] = (CATEGORY,)
    scale: Scale | None = None
    group: str = GROUP
    version: str = VERSION
    scope: str = NAMESPACED
    spec_required: bool = True
    rules: tuple[dict[str, str], ...] = ()  # CEL rules on the whole object (x-kubernetes-validations)

    def __post_init__(self) -> None:
        if not _KIND.match(self.kind):
            raise ValueError(f"kind must be CamelCase, got {self.kind!r}")
        for field, value in [("plural", self.plural), *(("short name", name) for name in self.short_names)]:
            if not _LOWER.match(value):
                raise ValueError(f"{self.kind}: {field} must be lowercase letters and digits, got {value!r}")
        if self.scope not in (NAMESPACED, CLUSTER):
            raise ValueError(f"{self.kind}: scope must be {NAMESPACED} or {CLUSTER}, not {self.scope!r}")
        if self.scale is not None and self.status is None:
            raise ValueError(f"{self.kind}: the scale subresource needs a status")
        problems = structural_problems(self.open_api_schema())
        if problems:
            raise ValueError(f"{self.kind}: the schema is not structural: {'; '.join(problems)}")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def name(self) -> str:
        """The CRD's own name, `<plural>.<group>`."""
        return f"{self.plural}.{self.group}"

    @property
    def resource_type(self) -> ResourceType:
        return ResourceType(self.api_version, self.kind, self.plural, namespaced=self.scope == NAMESPACED)

    def served_as(
        self, group: str, version: str, *, short_names: tuple[str, ...] = (), categories: tuple[str, ...] = ()
    ) -> CustomResource:
        """The same kind and schema in another group (e.g. Kubeflow's `kubeflow.org/v1`), with that
        group's own short names and categories (none by default: two groups must not claim the same)."""
        return dataclasses.replace(
            self, group=group, version=version, short_names=short_names, categories=categories
        )

    def open_api_schema(self) -> Schema:
        properties = {
            "apiVersion": string("The versioned schema of this representation of an object."),
            "kind": string("The REST resource this object represents."),
            "metadata": {"type": "object"},
            "spec": self.spec,
        }
        if self.status is not None:
            properties["status"] = self.status
        schema = obj(properties, self.description, required=("spec",) if self.spec_required else ())
        if self.rules:
            schema["x-kubernetes-validations"] = [dict(rule) for rule in self.rules]
        return schema

    def subresources(self) -> dict[str, Any]:
        subresources: dict[str, Any] = {"status": {}} if self.status is not None else {}
        if self.scale is not None:
            subresources["scale"] = self.scale.manifest()
        return subresources

    def manifest(self) -> dict[str, Any]:
        """The apiextensions.k8s.io/v1 CustomResourceDefinition, as a plain dict."""
        version: dict[str, Any] = {
            "name": self.version,
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": self.open_api_schema()},
        }
        if subresources := self.subresources():
            version["subresources"] = subresources
        version["additionalPrinterColumns"] = [column.manifest() for column in self.columns]
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": self.name,
                "labels": {"app.kubernetes.io/part-of": "argoml"},
            },
            "spec": {
                "group": self.group,
                "names": {
                    "kind": self.kind,
                    "listKind": f"{self.kind}List",
                    "plural": self.plural,
                    "singular": self.singular,
                    "shortNames": list(self.short_names),
                    "categories": list(self.categories),
                },
                "scope": self.scope,
                "versions": [version],
            },
        }
