"""Pods and pod templates validated as the API server validates them (pkg/apis/core/validation
`ValidatePodCreate`, `ValidatePodSpec`, `ValidatePodTemplateSpec`), for what a kubelet would otherwise trip
over when it runs them. Pure functions over the defaulted object; each problem is a `Cause` with upstream's
field path and wording (`spec.containers[0].volumeMounts[0].name: Not found: "data"`).

Covered: volumes (`podfields`), containers, init and ephemeral containers (names unique across all three and
DNS labels, image, ports, env and envFrom, mounts and devices naming a valid volume, unique mount paths,
relative sub-paths without `..`, pull and termination-message policies, resources with requests ≤ limits,
probes and lifecycle handlers, security contexts), the pod's restart and DNS policies and DNS config, grace
period, deadline, host, node, priority-class and service-account names, tolerations. Not covered: affinity,
topology spread constraints, sysctls, AppArmor/seccomp annotations, Windows options, resource claims and
pod-level resources.
"""

from __future__ import annotations

from typing import Any

from kubesim.builtins import fielderrors as fe
from kubesim.builtins import podfields, podsettings
from kubesim.builtins.podfields import Obj, items_of
from kubesim.errors import Cause

_EPHEMERAL_ALLOWED = frozenset(
    {
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "envFrom",
        "env",
        "volumeMounts",
        "volumeDevices",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
        "targetContainerName",
    }
)
_INIT_ONLY_FOR_SIDECARS = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_POLICIES = ("File", "FallbackToLogsOnError")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_MAX_INT32 = 2**31 - 1


def pod_causes(pod: Obj) -> list[Cause]:
    """validatePodMetadataAndSpec for a Pod (the spec under `spec`, pod-only checks included)."""
    spec: Obj = pod["spec"] if isinstance(pod.get("spec"), dict) else {}
    name = str((pod.get("metadata") or {}).get("name") or "")
    causes = pod_spec_causes(spec, "spec", pod_name=name)
    for key in ("containers", "initContainers"):
        for index, container in enumerate(items_of(spec.get(key))):
            image = container.get("image")
            if isinstance(image, str) and image != image.strip():
                causes.append(
                    fe.invalid(
                        f"spec.{key}[{index}].image", image, "must not have leading or trailing whitespace"
                    )
                )
    return causes


def template_causes(template: Any, path: str) -> list[Cause]:
    """ValidatePodTemplateSpec at `path` (`spec.template`, `spec.jobTemplate.spec.template`)."""
    template = template if isinstance(template, dict) else {}
    spec: Obj = template["spec"] if isinstance(template.get("spec"), dict) else {}
    causes = pod_spec_causes(spec, f"{path}.spec")
    if spec.get("ephemeralContainers"):
        causes.append(
            fe.forbidden(
                f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"
            )
        )
    return causes


def pod_spec_causes(spec: Obj, path: str, *, pod_name: str = "") -> list[Cause]:
    """ValidatePodSpec, in upstream's order."""
    causes: list[Cause] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        causes.append(fe.required(f"{path}.terminationGracePeriodSeconds"))
    volumes, problems = podfields.volume_causes(items_of(spec.get("volumes")), f"{path}.volumes", pod_name)
    causes += problems
    containers, inits = items_of(spec.get("containers")), items_of(spec.get("initContainers"))
    restart = spec.get("restartPolicy") or ""
    causes += _containers(containers, volumes, grace, f"{path}.containers")
    causes += _init_containers(inits, containers, volumes, grace, f"{path}.initContainers")
    causes += _ephemeral_containers(
        items_of(spec.get("ephemeralContainers")), containers + inits, volumes, f"{path}.ephemeralContainers"
    )
    causes += fe.choice(f"{path}.restartPolicy", restart, _RESTART_POLICIES)
    dns_policy = spec.get("dnsPolicy") or ""
    causes += fe.choice(f"{path}.dnsPolicy", dns_policy, _DNS_POLICIES)
    causes += podsettings.pod_security_context_causes(spec.get("securityContext"), f"{path}.securityContext")
    for index, secret in enumerate(items_of(spec.get("imagePullSecrets"))):
        if not secret.get("name"):
            causes.append(fe.required(f"{path}.imagePullSecrets[{index}].name"))
    causes += podsettings.dns_config_causes(spec.get("dnsConfig"), dns_policy, f"{path}.dnsConfig")
    for key, check in (
        ("serviceAccountName", fe.dns_subdomain_problems),
        ("nodeName", fe.dns_subdomain_problems),
    ):
        if spec.get(key):
            causes += fe.invalids(f"{path}.{key}", spec[key], check(str(spec[key])))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= _MAX_INT32:
        causes.append(
            fe.invalid(f"{path}.activeDeadlineSeconds", deadline, fe.inclusive_range(1, _MAX_INT32))
        )
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            causes += fe.invalids(f"{path}.{key}", spec[key], fe.dns_label_problems(str(spec[key])))
    causes += podsettings.toleration_causes(items_of(spec.get("tolerations")), f"{path}.tolerations")
    if spec.get("priorityClassName"):
        causes += fe.invalids(
            f"{path}.priorityClassName",
            spec["priorityClassName"],
            fe.dns_subdomain_problems(str(spec["priorityClassName"])),
        )
    return causes


