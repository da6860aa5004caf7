"""The one way to add a controller: `register` in `<app>/controllers.py`, the module the runtime and the
queue import by themselves in every installed app (as Django imports admin.py).

    from kube.controller.registry import Owns, register
    from kube.resources import POD, SERVICE

    from .reconcile import reconcile_tfjob   # (namespace, name) -> None, or seconds until it runs again

    register(
        TFJOB,                         # the kind reconciled (a ResourceType)
        reconcile_tfjob,               # what runs each of its reconcile keys, in any worker
        owns=[Owns(POD, label_selector="argoml.io/job-name"), SERVICE],
        mirror=mirror_tfjob,           # optional: called with (event type, object) for every TFJob event
    )

One call says everything the runtime needs of a controller: the queue's reconciler of the kind (its
keys run in every worker), and what the leader watches (the kind, its children, their mirrors). A child
event reconciles the owner named by the child's controller ownerReference, or, with `owner_label`, by a
label holding the owner's name (for children made by someone else, e.g. pods of an Argo Workflow).
`watch=False` registers the reconciler only: a kind whose CRDs this deployment does not install (Kubeflow's
group without JOBS_KUBEFLOW_V1, Trainer's kinds without TRAINER_ENABLED) is not watched, and a key of it
enqueued anyway still runs. Adding a controller never touches `kube`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import autodiscover_modules

from kube.resources import ResourceType

from .queue import ObjectKey, Reconciler, Registry
from .queue import registry as queue_reconcilers
from .queue.registry import CONTROLLERS_MODULE

MirrorFunc = Callable[[str, dict[str, Any]], None]  # (ADDED | MODIFIED | DELETED, object)


@dataclass(frozen=True)
class Owns:
    """A child kind whose events reconcile their owner.

    `label_selector` narrows the child informer, so a process caches only the children that matter and
    never every pod of the cluster. `owner_label`, when set, names the label that holds the owner's name
    (same namespace) instead of following the controller ownerReference; `owner_name`, a function of the
    child returning its owner's name or None, is for references that live in the spec (a TrainJob's
    `spec.runtimeRef` names the runtime it uses). `mirror`, when set, is called with every event of a
    child that leads back to this controller (e.g. pods into replica rows).
    """

    rtype: ResourceType
    label_selector: str | None = None
    owner_label: str | None = None
    mirror: MirrorFunc | None = None
    owner_name: Callable[[dict[str, Any]], str | None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.rtype, ResourceType):
            raise TypeError(f"rtype: expected a ResourceType, got {self.rtype!r}.")
        if self.mirror is not None and not callable(self.mirror):
            raise TypeError(f"mirror: the mirror of {self.rtype.kind} children must be callable.")
        if self.owner_label is not None and not self.owner_label:
            raise ValueError("owner_label: must be a label name or None, not an empty string.")
        if self.owner_name is not None and (self.owner_label is not None or not callable(self.owner_name)):
            raise ValueError("owner_name: must be a function of the child, and not given with owner_label.")


@dataclass(frozen=True)
class Controller:
    """One controller: reconciles `rtype`, watched in `namespace` (None: all) with `label_selector`.

    `name` is the kind its reconcile keys carry (and its workqueue's name): the bare kind by default, or
    `Kind.group` when one kind is served under a second group (`TFJob.kubeflow.org` beside `TFJob`), so
    each (group, kind) has its own controller and same-named objects of the two groups never share a key.
    """

    rtype: ResourceType
    owns: tuple[Owns, ...] = ()
    mirror: MirrorFunc | None = None
    label_selector: str | None = None
    namespace: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.rtype, ResourceType):
            raise TypeError(f"rtype: expected a ResourceType, got {self.rtype!r}.")
        if self.mirror is not None and not callable(self.mirror):
            raise TypeError(f"mirror: the mirror of {self.kind} must be callable, got {self.mirror!r}.")
        seen: set[ResourceType] = set()
        for child in self.owns:
            if not isinstance(child, Owns):
                raise TypeError(f"owns: expected Owns(...) entries, got {child!r}.")
            if child.rtype in seen:
                raise ValueError(f"owns: {child.rtype} is listed twice for controller {self.kind}.")
            if child.rtype == self.rtype:
                raise ValueError(f"owns: controller {self.kind} cannot own children of its own kind.")
            seen.add(child.rtype)
        if self.name is not None and self.name not in (self.rtype.kind, qualified_kind(self.rtype)):
            raise ValueError(
                f"name: must be {self.rtype.kind!r} or {qualified_kind(self.rtype)!r}, not {self.name!r}."
            )

    @property
    def kind(self) -> str:
        """The kind of this controller's reconcile keys: `name`, else the resource's kind."""
        return self.name or self.rtype.kind

    def own_key(self, obj: dict[str, Any]) -> ObjectKey:
        """The reconcile key of an object of the controller's own kind."""
        metadata = obj.get("metadata") or {}
        return ObjectKey(self.kind, metadata.get("namespace") or "", metadata["name"])

    def owner_keys(self, child: Owns, obj: dict[str, Any]) -> list[ObjectKey]:
        """The keys of the owners a child event reconciles (none when the child is not ours)."""
        metadata = obj.get("metadata") or {}
        namespace = (metadata.get("namespace") or "") if self.rtype.namespaced else ""
        if child.owner_label is not None or child.owner_name is not None:
            if child.owner_name is not None:
                owner = child.owner_name(obj)
            else:
                owner = (metadata.get("labels") or {}).get(child.owner_label or "")
            return (
                [ObjectKey(self.kind, namespace, owner)]
                if isinstance(owner, str) and owner and "/" not in owner
                else []
            )
        return [
            ObjectKey(self.kind, namespace, reference["name"])
            for reference in metadata.get("ownerReferences") or ()
            if reference.get("controller")
            and reference.get("kind") == self.rtype.kind
            and _group(reference.get("apiVersion") or "") == self.rtype.group
            and reference.get("name")
        ]


def _owns(child: Owns | ResourceType) -> Owns:
    if isinstance(child, Owns):
        return child
    if isinstance(child, ResourceType):
        return Owns(child)
    raise TypeError(f"owns: expected Owns(...) or a ResourceType, got {child!r}.")


def qualified_kind(rtype: ResourceType) -> str:
    """`Kind.group`, e.g. `TFJob.kubeflow.org`: a reconcile key kind that names the group too."""
    return f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class ControllerRegistry:
    """The controllers of the installed apps, one per reconciled kind, and the queue's table of their
    reconcilers (`reconcilers`: the process's own, or a table of a test's)."""

    def __init__(self, reconcilers: Registry = queue_reconcilers) -> None:
        self._controllers: dict[str, Controller] = {}
        self._discovered = False
        self._lock = threading.Lock()
        self.reconcilers = reconcilers

    def register(
        self,
        rtype: ResourceType,
        reconcile: Reconciler,
        *,
        owns: Iterable[Owns | ResourceType] = (),
        mirror: MirrorFunc | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        watch: bool = True,
    ) -> Controller:
        """Declare the controller of `rtype`, reconciled by `reconcile(namespace, name)`; a bare
        ResourceType in `owns` means Owns(rtype); `name` (`Kind.group`) when the kind is also served under
        another group (see Controller); `watch=False`: reconciled, not watched (see the module's doc).

        Registering an identical controller again (a module imported twice) is fine; a different one for
        the same kind is an error naming both.
        """
        children = tuple(_owns(child) for child in owns)
        controller = Controller(rtype, children, mirror, label_selector, namespace, name)
        self.reconcilers.register(controller.kind, reconcile)
        if not watch:
            return controller
        with self._lock:
            current = self._controllers.get(controller.kind)
            if current is not None and current != controller:
                raise ValueError(
                    f"rtype: a different controller for kind {controller.kind!r} exists: {current}."
                )
            self._controllers[controller.kind] = controller
        return controller

    def controllers(self) -> list[Controller]:
        """Every watched controller, by kind, after importing each app's controllers module once."""
        self.discover()
        return [self._controllers[kind] for kind in sorted(self._controllers)]

    def discover(self) -> None:
        """Import every installed app's controllers module once (needs the Django app registry ready).

        Not under the lock: the imported modules call `register`, and a second thread importing at the
        same time only registers the same controllers again.
        """
        if not self._discovered:
            autodiscover_modules(CONTROLLERS_MODULE)
            self._discovered = True


registry = ControllerRegistry()
register = registry.register
