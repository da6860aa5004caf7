"""What the simulator serves: one `ResourceType` per resource, looked up by URL, kind, or kubectl-style name.

Built-in kinds are declared in `kubesim.builtins`; CustomResourceDefinitions add and remove types at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.selectors import Selector

Cell = Callable[[dict[str, Any]], Any]
Convert = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class View:
    """A resource served from another resource's storage in another shape (core Events are events.k8s.io
    Events): objects are converted on the way in and out, field selectors apply to the converted shape."""

    stored_as: str  # the registry key of the stored resource, e.g. events.events.k8s.io
    to_view: Convert
    from_view: Convert
    selector: Callable[[Selector], Selector]


@dataclass(frozen=True)
class Conversion:
    """How a served version that is not the storage version converts (autoscaling/v1 HorizontalPodAutoscalers
    are stored as autoscaling/v2): the stored object as that version shows it, and back."""

    to_version: Convert
    to_storage: Convert


@dataclass(frozen=True)
class Column:
    """A printer column: built-ins compute the cell in Python, CRDs by JSONPath (`json_path`)."""

    name: str
    type: str = "string"
    json_path: str = ""
    cell: Cell | None = None
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class ListMeta:
    """How a list field merges in a strategic merge patch (and in server-side apply)."""

    merge_key: str | None = None
    strategy: str = "replace"  # "merge" (by merge_key, or as a set of primitives) or "replace"
    item: PatchMeta | None = None


PatchMeta = dict[str, "ListMeta | dict[str, Any]"]


@dataclass(frozen=True)
class ScalePaths:
    """Where a kind keeps what its `scale` subresource shows: the CRD's `subresources.scale` paths
    (`.spec.replicas`, `.status.replicas`, `.status.selector`). Built-ins declare the same; a label
    selector path may point at a LabelSelector object (a Deployment's `.spec.selector`) or a string."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""


@dataclass
class ResourceType:
    """One served resource (e.g. pods, deployments.apps, tfjobs.argoml.io) and how it behaves."""

    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    columns: dict[str, tuple[Column, ...]] = field(default_factory=dict)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    patch_meta: PatchMeta | None = None
    builtin: bool = True
    return_deleted_object: bool = False
    extra_subresources: tuple[str, ...] = ()
    #: declared, the kind serves `/scale` (autoscaling/v1 Scale) from these paths (kubesim.scale)
    scale: ScalePaths | None = None
    view: View | None = None  # served from another resource's storage (see View)
    #: versions other than the storage version whose objects have another shape (see Conversion)
    conversions: dict[str, Conversion] = field(default_factory=dict)
    #: the verbs discovery lists; empty for the full set. Review kinds are create-only and never stored:
    #: a handler registered for the resource answers them (`ApiServer.add_subresource(resource, "", …)`).
    verbs: tuple[str, ...] = ()
    #: the field selectors a list or watch may use beyond `metadata.name` and `metadata.namespace`
    #: (the kind's field label conversions upstream; a CRD's `selectableFields`)
    field_labels: tuple[str, ...] = ()

    @property
    def stored(self) -> bool:
        return not self.verbs

    @property
    def key(self) -> str:
        """The kubectl-style name that identifies the resource across versions: `pods`, `jobs.batch`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        version = version or self.storage_version
        return f"{self.group}/{version}" if self.group else version

    def schema(self, version: str | None = None) -> dict[str, Any] | None:
        return self.schemas.get(version or self.storage_version)

    def columns_for(self, version: str | None = None) -> tuple[Column, ...]:
        return self.columns.get(version or self.storage_version) or self.columns.get("*", ())

    @property
    def subresources(self) -> tuple[str, ...]:
        return (
            (("status",) if self.has_status else ())
            + (("scale",) if self.scale is not None else ())
            + self.extra_subresources
        )


class Registry:
    """Thread-safe index of served resource types; CRDs register and unregister at run time."""

    def __init__(self, types: list[ResourceType] | None = None) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, ResourceType] = {}
        for resource in types or []:
            self.add(resource)

    def add(self, resource: ResourceType) -> None:
        with self._lock:
            self._by_key[resource.key] = resource

    def remove(self, key: str) -> None:
        with self._lock:
            self._by_key.pop(key, None)

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_key.values())

    def by_key(self, key: str) -> ResourceType | None:
        with self._lock:
            return self._by_key.get(key)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at /api(s)/<group>/<version>/<plural>, if that version is served."""
        resource = self.by_key(f"{plural}.{group}" if group else plural)
        if resource is None or version not in resource.versions:
            return None
        return resource

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for resource in self.all():
            if resource.kind == kind and resource.group == group and version in resource.versions:
                return resource
        return None

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per group, preferred version first."""
        groups: dict[str, list[str]] = {}
        for resource in self.all():
            versions = groups.setdefault(resource.group, [])
            for version in resource.versions:
                if version not in versions:
                    versions.append(version)
        return groups

    def resolve(self, name: str, api_version: str | None = None) -> ResourceType:
        """Find a type the way kubectl does: plural, singular, short name or kind, optionally `.group`."""
        lowered = name.lower()
        candidates = []
        for resource in self.all():
            if (
                api_version is not None
                and resource.api_version(api_version.rpartition("/")[2]) != api_version
            ):
                continue
            names = {resource.plural, resource.singular, resource.kind.lower(), *resource.short_names}
            qualified = {f"{n}.{resource.group}" for n in names} if resource.group else set()
            if lowered in names or lowered in qualified or name == resource.key:
                candidates.append(resource)
        if not candidates:
            raise LookupError(f"kubesim: no resource type named {name!r}")
        candidates.sort(key=lambda r: (r.group != "", r.group))  # the core group wins, like kubectl
        return candidates[0]
