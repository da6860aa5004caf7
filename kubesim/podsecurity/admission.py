"""The PodSecurity admission plugin: a namespace's `pod-security.kubernetes.io/<mode>` labels decide.

Pods: `enforce` violations are refused (403, `pods "x" is forbidden: violates PodSecurity "restricted:latest":
…`), `warn` violations pass with a `Warning`. Workloads with a pod template (Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job, CronJob, ReplicationController, PodTemplate) only ever warn: enforcement
applies to the pods they create. `warn` defaults to the `enforce` level when only that is set. Updates are
checked only when an image or the number of containers changes; subresources (status, log…) never are.
Exempt usernames, namespaces and runtime classes (the plugin's configuration) are never checked. Raising a
namespace's `enforce` level warns about the existing pods that would violate it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.errors import ApiError
from kubesim.podsecurity.checks import LEVELS, PRIVILEGED, RESTRICTED, Violation, evaluate, forbidden_detail
from kubesim.podsecurity.config import PodSecurityConfig
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


#: upstream's defaultNamespaceMaxPodsToCheck: a namespace label change looks at no more pods than this
MAX_PODS_TO_CHECK = 3000


def _level(value: str | None, *, fail_closed: bool, default: str = PRIVILEGED) -> str:
    if value is None:
        return default
    if value in LEVELS:
        return value
    return RESTRICTED if fail_closed else PRIVILEGED  # an unknown enforce level fails closed, warn open


def policy(labels: dict[str, str], defaults: PodSecurityConfig | None = None) -> tuple[str, str, str]:
    """(enforce level, warn level, enforce version) from a namespace's labels; unlabelled modes take the
    configured defaults."""
    defaults = defaults or PodSecurityConfig()
    enforce_label = labels.get(f"{LABEL_PREFIX}enforce")
    enforce = _level(enforce_label, fail_closed=True, default=defaults.enforce)
    warn_label = labels.get(f"{LABEL_PREFIX}warn")
    warn = _level(warn_label, fail_closed=False, default=defaults.warn)
    if warn_label is None and enforce_label in LEVELS and LEVELS.index(enforce) > LEVELS.index(warn):
        warn = enforce
    return enforce, warn, labels.get(f"{LABEL_PREFIX}enforce-version") or "latest"


def tightened(old_labels: dict[str, str], new_labels: dict[str, str], defaults: PodSecurityConfig) -> bool:
    """Whether a namespace label change makes existing pods worth re-checking (upstream ValidateNamespace):
    the enforce level or version changed, the new level is not privileged, and it is not a relaxation
    within one version."""
    old_level, _, old_version = policy(old_labels, defaults)
    new_level, _, new_version = policy(new_labels, defaults)
    if (new_level, new_version) == (old_level, old_version) or new_level == PRIVILEGED:
        return False
    return new_version != old_version or LEVELS.index(new_level) > LEVELS.index(old_level)


def existing_pod_warnings(namespace: str, level: str, version: str, pods: list[dict[str, Any]]) -> list[str]:
    """The warnings for pods that violate a namespace's new enforce level (upstream
    EvaluatePodsInNamespace): one headline, then one line per distinct set of reasons, prefixed by the
    lexically first pod with them (`web (and 2 other pods): allowPrivilegeEscalation != false, …`)."""
    warnings: list[str] = []
    if len(pods) > MAX_PODS_TO_CHECK:
        warnings.append(
            f"new PodSecurity enforce level only checked against the first {MAX_PODS_TO_CHECK} of "
            f"{len(pods)} existing pods"
        )
    first_pod: dict[str, str] = {}
    counts: dict[str, int] = {}
    for pod in pods[:MAX_PODS_TO_CHECK]:
        violations = evaluate(level, pod.get("metadata") or {}, pod.get("spec") or {})
        if not violations:
            continue
        reason = _forbidden_reason(violations)
        name = str((pod.get("metadata") or {}).get("name", ""))
        first_pod[reason] = min(first_pod.get(reason, name), name)
        counts[reason] = counts.get(reason, 0) + 1
    if not counts:
        return warnings
    warnings.append(
        f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
        f'"{level}:{version}"'
    )
    lines = []
    for reason, count in counts.items():
        others = {1: "", 2: " (and 1 other pod)"}.get(count, f" (and {count - 1} other pods)")
        lines.append(f"{first_pod[reason]}{others}: {reason}")
    return warnings + sorted(lines)


def prioritized(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods in the order upstream checks them under the cap (prioritizePods): those without a controller
    and the first pod of each controller, then the other replicas."""
    first: list[dict[str, Any]] = []
    replicas: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pod in pods:
        owners = (pod.get("metadata") or {}).get("ownerReferences") or []
        controller = next(
            (o.get("uid", "") for o in owners if isinstance(o, dict) and o.get("controller")), None
        )
        if controller is None or controller not in seen:
            first.append(pod)
            if controller is not None:
                seen.add(controller)
        else:
            replicas.append(pod)
    return first + replicas