# --- containers --------------------------------------------------------------------------------------------


def _containers(containers: list[Obj], volumes: dict[str, Obj], grace: Any, path: str) -> list[Cause]:
    if not containers:
        return [fe.required(path)]
    causes: list[Cause] = []
    names: set[str] = set()
    for index, container in enumerate(containers):
        here = f"{path}[{index}]"
        causes += _container_common(container, volumes, here)
        name = container.get("name") or ""
        if name in names:
            causes.append(fe.duplicate(f"{here}.name", name))
        names.add(name)
        causes += _handlers_and_probes(container, grace, here)
        if container.get("restartPolicy") is not None:
            causes.append(fe.forbidden(f"{here}.restartPolicy", "may not be set for non-init containers"))
    return causes + _host_port_conflicts(containers, path)


def _init_containers(
    inits: list[Obj], containers: list[Obj], volumes: dict[str, Obj], grace: Any, path: str
) -> list[Cause]:
    causes: list[Cause] = []
    names = {c.get("name") for c in containers}
    for index, container in enumerate(inits):
        here = f"{path}[{index}]"
        causes += _container_common(container, volumes, here)
        policy = container.get("restartPolicy")
        if policy is not None and policy != "Always":
            causes.append(fe.not_supported(f"{here}.restartPolicy", policy, ("Always",)))
        name = container.get("name") or ""
        if name in names:
            causes.append(fe.duplicate(f"{here}.name", name))
        elif name:
            names.add(name)
        causes += _host_port_conflicts([container], path)
        if policy == "Always":
            causes += _handlers_and_probes(container, grace, here)
        else:
            causes += [
                fe.forbidden(
                    f"{here}.{key}", "may not be set for init containers without restartPolicy=Always"
                )
                for key in _INIT_ONLY_FOR_SIDECARS
                if container.get(key) is not None
            ]
    return causes


def _ephemeral_containers(
    ephemerals: list[Obj], others: list[Obj], volumes: dict[str, Obj], path: str
) -> list[Cause]:
    causes: list[Cause] = []
    other_names = {c.get("name") for c in others}
    names = set(other_names)
    for index, container in enumerate(ephemerals):
        here = f"{path}[{index}]"
        causes += _container_common(container, volumes, here)
        image = container.get("image")
        if isinstance(image, str) and image != image.strip():
            causes.append(fe.invalid(f"{here}.image", image, "must not have leading or trailing whitespace"))
        name = container.get("name") or ""
        if name in names:
            causes.append(fe.duplicate(f"{here}.name", name))
        names.add(name)
        target = container.get("targetContainerName")
        if target and target not in other_names:
            causes.append(fe.not_found(f"{here}.targetContainerName", target))
        causes += [
            fe.forbidden(f"{here}.{key}", "cannot be set for an Ephemeral Container")
            for key, value in container.items()
            if key not in _EPHEMERAL_ALLOWED and value not in (None, {}, [], "", 0, False)
        ]
        for i, mount in enumerate(items_of(container.get("volumeMounts"))):
            for key in ("subPath", "subPathExpr"):
                if mount.get(key):
                    causes.append(
                        fe.forbidden(
                            f"{here}.volumeMounts[{i}].{key}", "cannot be set for an Ephemeral Container"
                        )
                    )
    return causes


