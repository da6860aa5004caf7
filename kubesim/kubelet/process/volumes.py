"""A pod's volumes as directories on the host, and each container's mounts of them.

The kubelet materialises every volume of a pod before its first container starts: emptyDir as a directory
of the pod, ConfigMap/Secret/downward API/projected volumes as files written once (a real kubelet refreshes
them about every minute; this one does not), PersistentVolumeClaims as the directory of the bound
PersistentVolume (kubesim's provisioner makes one per claim), hostPath only inside the sandbox root.
`VolumeError` carries the kubelet's FailedMount wording; the pod then waits in ContainerCreating.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from kubesim.kubelet.process.environment import (
    ConfigError,
    PodContext,
    Sources,
    field_value,
    resource_value,
    source_values,
)
from kubesim.kubelet.sandbox import Mount

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
#: (namespace, service account, audiences, expiration seconds, pod) → a signed token
TokenIssuer = Callable[[str, str, tuple[str, ...], int, Mapping[str, Any]], str]
#: (namespace, claim name) → the host directory of the PersistentVolume bound to it, or None while unbound
ClaimDirectory = Callable[[str, str], "str | None"]


class VolumeError(RuntimeError):
    """A volume that cannot be set up (yet); the message is the kubelet's FailedMount event."""


@dataclass(frozen=True)
class VolumeHost:
    """What setting up volumes reads besides the pod: its objects, tokens, claims and the sandbox root."""

    sources: Sources
    issue_token: TokenIssuer
    claim_directory: ClaimDirectory
    sandbox_root: Path
    ca_certificate: str  # the cluster CA, as ca.crt of the service-account volume


