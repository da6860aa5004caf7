"""Kubernetes' Pod Security Standards (`baseline`, `restricted`; v1.34 of the standard) as a pure check.

We check the pod templates tenants hand us (a job's replicas, a sweep's Argo templates, a pipeline's
Workflow) before they reach the cluster, so a refusal names the field the user wrote rather than a Pod the
controller failed to create later. The rules and reasons follow the reference implementation
(kubernetes/pod-security-admission, `policy/check_*.go`); unlike it, every offending field is reported on
its own, with its path. Malformed values (a string where a bool belongs) are not flagged here: the
schema refuses them, and a value that is not `true` does not grant the privilege. No Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)

#: What a container runtime grants by default; baseline allows adding only these back.
DEFAULT_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
#: The one capability restricted lets a container add (after dropping ALL).
RESTRICTED_ADDABLE_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
#: Namespaced sysctls that cannot reach other pods (baseline's allowed list, as of v1.32).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
#: Volume sources restricted allows: the ones whose data comes from the API or a PersistentVolume.
RESTRICTED_VOLUME_SOURCES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_ANNOTATION_VALUES = ("runtime/default", "localhost/")  # the second is a prefix
APPARMOR_TYPES = ("RuntimeDefault", "Localhost")
SECCOMP_TYPES = ("RuntimeDefault", "Localhost")
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
LIFECYCLE_HANDLERS = ("postStart", "preStop")


@dataclass(frozen=True)
class Violation:
    """One field that breaks the level: `message` reads as Pod Security admission words it,
    `reason (detail)`, e.g. `privileged (container "x" must not set securityContext.privileged=true)`."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class _Container:
    path: str  # spec.containers[0]
    name: str
    body: Mapping[str, Any]

    @property
    def label(self) -> str:
        return f'container "{self.name}"'

    @property
    def security(self) -> Mapping[str, Any]:
        return _mapping(self.body.get("securityContext"))


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
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}: expected one of {', '.join(LEVELS)}")
    if level == PRIVILEGED:
        return []
    pod = _mapping(spec)
    containers = list(_containers(pod, path))
    found = _baseline(pod, containers, _mapping(annotations), path, metadata_path)
    if level == RESTRICTED:
        found += _restricted(pod, containers, path)
    return found


# -- baseline --------------------------------------------------------------------------------------
def _baseline(
    pod: Mapping[str, Any],
    containers: list[_Container],
    annotations: Mapping[str, Any],
    path: str,
    metadata_path: str,
) -> list[Violation]:
    return [
        *_host_process(pod, containers, path),
        *_host_namespaces(pod, path),
        *_privileged(containers),
        *_baseline_capabilities(containers),
        *_host_path_volumes(pod, path),
        *_host_ports(containers),
        *_apparmor(pod, containers, annotations, path, metadata_path),
        *_selinux(pod, containers, path),
        *_proc_mount(containers),
        *_seccomp_baseline(pod, containers, path),
        *_sysctls(pod, path),
        *_host_probes(containers),
    ]


def _host_process(pod: Mapping[str, Any], containers: list[_Container], path: str) -> Iterator[Violation]:
    field = "securityContext.windowsOptions.hostProcess"
    if _mapping(_mapping(pod.get("securityContext")).get("windowsOptions")).get("hostProcess") is True:
        yield Violation(f"{path}.{field}", f"hostProcess (pod must not set {field}=true)")
    for c in containers:
        if _mapping(c.security.get("windowsOptions")).get("hostProcess") is True:
            yield Violation(f"{c.path}.{field}", f"hostProcess ({c.label} must not set {field}=true)")


def _host_namespaces(pod: Mapping[str, Any], path: str) -> Iterator[Violation]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field) is True:
            yield Violation(f"{path}.{field}", f"host namespaces ({field}=true)")


def _privileged(containers: list[_Container]) -> Iterator[Violation]:
    for c in containers:
        if c.security.get("privileged") is True:
            yield Violation(
                f"{c.path}.securityContext.privileged",
                f"privileged ({c.label} must not set securityContext.privileged=true)",
            )


def _baseline_capabilities(containers: list[_Container]) -> Iterator[Violation]:
    for c in containers:
        for position, capability in _added_capabilities(c):
            if capability not in DEFAULT_CAPABILITIES:
                yield Violation(
                    f"{c.path}.securityContext.capabilities.add[{position}]",
                    f'non-default capabilities ({c.label} must not include "{capability}" in '
                    "securityContext.capabilities.add)",
                )


def _host_path_volumes(pod: Mapping[str, Any], path: str) -> Iterator[Violation]:
    for position, volume in _volumes(pod):
        if "hostPath" in volume:
            yield Violation(
                f"{path}.volumes[{position}].hostPath", f'hostPath volumes (volume "{volume.get("name")}")'
            )