def _container_common(container: Obj, volumes: dict[str, Obj], path: str) -> list[Cause]:
    """validateContainerCommon: what every kind of container must get right."""
    causes: list[Cause] = []
    name = container.get("name") or ""
    if not name:
        causes.append(fe.required(f"{path}.name"))
    else:
        causes += fe.invalids(f"{path}.name", name, fe.dns_label_problems(str(name)))
    if not container.get("image"):
        causes.append(fe.required(f"{path}.image"))
    policy = container.get("terminationMessagePolicy") or ""
    causes += fe.choice(f"{path}.terminationMessagePolicy", policy, _TERMINATION_POLICIES)
    mounts, devices = items_of(container.get("volumeMounts")), items_of(container.get("volumeDevices"))
    causes += _ports(items_of(container.get("ports")), f"{path}.ports")
    causes += podfields.env_causes(items_of(container.get("env")), f"{path}.env")
    causes += podfields.env_from_causes(items_of(container.get("envFrom")), f"{path}.envFrom")
    causes += _volume_mounts(mounts, devices, volumes, container, f"{path}.volumeMounts")
    causes += _volume_devices(devices, mounts, volumes, f"{path}.volumeDevices")
    pull = container.get("imagePullPolicy") or ""
    causes += fe.choice(f"{path}.imagePullPolicy", pull, _PULL_POLICIES)
    causes += podsettings.resources_causes(container.get("resources"), f"{path}.resources")
    return causes + podsettings.security_context_causes(
        container.get("securityContext"), f"{path}.securityContext"
    )