def exempt_namespace_warning(name: str, labels: dict[str, str], defaults: PodSecurityConfig) -> str | None:
    """What an exempt namespace that sets a non-privileged policy is told (upstream
    exemptNamespaceWarning): the modes its labels set, none when the policy is the default one."""
    enforce, warn, enforce_version = policy(labels, defaults)
    audit = _level(labels.get(f"{LABEL_PREFIX}audit"), fail_closed=False)
    modes = {
        "enforce": (enforce, enforce_version),
        "audit": (audit, labels.get(f"{LABEL_PREFIX}audit-version") or "latest"),
        "warn": (warn, labels.get(f"{LABEL_PREFIX}warn-version") or "latest"),
    }
    default = {
        "enforce": (defaults.enforce, "latest"),
        "audit": (PRIVILEGED, "latest"),
        "warn": (defaults.warn, "latest"),
    }
    if all(level == PRIVILEGED for level, _ in modes.values()) or modes == default:
        return None
    shown = [
        f"{mode}={level}:{version}"
        for mode, (level, version) in modes.items()
        if level != PRIVILEGED and ({f"{LABEL_PREFIX}{mode}", f"{LABEL_PREFIX}{mode}-version"} & set(labels))
    ]
    return (
        f'namespace "{name}" is exempt from Pod Security, and the policy ({", ".join(shown)}) will be ignored'
    )


def _forbidden_reason(violations: list[Violation]) -> str:
    """`reason, reason`, as the aggregate result's ForbiddenReason()."""
    return ", ".join(v.reason for v in violations)


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

    def __init__(self, store: Store, config: PodSecurityConfig | None = None) -> None:
        self.store = store
        self.config = config or PodSecurityConfig()
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
        if key == "namespaces":
            self._check_existing_pods(request)
            return
        if request.namespace in self.config.exempt_namespaces:
            return
        if request.user is not None and request.user.name in self.config.exempt_usernames:
            return
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
        if spec.get("runtimeClassName") in self.config.exempt_runtime_classes:
            return
        enforce, warn, version = policy(self._labels(request.namespace), self.config)
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

    def _check_existing_pods(self, request: AdmissionRequest) -> None:
        """Raising a namespace's enforce level warns about the pods already there (it never refuses); an
        exempt namespace that sets a policy is told it will be ignored (upstream ValidateNamespace)."""
        name = request.name
        new_labels = (request.object or {}).get("metadata", {}).get("labels") or {}
        if request.operation == "UPDATE":
            old_labels = ((request.old_object or {}).get("metadata") or {}).get("labels") or {}
            if not tightened(old_labels, new_labels, self.config):
                return
        if name in self.config.exempt_namespaces:
            warning = exempt_namespace_warning(name, new_labels, self.config)
            if warning:
                request.warnings.append(warning)
            return
        if request.operation != "UPDATE":
            return
        level, _, version = policy(new_labels, self.config)
        pods = [
            pod
            for pod in self.store.list("pods", name)["items"]
            if (pod.get("spec") or {}).get("runtimeClassName") not in self.config.exempt_runtime_classes
        ]
        request.warnings.extend(existing_pod_warnings(name, level, version, prioritized(pods)))