def _host_ports(containers: list[_Container]) -> Iterator[Violation]:
    for c in containers:
        for position, port in _items(c.body.get("ports")):
            host_port = port.get("hostPort")
            if host_port not in (None, 0):
                yield Violation(
                    f"{c.path}.ports[{position}].hostPort", f"hostPort ({c.label} uses hostPort {host_port})"
                )


def _apparmor(
    pod: Mapping[str, Any],
    containers: list[_Container],
    annotations: Mapping[str, Any],
    path: str,
    metadata_path: str,
) -> Iterator[Violation]:
    reason = "forbidden AppArmor profile"
    for key, value in annotations.items():
        if not isinstance(key, str) or not key.startswith(APPARMOR_ANNOTATION_PREFIX):
            continue
        allowed = value == APPARMOR_ANNOTATION_VALUES[0] or (
            isinstance(value, str) and value.startswith(APPARMOR_ANNOTATION_VALUES[1])
        )
        if not allowed:
            yield Violation(f"{metadata_path}.annotations[{key}]", f'{reason} ({key}="{value}")')
    contexts = [(path, "pod", _mapping(pod.get("securityContext")))]
    contexts += [(c.path, c.label, c.security) for c in containers]
    for where, who, context in contexts:
        profile = context.get("appArmorProfile")
        if isinstance(profile, Mapping) and profile.get("type") not in APPARMOR_TYPES:
            yield Violation(
                f"{where}.securityContext.appArmorProfile.type",
                f"{reason} ({who} must not set securityContext.appArmorProfile.type"
                f' to "{profile.get("type")}")',
            )


def _selinux(pod: Mapping[str, Any], containers: list[_Container], path: str) -> Iterator[Violation]:
    contexts = [(path, "pod", _mapping(pod.get("securityContext")))]
    contexts += [(c.path, c.label, c.security) for c in containers]
    for where, who, context in contexts:
        options = context.get("seLinuxOptions")
        if not isinstance(options, Mapping):
            continue
        field = f"{where}.securityContext.seLinuxOptions"
        if options.get("type") not in SELINUX_TYPES and options.get("type") is not None:
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


def _proc_mount(containers: list[_Container]) -> Iterator[Violation]:
    for c in containers:
        mount = c.security.get("procMount")
        if mount not in (None, "Default"):
            yield Violation(
                f"{c.path}.securityContext.procMount",
                f'procMount ({c.label} must not set securityContext.procMount to "{mount}")',
            )


def _seccomp_baseline(pod: Mapping[str, Any], containers: list[_Container], path: str) -> Iterator[Violation]:
    contexts = [(path, "pod", _mapping(pod.get("securityContext")))]
    contexts += [(c.path, c.label, c.security) for c in containers]
    for where, who, context in contexts:
        if _mapping(context.get("seccompProfile")).get("type") == "Unconfined":
            yield Violation(
                f"{where}.securityContext.seccompProfile.type",
                f'seccompProfile ({who} must not set securityContext.seccompProfile.type to "Unconfined")',
            )


def _sysctls(pod: Mapping[str, Any], path: str) -> Iterator[Violation]:
    for position, sysctl in _items(_mapping(pod.get("securityContext")).get("sysctls")):
        name = sysctl.get("name")
        if name not in SAFE_SYSCTLS:
            yield Violation(f"{path}.securityContext.sysctls[{position}].name", f"forbidden sysctls ({name})")


def _host_probes(containers: list[_Container]) -> Iterator[Violation]:
    for c in containers:
        handlers = [(probe, _mapping(c.body.get(probe))) for probe in PROBES]
        lifecycle = _mapping(c.body.get("lifecycle"))
        handlers += [(f"lifecycle.{hook}", _mapping(lifecycle.get(hook))) for hook in LIFECYCLE_HANDLERS]
        for field, handler in handlers:
            for action in ("httpGet", "tcpSocket"):
                host = _mapping(handler.get(action)).get("host")
                if host not in (None, ""):
                    yield Violation(
                        f"{c.path}.{field}.{action}.host",
                        f'probe or lifecycle host ({c.label} uses {field}.{action}.host "{host}")',
                    )


# -- restricted ------------------------------------------------------------------------------------
def _restricted(pod: Mapping[str, Any], containers: list[_Container], path: str) -> list[Violation]:
    # On Windows the Linux-only fields mean nothing; the standard exempts pods that say they are Windows.
    linux = _mapping(pod.get("os")).get("name") != "windows"
    found = [
        *_volume_types(pod, path),
        *_run_as_non_root(pod, containers, path),
        *_run_as_user(pod, containers, path),
    ]
    if linux:
        found += [*_privilege_escalation(containers), *_seccomp_restricted(pod, containers, path)]
        found += _restricted_capabilities(containers)
    return found


def _volume_types(pod: Mapping[str, Any], path: str) -> Iterator[Violation]:
    for position, volume in _volumes(pod):
        for source in volume:
            if source != "name" and source not in RESTRICTED_VOLUME_SOURCES:
                yield Violation(
                    f"{path}.volumes[{position}].{source}",
                    f'restricted volume types (volume "{volume.get("name")}"'
                    f' uses restricted volume type "{source}")',
                )


