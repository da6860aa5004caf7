"""The baseline and restricted checks of the Pod Security Standards, as pure functions of a pod's metadata
and spec, with the upstream reasons and details (pod-security-admission `policy/check_*.go`, latest).

`evaluate(level, metadata, spec)` returns the failed checks in upstream order (baseline check ids sorted,
then restricted ones sorted); `forbidden_detail` joins them as the apiserver's message does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

BASELINE, RESTRICTED, PRIVILEGED = "baseline", "restricted", "privileged"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)

Spec = dict[str, Any]
Metadata = dict[str, Any]


@dataclass(frozen=True)
class Violation:
    reason: str
    detail: str


Check = Callable[[Metadata, Spec], "Violation | None"]


def _containers(spec: Spec) -> Iterator[dict[str, Any]]:
    """Init containers, containers, then ephemeral containers (the upstream visitor's order)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                yield container


def _context(container: dict[str, Any]) -> dict[str, Any]:
    return container.get("securityContext") or {}


def _pod_context(spec: Spec) -> dict[str, Any]:
    return spec.get("securityContext") or {}


def _quote(items: list[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _containers_phrase(names: list[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_quote(names)}"


def _containers_violation(check: str, bad: list[str], rule: str) -> Violation | None:
    """`check`'s Violation naming the `bad` containers and the `rule` they break; None when none is bad."""
    return Violation(check, f"{_containers_phrase(bad)} {rule}") if bad else None


def _setters(pod: bool, containers: list[str], *others: str) -> str:
    """Who set what a check forbids, as its message names them: `pod and containers "a", "b"` (empty when
    nobody did)."""
    named = (["pod"] if pod else []) + ([_containers_phrase(containers)] if containers else [])
    return " and ".join([*named, *others])


def _inherited_setting(
    check: str, pod: bool, explicit: list[str], implicit: list[str], forbidden: str, required: str
) -> Violation | None:
    """A setting the pod sets for its containers or each container for itself: who set a forbidden value
    (`pod`, the `explicit` containers), else the `implicit` containers left with none."""
    if setters := _setters(pod, explicit):
        return Violation(check, f"{setters} {forbidden}")
    if implicit:
        return Violation(check, f"pod or {_containers_phrase(implicit)} {required}")
    return None


def _windows(spec: Spec) -> bool:
    return ((spec.get("os") or {}).get("name")) == "windows"


def _user_namespace(spec: Spec) -> bool:
    return spec.get("hostUsers") is False


# --- baseline --------------------------------------------------------------------------------------------

_DEFAULT_CAPABILITIES = {
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
_SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
}
_SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
_SECCOMP_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"
_SAFE_VOLUMES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
_VOLUME_TYPES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
)


def app_armor_profile(metadata: Metadata, spec: Spec) -> Violation | None:
    bad_values: set[str] = set()

    def wrong(context: dict[str, Any]) -> bool:
        profile = context.get("appArmorProfile")
        if profile is None:
            return False
        kind = str((profile or {}).get("type", ""))
        if kind in ("RuntimeDefault", "Localhost"):
            return False
        bad_values.add(kind)
        return True

    pod = wrong(_pod_context(spec))
    containers = [c.get("name", "") for c in _containers(spec) if wrong(_context(c))]
    annotations = sorted(
        f'{key}="{value}"'
        for key, value in (metadata.get("annotations") or {}).items()
        if key.startswith("container.apparmor.security.beta.kubernetes.io/")
        and not (value == "runtime/default" or value.startswith("localhost/"))
    )
    values = sorted(bad_values) + annotations
    annotated = [_plural("annotation", "annotations", len(annotations))] if annotations else []
    setters = _setters(pod, containers, *annotated)
    if not setters:
        return None
    return Violation(
        _plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
        f"{setters} must not set AppArmor profile type to {_quote(values)}",
    )


def capabilities_baseline(metadata: Metadata, spec: Spec) -> Violation | None:
    bad, added = [], set()
    for container in _containers(spec):
        extra = [
            c
            for c in (_context(container).get("capabilities") or {}).get("add") or []
            if c not in _DEFAULT_CAPABILITIES
        ]
        if extra:
            bad.append(container.get("name", ""))
            added.update(extra)
    return _containers_violation(
        "non-default capabilities",
        bad,
        f"must not include {_quote(sorted(added))} in securityContext.capabilities.add",
    )


def host_namespaces(metadata: Metadata, spec: Spec) -> Violation | None:
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    return Violation("host namespaces", ", ".join(used)) if used else None


def host_path_volumes(metadata: Metadata, spec: Spec) -> Violation | None:
    names = [
        v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict) and v.get("hostPath")
    ]
    if not names:
        return None
    return Violation("hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_quote(names)}")


def host_ports(metadata: Metadata, spec: Spec) -> Violation | None:
    bad: list[str] = []
    ports: set[str] = set()
    for container in _containers(spec):
        used = [
            int(p["hostPort"])
            for p in container.get("ports") or []
            if isinstance(p, dict) and p.get("hostPort")
        ]
        if used:
            bad.append(container.get("name", ""))
            ports.update(str(p) for p in used)
    return _containers_violation(
        "hostPort",
        bad,
        f"{_plural('uses', 'use', len(bad))} "
        f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
    )


def _handler_hosts(handler: Any) -> list[str]:
    """The `host` an httpGet or tcpSocket probe or lifecycle handler names, if any."""
    if not isinstance(handler, dict):
        return []
    actions = (handler.get("httpGet"), handler.get("tcpSocket"))
    return [str(a["host"]) for a in actions if isinstance(a, dict) and a.get("host")]


def host_probes_and_host_lifecycle(metadata: Metadata, spec: Spec) -> Violation | None:
    """Baseline since 1.34: probes and lifecycle handlers may not aim at another host."""
    bad: set[str] = set()
    hosts: set[str] = set()
    for container in _containers(spec):
        lifecycle = container.get("lifecycle")
        lifecycle = lifecycle if isinstance(lifecycle, dict) else {}
        handlers = [container.get(p) for p in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [lifecycle.get("postStart"), lifecycle.get("preStop")]
        found = [host for handler in handlers for host in _handler_hosts(handler)]
        if found:
            bad.add(container.get("name", ""))
            hosts.update(found)
    return _containers_violation(
        "probe or lifecycle host",
        sorted(bad),
        f"{_plural('uses', 'use', len(bad))} "
        f"{_plural('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} "
        f"{_quote(sorted(hosts))}",
    )


def privileged(metadata: Metadata, spec: Spec) -> Violation | None:
    bad = [c.get("name", "") for c in _containers(spec) if _context(c).get("privileged") is True]
    return _containers_violation("privileged", bad, "must not set securityContext.privileged=true")


def _proc_mount(spec: Spec) -> Violation | None:
    bad, kinds = [], set()
    for container in _containers(spec):
        mount = _context(container).get("procMount")
        if mount is not None and mount != "Default":
            bad.append(container.get("name", ""))
            kinds.add(str(mount))
    return _containers_violation(
        "procMount", bad, f"must not set securityContext.procMount to {_quote(sorted(kinds))}"
    )


def proc_mount(metadata: Metadata, spec: Spec) -> Violation | None:
    return None if _user_namespace(spec) else _proc_mount(spec)


def se_linux_options(metadata: Metadata, spec: Spec) -> Violation | None:
    bad_types, set_user, set_role = set(), False, False
    containers: list[str] = []

    def check(options: dict[str, Any]) -> bool:
        nonlocal set_user, set_role
        wrong = False
        if options.get("type", "") not in _SELINUX_TYPES:
            bad_types.add(str(options["type"]))
            wrong = True
        if options.get("user"):
            set_user, wrong = True, True
        if options.get("role"):
            set_role, wrong = True, True
        return wrong

    pod = check(_pod_context(spec).get("seLinuxOptions") or {})
    for container in _containers(spec):
        if check(_context(container).get("seLinuxOptions") or {}):
            containers.append(container.get("name", ""))
    setters = _setters(pod, containers)
    if not setters:
        return None
    data = []
    if bad_types:
        data.append(f"{_plural('type', 'types', len(bad_types))} {_quote(sorted(bad_types))}")
    if set_user:
        data.append("user may not be set")
    if set_role:
        data.append("role may not be set")
    return Violation(
        "seLinuxOptions",
        f"{setters} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
    )


def _seccomp_setters(spec: Spec, *, require: bool) -> Violation | None:
    bad_values: set[str] = set()
    pod_profile = _pod_context(spec).get("seccompProfile")
    pod_set = pod_wrong = False
    if pod_profile is not None:
        kind = str((pod_profile or {}).get("type", ""))
        if kind in ("RuntimeDefault", "Localhost"):
            pod_set = True
        else:
            pod_wrong = True
            bad_values.add(kind)
    explicit, implicit = [], []
    for container in _containers(spec):
        profile = _context(container).get("seccompProfile")
        if profile is not None:
            kind = str((profile or {}).get("type", ""))
            if kind not in ("RuntimeDefault", "Localhost"):
                explicit.append(container.get("name", ""))
                bad_values.add(kind)
        elif not pod_set:
            implicit.append(container.get("name", ""))
    return _inherited_setting(
        "seccompProfile",
        pod_wrong,
        explicit,
        implicit if require else [],
        f"must not set securityContext.seccompProfile.type to {_quote(sorted(bad_values))}",
        'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
    )


def seccomp_profile_baseline(metadata: Metadata, spec: Spec) -> Violation | None:
    return _seccomp_setters(spec, require=False)


def sysctls(metadata: Metadata, spec: Spec) -> Violation | None:
    names = [
        str(s.get("name", ""))
        for s in _pod_context(spec).get("sysctls") or []
        if isinstance(s, dict) and s.get("name") not in _SAFE_SYSCTLS
    ]
    return Violation("forbidden sysctls", ", ".join(names)) if names else None


def windows_host_process(metadata: Metadata, spec: Spec) -> Violation | None:
    pod = ((_pod_context(spec).get("windowsOptions") or {}).get("hostProcess")) is True
    bad = [
        c.get("name", "")
        for c in _containers(spec)
        if (_context(c).get("windowsOptions") or {}).get("hostProcess") is True
    ]
    setters = _setters(pod, bad)
    if not setters:
        return None
    return Violation("hostProcess", f"{setters} must not set securityContext.windowsOptions.hostProcess=true")


# --- restricted ------------------------------------------------------------------------------------------


def allow_privilege_escalation(metadata: Metadata, spec: Spec) -> Violation | None:
    if _windows(spec):
        return None
    bad = [
        c.get("name", "")
        for c in _containers(spec)
        if _context(c).get("allowPrivilegeEscalation") is not False
    ]
    return _containers_violation(
        "allowPrivilegeEscalation != false", bad, "must set securityContext.allowPrivilegeEscalation=false"
    )


def capabilities_restricted(metadata: Metadata, spec: Spec) -> Violation | None:
    if _windows(spec):
        return None
    missing_drop, adding, forbidden = [], [], set()
    for container in _containers(spec):
        capabilities = _context(container).get("capabilities")
        if capabilities is None:
            missing_drop.append(container.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            missing_drop.append(container.get("name", ""))
        extra = [c for c in capabilities.get("add") or [] if c != "NET_BIND_SERVICE"]
        if extra:
            adding.append(container.get("name", ""))
            forbidden.update(extra)
    details = []
    if missing_drop:
        details.append(
            f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_containers_phrase(adding)} must not include {_quote(sorted(forbidden))} "
            "in securityContext.capabilities.add"
        )
    return Violation("unrestricted capabilities", "; ".join(details)) if details else None


def proc_mount_restricted(metadata: Metadata, spec: Spec) -> Violation | None:
    return _proc_mount(spec)


def restricted_volumes(metadata: Metadata, spec: Spec) -> Violation | None:
    bad, kinds = [], set()
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict) or any(volume.get(key) is not None for key in _SAFE_VOLUMES):
            continue
        bad.append(volume.get("name", ""))
        kinds.add(next((key for key in _VOLUME_TYPES if volume.get(key) is not None), "unknown"))
    if not bad:
        return None
    return Violation(
        "restricted volume types",
        f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)} {_plural('uses', 'use', len(bad))} "
        f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} {_quote(sorted(kinds))}",
    )