def _ports(ports: list[Obj], path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for index, port in enumerate(ports):
        here = f"{path}[{index}]"
        name = port.get("name") or ""
        if name:
            problems = fe.port_name_problems(str(name))
            if problems:
                causes += fe.invalids(f"{here}.name", name, problems)
            elif name in names:
                causes.append(fe.duplicate(f"{here}.name", name))
            names.add(name)
        number = port.get("containerPort") or 0
        if not number:
            causes.append(fe.required(f"{here}.containerPort"))
        else:
            causes += fe.invalids(f"{here}.containerPort", number, fe.port_number_problems(number))
        if port.get("hostPort"):
            causes += fe.invalids(
                f"{here}.hostPort", port["hostPort"], fe.port_number_problems(port["hostPort"])
            )
        protocol = port.get("protocol") or ""
        causes += fe.choice(f"{here}.protocol", protocol, _PROTOCOLS)
    return causes


def _host_port_conflicts(containers: list[Obj], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for ci, container in enumerate(containers):
        for pi, port in enumerate(items_of(container.get("ports"))):
            if not port.get("hostPort"):
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{port['hostPort']}"
            if key in seen:
                causes.append(fe.duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return causes


def _volume_mounts(
    mounts: list[Obj], devices: list[Obj], volumes: dict[str, Obj], container: Obj, path: str
) -> list[Cause]:
    """ValidateVolumeMounts: every mount names a valid volume, at a unique path."""
    causes: list[Cause] = []
    device_paths = {d.get("name"): d.get("devicePath") for d in devices}
    mount_points: set[str] = set()
    for index, mount in enumerate(mounts):
        here = f"{path}[{index}]"
        name, mount_path = mount.get("name") or "", mount.get("mountPath") or ""
        if not name:
            causes.append(fe.required(f"{here}.name"))
        if name not in volumes:
            causes.append(fe.not_found(f"{here}.name", name))
        if not mount_path:
            causes.append(fe.required(f"{here}.mountPath"))
        if mount_path in mount_points:
            causes.append(fe.invalid(f"{here}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
        causes += _taken(here, name, "mountPath", mount_path, device_paths, "volumeDevices")
        if isinstance(volumes.get(name, {}).get("image"), dict):
            for key in ("subPath", "subPathExpr"):
                if mount.get(key):
                    causes.append(
                        fe.invalid(f"{here}.{key}", mount[key], "not allowed in image volume sources")
                    )
        if mount.get("subPath"):  # upstream reports these two under the list's path, not the item's
            causes += podfields.local_descending(str(mount["subPath"]), f"{path}.subPath")
        if mount.get("subPathExpr"):
            if mount.get("subPath"):
                causes.append(
                    fe.invalid(
                        f"{here}.subPathExpr",
                        mount["subPathExpr"],
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            causes += podfields.local_descending(str(mount["subPathExpr"]), f"{path}.subPathExpr")
        causes += _mount_propagation(mount, container, path)
    return causes


def _mount_propagation(mount: Obj, container: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    propagation = mount.get("mountPropagation")
    if propagation is not None:
        supported = ("Bidirectional", "HostToContainer", "None")
        if propagation not in supported:
            causes.append(fe.not_supported(f"{path}.mountPropagation", propagation, supported))
        privileged = (container.get("securityContext") or {}).get("privileged") is True
        if propagation == "Bidirectional" and not privileged:
            causes.append(
                fe.forbidden(
                    f"{path}.mountPropagation",
                    "Bidirectional mount propagation is available only to privileged containers",
                )
            )
    recursive = mount.get("recursiveReadOnly")
    if recursive in ("Enabled", "IfPossible"):
        if not mount.get("readOnly"):
            causes.append(
                fe.forbidden(f"{path}.recursiveReadOnly", "may only be specified when readOnly is true")
            )
        if propagation not in (None, "None"):
            causes.append(
                fe.forbidden(
                    f"{path}.recursiveReadOnly",
                    "may only be specified when mountPropagation is None or not specified",
                )
            )
    elif recursive not in (None, "Disabled"):
        causes.append(
            fe.not_supported(f"{path}.recursiveReadOnly", recursive, ("Disabled", "Enabled", "IfPossible"))
        )
    return causes


def _volume_devices(devices: list[Obj], mounts: list[Obj], volumes: dict[str, Obj], path: str) -> list[Cause]:
    causes: list[Cause] = []
    mount_paths = {m.get("name"): m.get("mountPath") for m in mounts}
    paths: set[str] = set()
    names: set[str] = set()
    for index, device in enumerate(devices):
        here = f"{path}[{index}]"
        name, device_path = device.get("name") or "", device.get("devicePath") or ""
        if not name:
            causes.append(fe.required(f"{here}.name"))
        if name in names:
            causes.append(fe.invalid(f"{here}.name", name, "must be unique"))
        volume = volumes.get(name)
        if volume is not None and not any(
            isinstance(volume.get(k), dict) for k in ("persistentVolumeClaim", "ephemeral")
        ):
            causes.append(
                fe.invalid(
                    f"{here}.name",
                    name,
                    "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                )
            )
        if volume is None:
            causes.append(fe.not_found(f"{here}.name", name))
        if not device_path:
            causes.append(fe.required(f"{here}.devicePath"))
        if device_path in paths:
            causes.append(fe.invalid(f"{here}.devicePath", device_path, "must be unique"))
        if device_path and podfields.no_backsteps(device_path, path):
            causes.append(fe.invalid(f"{here}.devicePath", device_path, "can not contain backsteps ('..')"))
        else:
            paths.add(device_path)
        causes += _taken(here, name, "devicePath", device_path, mount_paths, "volumeMounts")
        if name:
            names.add(name)
    return causes


def _taken(here: str, name: str, key: str, path: str, others: dict[Any, Any], other_list: str) -> list[Cause]:
    """A mount or device whose name or path (at `key`) the other list, by name → path, already holds."""
    causes = []
    if name in others:
        causes.append(fe.invalid(f"{here}.name", name, f"must not already exist in {other_list}"))
    if path in others.values():
        causes.append(fe.invalid(f"{here}.{key}", path, f"must not already exist as a path in {other_list}"))
    return causes


def _handlers_and_probes(container: Obj, grace: Any, path: str) -> list[Cause]:
    """Lifecycle hooks and probes: allowed for regular containers and sidecars (restartable init ones)."""
    causes = podsettings.lifecycle_causes(container.get("lifecycle"), grace, f"{path}.lifecycle")
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        causes += podsettings.probe_causes(container.get(kind), grace, f"{path}.{kind}", kind=kind)
    return causes