def _privilege_escalation(containers: list[_Container]) -> Iterator[Violation]:
    for c in containers:
        if c.security.get("allowPrivilegeEscalation") is not False:
            yield Violation(
                f"{c.path}.securityContext.allowPrivilegeEscalation",
                f"allowPrivilegeEscalation != false ({c.label}"
                " must set securityContext.allowPrivilegeEscalation=false)",
            )


def _run_as_non_root(pod: Mapping[str, Any], containers: list[_Container], path: str) -> Iterator[Violation]:
    reason = "runAsNonRoot != true"
    pod_value = _mapping(pod.get("securityContext")).get("runAsNonRoot")
    if pod_value is False:
        yield Violation(
            f"{path}.securityContext.runAsNonRoot",
            f"{reason} (pod must not set securityContext.runAsNonRoot=false)",
        )
    for c in containers:
        value = c.security.get("runAsNonRoot")
        field = f"{c.path}.securityContext.runAsNonRoot"
        if value is False:
            yield Violation(field, f"{reason} ({c.label} must not set securityContext.runAsNonRoot=false)")
        elif value is not True and pod_value is not True:
            yield Violation(field, f"{reason} (pod or {c.label} must set securityContext.runAsNonRoot=true)")


def _run_as_user(pod: Mapping[str, Any], containers: list[_Container], path: str) -> Iterator[Violation]:
    contexts = [(path, "pod", _mapping(pod.get("securityContext")))]
    contexts += [(c.path, c.label, c.security) for c in containers]
    for where, who, context in contexts:
        value = context.get("runAsUser")
        if value == 0 and not isinstance(value, bool):
            yield Violation(
                f"{where}.securityContext.runAsUser", f"runAsUser=0 ({who} must not set runAsUser=0)"
            )


def _seccomp_restricted(
    pod: Mapping[str, Any], containers: list[_Container], path: str
) -> Iterator[Violation]:
    reason = "seccompProfile"
    allowed = '"RuntimeDefault" or "Localhost"'
    pod_type = _mapping(_mapping(pod.get("securityContext")).get("seccompProfile")).get("type")
    if pod_type is not None and pod_type not in SECCOMP_TYPES and pod_type != "Unconfined":
        yield Violation(
            f"{path}.securityContext.seccompProfile.type",
            f'{reason} (pod must not set securityContext.seccompProfile.type to "{pod_type}")',
        )
    for c in containers:
        value = _mapping(c.security.get("seccompProfile")).get("type")
        field = f"{c.path}.securityContext.seccompProfile.type"
        if value is None and pod_type not in SECCOMP_TYPES:
            yield Violation(
                field,
                f"{reason} (pod or {c.label} must set securityContext.seccompProfile.type to {allowed})",
            )
        elif value is not None and value not in SECCOMP_TYPES and value != "Unconfined":
            # Unconfined is baseline's finding already; this names the other values restricted refuses.
            yield Violation(
                field, f'{reason} ({c.label} must not set securityContext.seccompProfile.type to "{value}")'
            )


def _restricted_capabilities(containers: list[_Container]) -> Iterator[Violation]:
    reason = "unrestricted capabilities"
    for c in containers:
        capabilities = _mapping(c.security.get("capabilities"))
        drop = capabilities.get("drop")
        if not isinstance(drop, list) or "ALL" not in drop:
            yield Violation(
                f"{c.path}.securityContext.capabilities.drop",
                f'{reason} ({c.label} must set securityContext.capabilities.drop=["ALL"])',
            )
        for position, capability in _added_capabilities(c):
            if capability not in RESTRICTED_ADDABLE_CAPABILITIES and capability in DEFAULT_CAPABILITIES:
                # Capabilities outside the default set are baseline's finding already.
                yield Violation(
                    f"{c.path}.securityContext.capabilities.add[{position}]",
                    f'{reason} ({c.label} must not include "{capability}"'
                    " in securityContext.capabilities.add)",
                )


# -- reading ---------------------------------------------------------------------------------------
def _containers(pod: Mapping[str, Any], path: str) -> Iterator[_Container]:
    for key in CONTAINER_LISTS:
        for position, body in _items(pod.get(key)):
            yield _Container(f"{path}.{key}[{position}]", str(body.get("name") or ""), body)


def _volumes(pod: Mapping[str, Any]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    return _items(pod.get("volumes"))


def _added_capabilities(c: _Container) -> Iterator[tuple[int, str]]:
    added = _mapping(c.security.get("capabilities")).get("add")
    for position, capability in enumerate(added if isinstance(added, list) else []):
        yield position, str(capability)


def _items(value: object) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The mappings of a list with their positions; anything else in it (or a non-list) is skipped."""
    if isinstance(value, list):
        for position, item in enumerate(value):
            if isinstance(item, Mapping):
                yield position, item


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