def _write(path: Path, content: str | bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    path.chmod(mode & 0o777)


def _relative(text: str, volume: str) -> PurePosixPath:
    relative = PurePosixPath(text)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise VolumeError(f'volume "{volume}": item path {text!r} must be relative and must not contain ".."')
    return relative


def _keys(
    kind: str, source: Mapping[str, Any] | None, reference: Mapping[str, Any], volume: str, target: Path
) -> None:
    """The files of a ConfigMap or Secret (all keys, or `items`) under `target`."""
    name = str(reference.get("name") or reference.get("secretName") or "")
    if source is None:
        if reference.get("optional"):
            return
        label = "configmap" if kind == "ConfigMap" else "secret"
        raise VolumeError(f'MountVolume.SetUp failed for volume "{volume}" : {label} "{name}" not found')
    values = source_values(kind, source)
    default_mode = int(reference.get("defaultMode", 0o644))
    items = reference.get("items")
    if items is None:
        for key, value in values.items():
            _write(target / key, value, default_mode)
        return
    for item in items:
        key = str(item.get("key", ""))
        if key not in values:
            if reference.get("optional"):
                continue
            raise VolumeError(
                f'MountVolume.SetUp failed for volume "{volume}" : '
                f"configmap references non-existent config key: {key}"
            )
        _write(
            target / _relative(str(item.get("path", key)), volume),
            values[key],
            int(item.get("mode", default_mode)),
        )


def _downward(items: list[Any], context: PodContext, volume: str, target: Path, default_mode: int) -> None:
    containers = {c.get("name"): c for c in (context.pod.get("spec") or {}).get("containers") or []}
    for item in items:
        path = target / _relative(str(item.get("path", "")), volume)
        if "fieldRef" in item:
            value = field_value(str(item["fieldRef"].get("fieldPath", "")), context)
        else:
            reference = item.get("resourceFieldRef") or {}
            container = containers.get(reference.get("containerName")) or {}
            value = resource_value(reference, container)
        _write(path, value, int(item.get("mode", default_mode)))


def _projected(
    volume: Mapping[str, Any], context: PodContext, host: VolumeHost, target: Path, account: str
) -> None:
    projected = volume.get("projected") or {}
    default_mode = int(projected.get("defaultMode", 0o644))
    namespace = str(context.pod["metadata"].get("namespace", ""))
    for source in projected.get("sources") or []:
        if "configMap" in source:
            reference = {"defaultMode": default_mode, **source["configMap"]}
            config_map = host.sources.config_map(str(reference.get("name", "")))
            _keys("ConfigMap", config_map, reference, volume["name"], target)
        elif "secret" in source:
            reference = {"defaultMode": default_mode, **source["secret"]}
            _keys(
                "Secret",
                host.sources.secret(str(reference.get("name", ""))),
                reference,
                volume["name"],
                target,
            )
        elif "downwardAPI" in source:
            _downward(source["downwardAPI"].get("items") or [], context, volume["name"], target, default_mode)
        elif "serviceAccountToken" in source:
            token = source["serviceAccountToken"]
            audience = token.get("audience")
            audiences: tuple[str, ...] = (str(audience),) if audience else ()
            expiration = int(token.get("expirationSeconds", 3607))
            issued = host.issue_token(namespace, account, audiences, expiration, context.pod)
            _write(target / _relative(str(token.get("path", "token")), volume["name"]), issued, default_mode)


def _host_path(volume: Mapping[str, Any], host: VolumeHost) -> str:
    path = Path(str((volume.get("hostPath") or {}).get("path", ""))).resolve()
    root = host.sandbox_root.resolve()
    if path != root and root not in path.parents:
        raise VolumeError(
            f'MountVolume.SetUp failed for volume "{volume["name"]}" : '
            f"hostPath {path} is outside the process "
            f"kubelet's sandbox root {root}"
        )
    kind = (volume.get("hostPath") or {}).get("type", "")
    if kind in ("DirectoryOrCreate", "") and not path.exists():
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate" and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    elif not path.exists():
        raise VolumeError(
            f'MountVolume.SetUp failed for volume "{volume["name"]}" : hostPath {path} does not exist'
        )
    return str(path)


def set_up(context: PodContext, host: VolumeHost, pod_dir: Path) -> dict[str, str]:
    """Every volume of the pod on the host: volume name → host path. Raises VolumeError (FailedMount)."""
    spec = context.pod.get("spec") or {}
    account = str(spec.get("serviceAccountName") or "default")
    namespace = str(context.pod["metadata"].get("namespace", ""))
    found: dict[str, str] = {}
    for volume in spec.get("volumes") or []:
        name = str(volume.get("name", ""))
        target = pod_dir / "volumes" / name
        try:
            if "hostPath" in volume:
                found[name] = _host_path(volume, host)
                continue
            if "persistentVolumeClaim" in volume:
                claim = str(volume["persistentVolumeClaim"].get("claimName", ""))
                directory = host.claim_directory(namespace, claim)
                if directory is None:
                    raise VolumeError(f'persistentvolumeclaim "{claim}" is not bound')
                found[name] = directory
                continue
            target.mkdir(parents=True, exist_ok=True)
            if "configMap" in volume:
                reference = volume["configMap"]
                _keys(
                    "ConfigMap",
                    host.sources.config_map(str(reference.get("name", ""))),
                    reference,
                    name,
                    target,
                )
            elif "secret" in volume:
                reference = volume["secret"]
                secret = host.sources.secret(str(reference.get("secretName", "")))
                _keys("Secret", secret, reference, name, target)
            elif "downwardAPI" in volume:
                items = volume["downwardAPI"].get("items") or []
                _downward(items, context, name, target, int(volume["downwardAPI"].get("defaultMode", 0o644)))
            elif "projected" in volume:
                _projected(volume, context, host, target, account)
            elif "emptyDir" not in volume:
                kinds = sorted(set(volume) - {"name"})
                raise VolumeError(f'volume "{name}": {kinds[0] if kinds else "no"} volumes are not supported')
        except ConfigError as error:
            raise VolumeError(f'MountVolume.SetUp failed for volume "{name}" : {error}') from None
        found[name] = str(target)
    if spec.get("automountServiceAccountToken", True) is not False and not _mounts_service_account(spec):
        target = pod_dir / "volumes" / "kube-api-access"
        token = host.issue_token(namespace, account, (), 3607, context.pod)
        _write(target / "token", token, 0o644)
        _write(target / "ca.crt", host.ca_certificate, 0o644)
        _write(target / "namespace", namespace, 0o644)
        found[""] = str(target)
    return found


def _mounts_service_account(spec: Mapping[str, Any]) -> bool:
    return any(
        mount.get("mountPath") == SERVICE_ACCOUNT_DIR
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or [])
        for mount in container.get("volumeMounts") or []
    )


def container_mounts(container: Mapping[str, Any], volumes: Mapping[str, str]) -> list[Mount]:
    """The container's volumeMounts as sandbox mounts (a subPath is made in its volume, as kubelets do)."""
    mounts: list[Mount] = []
    for mount in container.get("volumeMounts") or []:
        source = volumes.get(str(mount.get("name", "")))
        if source is None:
            raise VolumeError(f"volumeMount {mount.get('name')!r} names no volume of the pod")
        sub_path = str(mount.get("subPath") or "")
        if sub_path:
            path = Path(source) / _relative(sub_path, str(mount.get("name")))
            if not path.exists():
                path.mkdir(parents=True, exist_ok=True)
            source = str(path)
        mounts.append(Mount(source, str(mount.get("mountPath", "")), bool(mount.get("readOnly"))))
    if "" in volumes and not any(m.container_path == SERVICE_ACCOUNT_DIR for m in mounts):
        mounts.append(Mount(volumes[""], SERVICE_ACCOUNT_DIR, True))
    return mounts


def pod_directory(root: Path, uid: str) -> Path:
    directory = root / "pods" / uid
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    return directory
