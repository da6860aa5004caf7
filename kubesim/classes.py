"""The apiserver's class admission plugins: `Priority` (plugin/pkg/admission/priority) on pods and
PriorityClasses, with the system PriorityClasses every apiserver creates; `DefaultIngressClass` and
`DefaultStorageClass`, which give a new Ingress or PersistentVolumeClaim that names no class the default one.

A real apiserver runs these plugins always; the simulator installs them as a store admission hook when it
starts (`ClassAdmission.install`). The rules are plain functions over the objects and the stored classes,
so they are tested without a server; the hooks only read the store and turn a refusal into the 403 the
apiserver answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kubesim.errors import ApiError
from kubesim.jsonutil import clone
from kubesim.store import AdmissionRequest, Store

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
#: scheduling.DefaultPriorityWhenNoDefaultClassExists
PRIORITY_WITHOUT_DEFAULT_CLASS = 0
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
#: scheduling.SystemCriticalPriority (twice the highest user-definable priority)
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
#: The classes every apiserver creates at start (pkg/apis/scheduling SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if "
        "necessary.",
    ),
)


INGRESS_CLASSES = "ingressclasses.networking.k8s.io"
STORAGE_CLASSES = "storageclasses.storage.k8s.io"
#: The annotations marking a default class (storage also honours the beta one, as upstream's GetDefaultClass).
DEFAULT_INGRESS_CLASS = ("ingressclass.kubernetes.io/is-default-class",)
DEFAULT_STORAGE_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
#: Annotations that name a class the old way; an object carrying one gets no default.
LEGACY_INGRESS_CLASS = "kubernetes.io/ingress.class"
LEGACY_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


class Refused(Exception):
    """A class plugin refuses the write; the message is the apiserver's reason (after `is forbidden: `)."""


def global_default(classes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The PriorityClass marked `globalDefault`; of several (a race upstream allows), the lowest value."""
    defaults = [c for c in classes if c.get("globalDefault") is True]
    return min(defaults, key=lambda c: int(c.get("value") or 0), default=None)


def pod_priority(spec: dict[str, Any], classes: list[dict[str, Any]]) -> dict[str, Any]:
    """The fields a new pod's spec gets from its PriorityClass: `priorityClassName` (the default class's
    when none is named), `priority` and `preemptionPolicy`. Refuses an unknown class and a pod that
    states a priority or policy different from its class's, as upstream's admitPod."""
    name = spec.get("priorityClassName") or ""
    if name:
        found = next((c for c in classes if c["metadata"]["name"] == name), None)
        if found is None:
            raise Refused(f"no PriorityClass with name {name} was found")
        priority, policy = int(found.get("value") or 0), found.get("preemptionPolicy")
    else:
        default = global_default(classes)
        if default is None:
            priority, policy = PRIORITY_WITHOUT_DEFAULT_CLASS, PREEMPT_LOWER_PRIORITY
        else:
            name = default["metadata"]["name"]
            priority, policy = int(default.get("value") or 0), default.get("preemptionPolicy")
    stated = spec.get("priority")
    if stated is not None and stated != priority:
        raise Refused(
            f"the integer value of priority ({stated}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name"
        )
    # A v1 PriorityClass without a policy is defaulted to PreemptLowerPriority when stored.
    policy = policy or PREEMPT_LOWER_PRIORITY
    stated_policy = spec.get("preemptionPolicy")
    if stated_policy is not None and stated_policy != policy:
        raise Refused(
            f"the string value of PreemptionPolicy ({stated_policy}) must not be provided in pod spec; "
            f"priority admission controller computed {policy} from the given PriorityClass name"
        )
    fields: dict[str, Any] = {"priority": priority, "preemptionPolicy": policy}
    if name:
        fields["priorityClassName"] = name
    return fields


def kept_priority(spec: dict[str, Any], old_spec: dict[str, Any]) -> dict[str, Any]:
    """On update the pod keeps the priority admission set at create when the new spec leaves it out
    (validation then refuses any other change to it)."""
    return {
        field: old_spec[field]
        for field in ("priority", "preemptionPolicy")
        if spec.get(field) is None and old_spec.get(field) is not None
    }


def second_default(
    priority_class: dict[str, Any], operation: str, classes: list[dict[str, Any]]
) -> str | None:
    """Why a PriorityClass may not be written: it claims `globalDefault` while another class holds it."""
    if priority_class.get("globalDefault") is not True:
        return None
    current = global_default(classes)
    if current is None:
        return None
    current_name = current["metadata"]["name"]
    if operation == "CREATE" or current_name != priority_class["metadata"]["name"]:
        return f"PriorityClass {current_name} is marked as default. Only one default can exist"
    return None


def default_class(found: list[dict[str, Any]], annotations: tuple[str, ...]) -> str | None:
    """The name of the class annotated as the default (value "true"); of several, the newest, then the
    first by name, as upstream sorts them."""
    defaults = [
        c
        for c in found
        if any((c["metadata"].get("annotations") or {}).get(a) == "true" for a in annotations)
    ]
    if not defaults:
        return None
    by_name = sorted(defaults, key=lambda c: c["metadata"]["name"])
    newest = max(by_name, key=lambda c: c["metadata"].get("creationTimestamp") or "")
    return str(newest["metadata"]["name"])


class ClassField(NamedTuple):
    """Where a kind names its class, how it named one before the field, and where its classes live."""

    field: str
    legacy_annotation: str
    classes: str
    default_annotations: tuple[str, ...]


INGRESS_CLASS_FIELD = ClassField(
    "ingressClassName", LEGACY_INGRESS_CLASS, INGRESS_CLASSES, DEFAULT_INGRESS_CLASS
)
STORAGE_CLASS_FIELD = ClassField(
    "storageClassName", LEGACY_STORAGE_CLASS, STORAGE_CLASSES, DEFAULT_STORAGE_CLASS
)
_CLASS_FIELDS = {
    "ingresses.networking.k8s.io": INGRESS_CLASS_FIELD,
    "persistentvolumeclaims": STORAGE_CLASS_FIELD,
}


def defaulted_class(obj: dict[str, Any], where: ClassField, found: list[dict[str, Any]]) -> str | None:
    """The class a new Ingress (`ingressClassName`) or claim (`storageClassName`) gets: none when it names
    one (an empty string included: a claim with `""` asks for no class) or carries the legacy annotation."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get(where.field) is not None:
        return None
    if where.legacy_annotation in ((obj.get("metadata") or {}).get("annotations") or {}):
        return None
    return default_class(found, where.default_annotations)