def run_as_non_root(metadata: Metadata, spec: Spec) -> Violation | None:
    if _user_namespace(spec):
        return None
    pod_value = _pod_context(spec).get("runAsNonRoot")
    pod_non_root = pod_value is True
    explicit, implicit = [], []
    for container in _containers(spec):
        value = _context(container).get("runAsNonRoot")
        if value is False:
            explicit.append(container.get("name", ""))
        elif value is None and not pod_non_root:
            implicit.append(container.get("name", ""))
    return _inherited_setting(
        "runAsNonRoot != true",
        pod_value is False,
        explicit,
        implicit,
        "must not set securityContext.runAsNonRoot=false",
        "must set securityContext.runAsNonRoot=true",
    )


def run_as_user(metadata: Metadata, spec: Spec) -> Violation | None:
    if _user_namespace(spec):
        return None
    bad = [c.get("name", "") for c in _containers(spec) if _context(c).get("runAsUser") == 0]
    setters = _setters(_pod_context(spec).get("runAsUser") == 0, bad)
    return Violation("runAsUser=0", f"{setters} must not set runAsUser=0") if setters else None


def seccomp_profile_restricted(metadata: Metadata, spec: Spec) -> Violation | None:
    return None if _windows(spec) else _seccomp_setters(spec, require=True)


