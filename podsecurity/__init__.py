"""Kubernetes' Pod Security Standards (`baseline`, `restricted`; v1.34 of the standard) as a pure check.

We check the pod templates tenants hand us (a job's replicas, a sweep's Argo templates, a pipeline's
Workflow) before they reach the cluster, so a refusal names the field the user wrote rather than a Pod the
controller failed to create later. The rules and reasons follow the reference implementation
(kubernetes/pod-security-admission, `policy/check_*.go`); unlike it, every offending field is reported on
its own, with its path. Malformed values (a string where a bool belongs) are not flagged here: the
schema refuses them, and a value that is not `true` does not grant the privilege. No Django, no I/O.
The standard's allow-lists (capabilities, sysctls, volume sources, profiles) are data in
`podsecurity.lists`. A ground floor beside `fields`: the pure cores that build pods (jobs' spec, workflows'
pods) and access's per-namespace policy import it; it imports nothing of ours but `fields`.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import fields

from . import lists

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
#: Every namespace has it and a pod without a serviceAccountName runs as it, so no allow-list refuses it.
DEFAULT_SERVICE_ACCOUNT = "default"

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
LIFECYCLE_HANDLERS = ("postStart", "preStop")


#: One field that breaks the level, a field error whose message reads as Pod Security admission words it,
#: `reason (detail)`, e.g. `privileged (container "x" must not set securityContext.privileged=true)`.
Violation = fields.FieldError


@dataclass(frozen=True)
class Container:
    """A container and where the user wrote it (`spec.containers[0]`, an Argo template's `script`)."""

    path: str
    body: Mapping[str, Any]

    @property
    def label(self) -> str:
        return f'container "{self.body.get("name") or ""}"'

    @functools.cached_property
    def security(self) -> Mapping[str, Any]:
        return fields.as_dict(self.body.get("securityContext"))


@dataclass(frozen=True)
class Volume:
    path: str
    body: Mapping[str, Any]


@dataclass(frozen=True)
class PodView:
    """The parts of one pod the standard looks at, each with the path it came from.

    A Pod's template gives them all from one place (`pod_view`); an Argo template assembles its pod from the
    Workflow's fields and its own, so each part keeps its own path and the findings name what the user wrote.
    """

    path: str  # where hostNetwork, hostPID, hostIPC and os sit
    pod: Mapping[str, Any]
    security_path: str  # where the pod's securityContext sits
    security: Mapping[str, Any]
    containers: tuple[Container, ...]
    volumes: tuple[Volume, ...]
    annotations_path: str
    annotations: Mapping[str, Any]
    #: (path, name) of every service account the pod would run as (or its Argo executor would).
    service_accounts: tuple[tuple[str, str], ...] = ()
    #: Paths of `podSpecPatch` fields: a patch can set any pod field, so only `privileged` allows one.
    spec_patches: tuple[str, ...] = ()


def pod_view(
    spec: object, annotations: object = None, *, path: str = "spec", metadata_path: str = "metadata"
) -> PodView:
    """The view of a pod spec (and its metadata's annotations) that sits at `path` (and `metadata_path`)."""
    pod = fields.as_dict(spec)
    containers = tuple(
        Container(f"{path}.{key}[{position}]", body)
        for key in CONTAINER_LISTS
        for position, body in items(pod.get(key))
    )
    volumes = tuple(
        Volume(f"{path}.volumes[{position}]", body) for position, body in items(pod.get("volumes"))
    )
    return PodView(
        path,
        pod,
        f"{path}.securityContext",
        fields.as_dict(pod.get("securityContext")),
        containers,
        volumes,
        f"{metadata_path}.annotations",
        fields.as_dict(annotations),
        service_accounts(pod, path),
    )


def service_accounts(pod_fields: Mapping[str, Any], path: str) -> tuple[tuple[str, str], ...]:
    """(path, name) of the service accounts `pod_fields` name: `serviceAccountName` and its deprecated alias
    `serviceAccount`, which the API server still honours."""
    return tuple(
        (f"{path}.{key}", name)
        for key in ("serviceAccountName", "serviceAccount")
        if isinstance(name := pod_fields.get(key), str) and name
    )


def check_service_accounts(
    views: Iterable[PodView], allowed: Collection[str], namespace: str
) -> list[Violation]:
    """A Violation for every service account the `views` name that is not `default` or in `allowed`."""
    permitted = {DEFAULT_SERVICE_ACCOUNT, *allowed}
    listed = ", ".join(sorted(permitted))
    return [
        Violation(
            where,
            f'service account "{name}" is not allowed in namespace "{namespace}" (allowed: {listed})',
        )
        for view in views
        for where, name in view.service_accounts
        if name not in permitted
    ]


def check_pod(
    level: str,
    spec: object,
    annotations: object = None,
    *,
    path: str = "spec",
    metadata_path: str = "metadata",
) -> list[Violation]:
    """Every way the pod `spec` (with its metadata `annotations`) breaks `level`, in a stable order.

    `path` is where the spec sits in the user's document (`spec.tfReplicaSpecs.Worker.template.spec`), and
    `metadata_path` where its metadata does; both prefix the paths reported.
    """
    return check_view(level, pod_view(spec, annotations, path=path, metadata_path=metadata_path))


def check_views(level: str, views: Iterable[PodView]) -> list[Violation]:
    """Every violation of `level` in `views`, each once (views of one Workflow share its pod-wide fields)."""
    return list(dict.fromkeys(violation for view in views for violation in check_view(level, view)))


def check_view(level: str, view: PodView) -> list[Violation]:
    """Every way the pod in `view` breaks `level`."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}: expected one of {', '.join(LEVELS)}")
    if level == PRIVILEGED:
        return []
    found = _baseline(view) + [
        Violation(where, "podSpecPatch (a patch can set any pod field: only the privileged level allows one)")
        for where in view.spec_patches
    ]
    if level == RESTRICTED:
        found += _restricted(view)
    return found


# -- baseline --------------------------------------------------------------------------------------
def _baseline(view: PodView) -> list[Violation]:
    return [
        *_host_process(view),
        *_host_namespaces(view),
        *_privileged(view),
        *_baseline_capabilities(view),
        *_host_path_volumes(view),
        *_host_ports(view),
        *_apparmor(view),
        *_selinux(view),
        *_proc_mount(view),
        *_seccomp_baseline(view),
        *_sysctls(view),
        *_host_probes(view),
    ]


def _contexts(view: PodView) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(path of a securityContext, whose it is, the context): the pod's first, then each container's."""
    found = [(view.security_path, "pod", view.security)]
    return found + [(f"{c.path}.securityContext", c.label, c.security) for c in view.containers]


def _host_process(view: PodView) -> Iterator[Violation]:
    for where, who, context in _contexts(view):
        if fields.as_dict(context.get("windowsOptions")).get("hostProcess") is True:
            yield Violation(
                f"{where}.windowsOptions.hostProcess",
                f"hostProcess ({who} must not set securityContext.windowsOptions.hostProcess=true)",
            )


def _host_namespaces(view: PodView) -> Iterator[Violation]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if view.pod.get(field) is True:
            yield Violation(f"{view.path}.{field}", f"host namespaces ({field}=true)")


def _privileged(view: PodView) -> Iterator[Violation]:
    for c in view.containers:
        if c.security.get("privileged") is True:
            yield Violation(
                f"{c.path}.securityContext.privileged",
                f"privileged ({c.label} must not set securityContext.privileged=true)",
            )


def _baseline_capabilities(view: PodView) -> Iterator[Violation]:
    for c in view.containers:
        for position, capability in _added_capabilities(c):
            if capability not in lists.DEFAULT_CAPABILITIES:
                yield Violation(
                    f"{c.path}.securityContext.capabilities.add[{position}]",
                    f'non-default capabilities ({c.label} must not include "{capability}" in '
                    "securityContext.capabilities.add)",
                )


def _host_path_volumes(view: PodView) -> Iterator[Violation]:
    for volume in view.volumes:
        if "hostPath" in volume.body:
            yield Violation(
                f"{volume.path}.hostPath", f'hostPath volumes (volume "{volume.body.get("name")}")'
            )


def _host_ports(view: PodView) -> Iterator[Violation]:
    for c in view.containers:
        for position, port in items(c.body.get("ports")):
            host_port = port.get("hostPort")
            if host_port not in (None, 0):
                yield Violation(
                    f"{c.path}.ports[{position}].hostPort", f"hostPort ({c.label} uses hostPort {host_port})"
                )


def _apparmor(view: PodView) -> Iterator[Violation]:
    reason = "forbidden AppArmor profile"
    for key, value in view.annotations.items():
        if not isinstance(key, str) or not key.startswith(lists.APPARMOR_ANNOTATION_PREFIX):
            continue
        allowed = value == lists.APPARMOR_ANNOTATION_VALUES[0] or (
            isinstance(value, str) and value.startswith(lists.APPARMOR_ANNOTATION_VALUES[1])
        )
        if not allowed:
            yield Violation(f"{view.annotations_path}[{key}]", f'{reason} ({key}="{value}")')
    for where, who, context in _contexts(view):
        profile = context.get("appArmorProfile")
        if isinstance(profile, dict) and profile.get("type") not in lists.APPARMOR_TYPES:
            yield Violation(
                f"{where}.appArmorProfile.type",
                f"{reason} ({who} must not set securityContext.appArmorProfile.type"
                f' to "{profile.get("type")}")',
            )


def _selinux(view: PodView) -> Iterator[Violation]:
    for where, who, context in _contexts(view):
        options = context.get("seLinuxOptions")
        if not isinstance(options, dict):
            continue
        field = f"{where}.seLinuxOptions"
        if options.get("type") not in lists.SELINUX_TYPES and options.get("type") is not None:
            yield Violation(
                f"{field}.type",
                f"seLinuxOptions ({who} must not set securityContext.seLinuxOptions.type"
                f' "{options["type"]}")',
            )
        for key in ("user", "role"):
            if options.get(key) not in (None, ""):
                yield Violation(
                    f"{field}.{key}",
                    f"seLinuxOptions ({who} must not set securityContext.seLinuxOptions.{key})",
                )


def _proc_mount(view: PodView) -> Iterator[Violation]:
    for c in view.containers:
        mount = c.security.get("procMount")
        if mount not in (None, "Default"):
            yield Violation(
                f"{c.path}.securityContext.procMount",
                f'procMount ({c.label} must not set securityContext.procMount to "{mount}")',
            )


def _seccomp_baseline(view: PodView) -> Iterator[Violation]:
    for where, who, context in _contexts(view):
        if fields.as_dict(context.get("seccompProfile")).get("type") == "Unconfined":
            yield Violation(
                f"{where}.seccompProfile.type",
                f'seccompProfile ({who} must not set securityContext.seccompProfile.type to "Unconfined")',
            )


def _sysctls(view: PodView) -> Iterator[Violation]:
    for position, sysctl in items(view.security.get("sysctls")):
        name = sysctl.get("name")
        if name not in lists.SAFE_SYSCTLS:
            yield Violation(f"{view.security_path}.sysctls[{position}].name", f"forbidden sysctls ({name})")


def _host_probes(view: PodView) -> Iterator[Violation]:
    for c in view.containers:
        handlers = [(probe, fields.as_dict(c.body.get(probe))) for probe in PROBES]
        lifecycle = fields.as_dict(c.body.get("lifecycle"))
        handlers += [
            (f"lifecycle.{hook}", fields.as_dict(lifecycle.get(hook))) for hook in LIFECYCLE_HANDLERS
        ]
        for field, handler in handlers:
            for action in ("httpGet", "tcpSocket"):
                host = fields.as_dict(handler.get(action)).get("host")
                if host not in (None, ""):
                    yield Violation(
                        f"{c.path}.{field}.{action}.host",
                        f'probe or lifecycle host ({c.label} uses {field}.{action}.host "{host}")',
                    )


# -- restricted ------------------------------------------------------------------------------------
def _restricted(view: PodView) -> list[Violation]:
    # On Windows the Linux-only fields mean nothing; the standard exempts pods that say they are Windows.
    linux = fields.as_dict(view.pod.get("os")).get("name") != "windows"
    found = [*_volume_types(view), *_run_as_non_root(view), *_run_as_user(view)]
    if linux:
        found += [*_privilege_escalation(view), *_seccomp_restricted(view), *_restricted_capabilities(view)]
    return found


def _volume_types(view: PodView) -> Iterator[Violation]:
    for volume in view.volumes:
        for source in volume.body:
            if source != "name" and source not in lists.RESTRICTED_VOLUME_SOURCES:
                yield Violation(
                    f"{volume.path}.{source}",
                    f'restricted volume types (volume "{volume.body.get("name")}"'
                    f' uses restricted volume type "{source}")',
                )


def _privilege_escalation(view: PodView) -> Iterator[Violation]:
    for c in view.containers:
        if c.security.get("allowPrivilegeEscalation") is not False:
            yield Violation(
                f"{c.path}.securityContext.allowPrivilegeEscalation",
                f"allowPrivilegeEscalation != false ({c.label}"
                " must set securityContext.allowPrivilegeEscalation=false)",
            )


def _run_as_non_root(view: PodView) -> Iterator[Violation]:
    reason = "runAsNonRoot != true"
    pod_value = view.security.get("runAsNonRoot")
    if pod_value is False:
        yield Violation(
            f"{view.security_path}.runAsNonRoot",
            f"{reason} (pod must not set securityContext.runAsNonRoot=false)",
        )
    for c in view.containers:
        value = c.security.get("runAsNonRoot")
        field = f"{c.path}.securityContext.runAsNonRoot"
        if value is False:
            yield Violation(field, f"{reason} ({c.label} must not set securityContext.runAsNonRoot=false)")
        elif value is not True and pod_value is not True:
            yield Violation(field, f"{reason} (pod or {c.label} must set securityContext.runAsNonRoot=true)")


def _run_as_user(view: PodView) -> Iterator[Violation]:
    for where, who, context in _contexts(view):
        value = context.get("runAsUser")
        if value == 0 and not isinstance(value, bool):
            yield Violation(f"{where}.runAsUser", f"runAsUser=0 ({who} must not set runAsUser=0)")


def _seccomp_restricted(view: PodView) -> Iterator[Violation]:
    reason = "seccompProfile"
    allowed = '"RuntimeDefault" or "Localhost"'
    pod_type = fields.as_dict(view.security.get("seccompProfile")).get("type")
    if pod_type is not None and pod_type not in lists.SECCOMP_TYPES and pod_type != "Unconfined":
        yield Violation(
            f"{view.security_path}.seccompProfile.type",
            f'{reason} (pod must not set securityContext.seccompProfile.type to "{pod_type}")',
        )
    for c in view.containers:
        value = fields.as_dict(c.security.get("seccompProfile")).get("type")
        field = f"{c.path}.securityContext.seccompProfile.type"
        if value is None and pod_type not in lists.SECCOMP_TYPES:
            yield Violation(
                field,
                f"{reason} (pod or {c.label} must set securityContext.seccompProfile.type to {allowed})",
            )
        elif value is not None and value not in lists.SECCOMP_TYPES and value != "Unconfined":
            # Unconfined is baseline's finding already; this names the other values restricted refuses.
            yield Violation(
                field, f'{reason} ({c.label} must not set securityContext.seccompProfile.type to "{value}")'
            )


def _restricted_capabilities(view: PodView) -> Iterator[Violation]:
    reason = "unrestricted capabilities"
    for c in view.containers:
        capabilities = fields.as_dict(c.security.get("capabilities"))
        drop = capabilities.get("drop")
        if not isinstance(drop, list) or "ALL" not in drop:
            yield Violation(
                f"{c.path}.securityContext.capabilities.drop",
                f'{reason} ({c.label} must set securityContext.capabilities.drop=["ALL"])',
            )
        for position, capability in _added_capabilities(c):
            if (
                capability not in lists.RESTRICTED_ADDABLE_CAPABILITIES
                and capability in lists.DEFAULT_CAPABILITIES
            ):
                # Capabilities outside the default set are baseline's finding already.
                yield Violation(
                    f"{c.path}.securityContext.capabilities.add[{position}]",
                    f'{reason} ({c.label} must not include "{capability}"'
                    " in securityContext.capabilities.add)",
                )


# -- reading ---------------------------------------------------------------------------------------
def _added_capabilities(c: Container) -> Iterator[tuple[int, str]]:
    added = fields.as_dict(c.security.get("capabilities")).get("add")
    for position, capability in enumerate(added if isinstance(added, list) else []):
        yield position, str(capability)


def items(value: object) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The mappings of a list with their positions; anything else in it (or a non-list) is skipped."""
    if isinstance(value, list):
        for position, item in enumerate(value):
            if isinstance(item, dict):
                yield position, item
