"""The PodSecurity admission plugin: a namespace's `pod-security.kubernetes.io/<mode>` labels decide.

Pods: `enforce` violations are refused (403, `pods "x" is forbidden: violates PodSecurity "restricted:latest":
…`), `warn` violations pass with a `Warning`. Workloads with a pod template (Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job, CronJob, ReplicationController, PodTemplate) only ever warn: enforcement
applies to the pods they create. `warn` defaults to the `enforce` level when only that is set. Updates are
checked only when an image or the number of containers changes; subresources (status, log…) never are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.errors import ApiError
from kubesim.podsecurity.checks import LEVELS, PRIVILEGED, RESTRICTED, evaluate, forbidden_detail
from kubesim.store import AdmissionRequest, Store

LABEL_PREFIX = "pod-security.kubernetes.io/"
_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "deployments.apps": ("spec", "template"),
    "replicasets.apps": ("spec", "template"),
    "statefulsets.apps": ("spec", "template"),
    "daemonsets.apps": ("spec", "template"),
    "jobs.batch": ("spec", "template"),
    "cronjobs.batch": ("spec", "jobTemplate", "spec", "template"),
    "replicationcontrollers": ("spec", "template"),
    "podtemplates": ("template",),
}


def _level(value: str | None, *, fail_closed: bool) -> str:
    if value is None:
        return PRIVILEGED
    if value in LEVELS:
        return value
    return RESTRICTED if fail_closed else PRIVILEGED  # an unknown enforce level fails closed, warn open


def policy(labels: dict[str, str]) -> tuple[str, str, str]:
    """(enforce level, warn level, enforce version) from a namespace's labels."""
    enforce_label = labels.get(f"{LABEL_PREFIX}enforce")
    enforce = _level(enforce_label, fail_closed=True)
    warn_label = labels.get(f"{LABEL_PREFIX}warn")
    warn = _level(warn_label, fail_closed=False)
    if warn_label is None and enforce_label in LEVELS and LEVELS.index(enforce) > LEVELS.index(warn):
        warn = enforce
    return enforce, warn, labels.get(f"{LABEL_PREFIX}enforce-version") or "latest"


def _template(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _significant_pod_update(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Only a change of images or of the number of containers is re-checked (isSignificantPodUpdate)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        new_list, old_list = new_spec.get(key) or [], old_spec.get(key) or []
        if len(new_list) != len(old_list):
            return True
        if any(n.get("image") != o.get("image") for n, o in zip(new_list, old_list, strict=True)):
            return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    for container in new_spec.get("ephemeralContainers") or []:
        previous = old_ephemeral.get(container.get("name"))
        if previous is None or previous.get("image") != container.get("image"):
            return True
    return False


class PodSecurity:
    """A validating admission hook on the store: `install()` registers it and returns its remover."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: every refusal and warning, as "<resource> <namespace>/<name>: <message>", for tests to assert on
        self.findings: list[str] = []

    def install(self) -> Callable[[], None]:
        return self.store.add_admission(self.admit)

    def _labels(self, namespace: str) -> dict[str, str]:
        try:
            return dict(self.store.get("namespaces", namespace)["metadata"].get("labels") or {})
        except ApiError:
            return {}

    def admit(self, request: AdmissionRequest) -> None:
        if request.operation not in ("CREATE", "UPDATE") or request.subresource or request.object is None:
            return
        key = request.resource.key
        if key == "pods":
            if request.operation == "UPDATE" and not _significant_pod_update(
                request.object, request.old_object or {}
            ):
                return
            metadata, spec = request.object.get("metadata") or {}, request.object.get("spec") or {}
            enforce_applies = True
        elif key in _TEMPLATE_PATHS:
            template = _template(request.object, _TEMPLATE_PATHS[key])
            metadata, spec = template.get("metadata") or {}, template.get("spec") or {}
            enforce_applies = False
        else:
            return
        enforce, warn, version = policy(self._labels(request.namespace))
        if enforce_applies and enforce != PRIVILEGED:
            violations = evaluate(enforce, metadata, spec)
            if violations:
                name = request.name
                message = (
                    f'pods "{name}" is forbidden: violates PodSecurity "{enforce}:{version}": '
                    f"{forbidden_detail(violations)}"
                )
                self.findings.append(f"{key} {request.namespace}/{name}: {message}")
                raise ApiError(403, "Forbidden", message, {"name": name, "kind": "pods"})
        if warn != PRIVILEGED:
            violations = evaluate(warn, metadata, spec)
            if violations:
                warn_version = self._labels(request.namespace).get(f"{LABEL_PREFIX}warn-version") or "latest"
                message = f'would violate PodSecurity "{warn}:{warn_version}": {forbidden_detail(violations)}'
                self.findings.append(f"{key} {request.namespace}/{request.name}: {message}")
                request.warnings.append(message)