# check id → (level, function, baseline ids it replaces at restricted)
_BASELINE: dict[str, Check] = {
    "appArmorProfile": app_armor_profile,
    "capabilities_baseline": capabilities_baseline,
    "hostNamespaces": host_namespaces,
    "hostPathVolumes": host_path_volumes,
    "hostPorts": host_ports,
    "hostProbesAndHostLifecycle": host_probes_and_host_lifecycle,
    "privileged": privileged,
    "procMount": proc_mount,
    "seLinuxOptions": se_linux_options,
    "seccompProfile_baseline": seccomp_profile_baseline,
    "sysctls": sysctls,
    "windowsHostProcess": windows_host_process,
}
_RESTRICTED: dict[str, Check] = {
    "allowPrivilegeEscalation": allow_privilege_escalation,
    "capabilities_restricted": capabilities_restricted,
    "procMount_restricted": proc_mount_restricted,
    "restrictedVolumes": restricted_volumes,
    "runAsNonRoot": run_as_non_root,
    "runAsUser": run_as_user,
    "seccompProfile_restricted": seccomp_profile_restricted,
}
_OVERRIDDEN = {"capabilities_baseline", "seccompProfile_baseline", "hostPathVolumes", "procMount"}


def evaluate(level: str, metadata: Metadata, spec: Spec) -> list[Violation]:
    """The failed checks of `level` for a pod, in the upstream order."""
    if level == PRIVILEGED:
        return []
    checks = [fn for check_id, fn in sorted(_BASELINE.items())]
    if level == RESTRICTED:
        checks = [fn for check_id, fn in sorted(_BASELINE.items()) if check_id not in _OVERRIDDEN]
        checks += [fn for _, fn in sorted(_RESTRICTED.items())]
    return [violation for check in checks if (violation := check(metadata, spec)) is not None]


def forbidden_detail(violations: list[Violation]) -> str:
    """`reason (detail), reason (detail)`, as the aggregate result's ForbiddenDetail()."""
    return ", ".join(f"{v.reason} ({v.detail})" if v.detail else v.reason for v in violations)