def _forbidden(resource: str, group: str, name: str, reason: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {reason}', details)


class ClassAdmission:
    """The class plugins as one mutating store hook: `install()` registers it and returns its remover."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def install(self) -> Callable[[], None]:
        """Create the system PriorityClasses unless they exist (a restored state has them) and register."""
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            if not self.store.exists(PRIORITY_CLASSES, name):
                self.store.create(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                        "description": description,
                        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
                    }
                )
        return self.store.add_admission(self.admit, mutating=True)

    def _items(self, resource: str) -> list[dict[str, Any]]:
        return list(self.store.list(resource)["items"])

    def admit(self, request: AdmissionRequest) -> dict[str, Any] | None:
        if request.subresource or request.object is None or request.operation not in ("CREATE", "UPDATE"):
            return None
        resource = request.resource
        try:
            if resource.key == "pods":
                return self._admit_pod(request)
            if request.operation == "CREATE" and resource.key in _CLASS_FIELDS:
                return self._default_class(request.object, _CLASS_FIELDS[resource.key])
            if resource.key == PRIORITY_CLASSES:
                reason = second_default(request.object, request.operation, self._items(PRIORITY_CLASSES))
                if reason:
                    raise Refused(reason)
        except Refused as refused:
            raise _forbidden(resource.plural, resource.group, request.name, str(refused)) from None
        return None

    def _default_class(self, obj: dict[str, Any], where: ClassField) -> dict[str, Any] | None:
        name = defaulted_class(obj, where, self._items(where.classes))
        if name is None:
            return None
        defaulted = clone(obj)
        defaulted["spec"][where.field] = name
        return defaulted

    def _admit_pod(self, request: AdmissionRequest) -> dict[str, Any] | None:
        assert request.object is not None
        pod = clone(request.object)
        spec = pod.setdefault("spec", {})
        if not isinstance(spec, dict):
            return None  # validation names the malformed spec
        if request.operation == "CREATE":
            spec.update(pod_priority(spec, self._items(PRIORITY_CLASSES)))
        elif isinstance(request.old_object, dict):
            spec.update(kept_priority(spec, request.old_object.get("spec") or {}))
        return pod
